package config

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flowmon/flowmon/internal/yamlnode"
)

// The decoders read one scalar into a field of its kind; they return
// what is wrong with the value's form, or "". Ranges are checked after,
// on the whole configuration (check.go).

var (
	durationType = reflect.TypeFor[time.Duration]()
	stringsType  = reflect.TypeFor[[]string]()
)

// decode sets the field f (addressable) from v, as its type and size
// say.
func decode(f reflect.Value, v *yaml.Node, size bool) string {
	bad := func() string { return "want " + want(f.Type(), size) + ", got " + yamlnode.Describe(v) }
	if f.Type() == stringsType {
		return decodeStrings(f, v)
	}
	if v.Kind != yaml.ScalarNode {
		return bad()
	}
	switch {
	case f.Type() == durationType:
		d, msg := duration(v)
		if msg == "" {
			f.SetInt(int64(d))
		}
		return msg
	case f.Kind() == reflect.String:
		if v.Tag == "!!null" {
			return bad()
		}
		f.SetString(v.Value)
	case f.Kind() == reflect.Bool:
		var b bool
		if v.Tag != "!!bool" || v.Decode(&b) != nil {
			return bad()
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n, msg := integer(v, size)
		if msg != "" {
			return msg
		}
		if f.Kind() == reflect.Int && (n < math.MinInt || n > math.MaxInt) {
			return fmt.Sprintf("%s is out of range", v.Value)
		}
		f.SetInt(n)
	case f.Kind() == reflect.Float64:
		var x float64
		if (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&x) != nil {
			return bad()
		}
		f.SetFloat(x)
	default:
		panic(fmt.Sprintf("config: no decoder for a field of type %v", f.Type()))
	}
	return ""
}

// decodeStrings reads a list of strings (null: none), or one string of
// comma-separated items (a flag's value).
func decodeStrings(f reflect.Value, v *yaml.Node) string {
	var out []string
	switch {
	case v.Tag == "!!null":
	case v.Kind == yaml.ScalarNode && v.Tag == "!!str":
		for _, s := range strings.Split(v.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case v.Kind == yaml.SequenceNode:
		for _, e := range v.Content {
			e = yamlnode.Resolve(e)
			if e.Kind != yaml.ScalarNode || e.Tag != "!!str" {
				return "want a list of strings, got an element that is " + yamlnode.Describe(e)
			}
			out = append(out, e.Value)
		}
	default:
		return "want a list of strings, got " + yamlnode.Describe(v)
	}
	f.Set(reflect.ValueOf(out))
	return ""
}

// want names what a field of type t takes, for "want X, got Y".
func want(t reflect.Type, size bool) string {
	switch {
	case t == durationType:
		return "a duration such as 10ms or 1m30s"
	case size:
		return "a size such as 1MiB or a number of bytes"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	}
	return t.String()
}

// integer reads an integer, or with size a byte count with a unit.
func integer(v *yaml.Node, size bool) (int64, string) {
	var n int64
	if v.Tag == "!!int" {
		if v.Decode(&n) != nil {
			return 0, fmt.Sprintf("%s is out of range", v.Value)
		}
		return n, ""
	}
	if !size || v.Tag != "!!str" {
		return 0, "want " + want(reflect.TypeFor[int](), size) + ", got " + yamlnode.Describe(v)
	}
	n, err := yamlnode.ParseSize(v.Value)
	if err != nil {
		return 0, err.Error()
	}
	return n, ""
}

// duration reads a Go duration ("10ms", "1m30s"); a plain 0 is 0.
func duration(v *yaml.Node) (time.Duration, string) {
	if v.Tag == "!!int" && v.Value == "0" {
		return 0, ""
	}
	if v.Tag != "!!str" {
		return 0, "want a duration such as 10ms or 1m30s, got " + yamlnode.Describe(v)
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		return 0, fmt.Sprintf("bad duration %q (want e.g. 10ms or 1m30s)", v.Value)
	}
	return d, ""
}

// formatDuration writes d as time.Duration does, without its zero
// minutes and seconds ("10m", not "10m0s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func durationOf(f reflect.Value) time.Duration { return time.Duration(f.Int()) }
