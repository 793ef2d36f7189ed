package yamlnode

import (
	"reflect"
	"strings"
)

// A Field is a struct field a YAML key names: the key, from the field's
// yaml tag, and the field's index in its struct.
type Field struct {
	Key   string
	Index int
}

// Fields are the fields of the struct type t that YAML keys name, in
// their order: each key is the name in the field's yaml tag, before its
// options. A field without a name there, or tagged "-", is left out:
// yaml.v3 would name it after the field, but a setting spells its key.
func Fields(t reflect.Type) []Field {
	var fs []Field
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		fs = append(fs, Field{key, i})
	}
	return fs
}

// FieldByKey is the field of the struct v that the YAML key names (as
// Fields names them), or the zero Value if none does.
func FieldByKey(v reflect.Value, key string) reflect.Value {
	for _, f := range Fields(v.Type()) {
		if f.Key == key {
			return v.Field(f.Index)
		}
	}
	return reflect.Value{}
}
