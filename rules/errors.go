package rules

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every error a rules file's content causes.
var ErrInvalid = errors.New("invalid rules")

// Error is one thing wrong in a rules file, where it is.
type Error struct {
	File      string
	Line, Col int
	Rule      string // the rule's alert name, "" outside a rule
	Msg       string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Col)
	if e.Rule != "" {
		fmt.Fprintf(&b, "rule %q: ", e.Rule)
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return ErrInvalid }

// Errors is every error of a file, in the order of their positions.
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
