package yamlnode

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestFields(t *testing.T) {
	type s struct {
		A      string        `yaml:"a-key"`
		B      int           `yaml:"b,omitempty"`
		Skip   bool          `yaml:"-"`
		NoTag  int           // no tag: no key
		hidden int           `yaml:"hidden"`
		D      time.Duration `yaml:"d"`
	}
	want := []Field{{"a-key", 0}, {"b", 1}, {"d", 5}}
	if got := Fields(reflect.TypeFor[s]()); !slices.Equal(got, want) {
		t.Errorf("Fields: %v, want %v", got, want)
	}
	v := s{A: "x", B: 3, D: time.Second, hidden: 1}
	rv := reflect.ValueOf(v)
	for key, want := range map[string]any{"a-key": "x", "b": 3, "d": time.Second} {
		if f := FieldByKey(rv, key); !f.IsValid() || f.Interface() != want {
			t.Errorf("FieldByKey(%q) = %v, want %v", key, f, want)
		}
	}
	for _, key := range []string{"A", "Skip", "NoTag", "notag", "hidden", "-", ""} {
		if f := FieldByKey(rv, key); f.IsValid() {
			t.Errorf("FieldByKey(%q) = %v, want none", key, f)
		}
	}
}
