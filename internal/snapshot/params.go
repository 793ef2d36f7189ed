package snapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Param is one named shape or configuration parameter. Values are
// compared as strings, so they are formatted canonically (FormatFloat
// with -1 precision round-trips a float64).
type Param struct {
	Name, Value string
}

// P builds a Param from an int, uint, float, bool, string or
// fmt.Stringer value, formatted canonically.
func P(name string, v any) Param {
	var s string
	switch x := v.(type) {
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	case uint:
		s = strconv.FormatUint(uint64(x), 10)
	case uint8:
		s = strconv.FormatUint(uint64(x), 10)
	case uint32:
		s = strconv.FormatUint(uint64(x), 10)
	case uint64:
		s = strconv.FormatUint(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	case string:
		s = x
	case fmt.Stringer:
		s = x.String()
	default:
		s = fmt.Sprint(x)
	}
	return Param{Name: name, Value: s}
}

// JoinParams is the canonical params string of a Header: one
// "name=value" per line, in the order given. Read compares params byte
// for byte and, when they differ, names the first parameter that does.
func JoinParams(ps ...Param) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Name)
		b.WriteByte('=')
		b.WriteString(p.Value)
		b.WriteByte('\n')
	}
	return b.String()
}

// DiffParams describes the first difference between the params string a
// snapshot was taken with (got) and the configured one (want), in an
// operator's words: "capacity is 65536 in the snapshot, 131072
// configured". Lines "name=value" are compared by name; anything else by
// line. It returns "" when they are equal.
func DiffParams(got, want string) string {
	if got == want {
		return ""
	}
	g, w := lines(got), lines(want)
	for i := range max(len(g), len(w)) {
		switch {
		case i >= len(g):
			return fmt.Sprintf("the snapshot lacks %s (configured)", w[i])
		case i >= len(w):
			return fmt.Sprintf("the snapshot has %s, not configured", g[i])
		case g[i] == w[i]:
			continue
		}
		an, av, aok := strings.Cut(g[i], "=")
		bn, bv, bok := strings.Cut(w[i], "=")
		if aok && bok && an == bn {
			an, av, bv = diffValue(an, av, bv)
			return fmt.Sprintf("%s is %s in the snapshot, %s configured", an, quoteEmpty(av), quoteEmpty(bv))
		}
		return fmt.Sprintf("line %d is %q in the snapshot, %q configured", i+1, g[i], w[i])
	}
	return "params differ" // only a trailing newline
}

// diffValue narrows a difference between two values printed with %+v
// ("{Backend:4 Capacity:65536 Timeouts:{New:1m0s ...}}") to the first
// field that differs, so that the message names it ("acsm.Capacity")
// instead of quoting both structs whole. Other values are returned as
// they are.
func diffValue(name, a, b string) (string, string, string) {
	fa, oka := structFields(a)
	fb, okb := structFields(b)
	if !oka || !okb || len(fa) != len(fb) {
		return name, a, b
	}
	for i := range fa {
		if fa[i] == fb[i] {
			continue
		}
		ka, va, _ := strings.Cut(fa[i], ":")
		kb, vb, _ := strings.Cut(fb[i], ":")
		if ka != kb {
			return name, a, b
		}
		return diffValue(name+"."+ka, va, vb)
	}
	return name, a, b
}

// structFields splits "{A:1 B:{C:2 D:3} E:[x y]}" into its top-level
// fields "A:1", "B:{C:2 D:3}", "E:[x y]".
func structFields(s string) ([]string, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	var out []string
	depth, start := 0, 1
	for i := 1; i < len(s)-1; i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ' ':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	out = append(out, s[start:len(s)-1])
	for _, f := range out {
		if !strings.Contains(f, ":") {
			return nil, false
		}
	}
	return out, true
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// Digest condenses words into a short hex string for a Param: a table
// too long to compare as text (a state machine's transitions), or the
// outputs of a hash function on fixed inputs, so that a snapshot taken by
// a build that hashes or numbers differently is refused instead of being
// read as garbage.
func Digest(words ...uint64) string {
	var b [8]byte
	c := crc32.New(castagnoli)
	for _, w := range words {
		binary.LittleEndian.PutUint64(b[:], w)
		c.Write(b[:])
	}
	return fmt.Sprintf("%08x", c.Sum32())
}
