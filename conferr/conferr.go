// Package conferr holds the one error flowmon's configuration reports: a
// thing wrong in a setting, and where. The agent's config file, the rules
// files and the alert sinks files name every error
// file:line:col: what it belongs to: key: what is wrong, and all of a
// file's errors come at once, in the file's order (as Prometheus's
// rulefmt does). A setting checked in code (a capture's Validate, a flag)
// has no position, and its error is the same type with the position left
// out, so that a caller who knows where the setting came from fills it
// in.
package conferr

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// An Error is one thing wrong in a configuration, and where.
type Error struct {
	File string // "" for a setting not read from a file: a flag, a struct checked in code
	// Line and Col are the position in File, from 1; 0 when unknown (yaml.v3
	// gives a syntax error's line only).
	Line, Col int
	// In is what the key belongs to, as the message names it: `rule
	// "syn-flood"`, `sink webhook`; "" for the file itself.
	In string
	// Key is the setting as its file spells it ("afpacket.block-size"), or
	// a flag ("--workers"); "" for no one key.
	Key string
	Msg string // what is wrong; "" to say Err's message
	// Err is what Unwrap returns: the cause, or the sentinel of the package
	// whose configuration it is (config.ErrInvalid, rules.ErrInvalid).
	Err error
}

// Error spells e "file:line:col: in: key: msg", leaving out what e lacks.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Col > 0 {
				fmt.Fprintf(&b, ":%d", e.Col)
			}
		}
		b.WriteString(": ")
	}
	for _, s := range []string{e.In, e.Key} {
		if s != "" {
			b.WriteString(s)
			b.WriteString(": ")
		}
	}
	if e.Msg == "" && e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(e.Msg)
	}
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Errors is every error of a configuration, in the order of their
// positions. errors.Is and errors.As look into each.
type Errors []*Error

// Error writes one error a line.
func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap returns the errors.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Join orders errs by their position (line, then column; those without
// one first, as they came) and returns them as Errors, or nil if there
// are none.
func Join(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return Errors(errs)
}
