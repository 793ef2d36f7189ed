package yamlnode

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// TestSyntaxError: the line SyntaxError names for yaml.v3's own errors is
// the line that broke, or the first of the block it broke in, counted
// from 1, for the parser's problems and the scanner's alike.
func TestSyntaxError(t *testing.T) {
	for _, c := range []struct {
		src  string
		line int
		msg  string
	}{
		{"interface: eth0\nafpacket:\n  block-size: 1MiB\n block-count: 64\n", 4, "did not find expected key"},
		{"a: 1\nb: [1, 2\nc: 3\n", 2, "did not find expected ',' or ']'"},
		{"a: 1\nb: {x: 1\nc: 3\n", 2, "did not find expected ',' or '}'"},
		{"a: 1\nb: !foo!bar x\n", 2, "found undefined tag handle"},
		{"k: [\n", 1, "did not find expected node content"},
		{"a:\n  b: 1\nd: 3\n e: 4\n", 4, "mapping values are not allowed in this context"},
		{"a: 1\nb: \"x\nc: 2\n", 2, "found unexpected end of stream"},
		{"a: 1\n\tb: 2\n", 2, "found a tab character that violates indentation"},
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(c.src), &n)
		if err == nil {
			t.Fatalf("%q parsed", c.src)
		}
		line, msg := SyntaxError(err, Lines([]byte(c.src)))
		if line != c.line || msg != c.msg {
			t.Errorf("%q: line %d %q, want line %d %q (yaml.v3: %v)", c.src, line, msg, c.line, c.msg, err)
		}
	}
}
