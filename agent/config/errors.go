package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every *Error: a configuration's content is
// wrong (not that its file could not be read).
var ErrInvalid = errors.New("invalid configuration")

// ErrNeedsRestart is wrapped by Reloadable's error: a setting changed
// that the running agent cannot take without a restart.
var ErrNeedsRestart = errors.New("needs a restart")

// An Error is one thing wrong in a configuration, and where: a file's
// line and column, or a flag.
type Error struct {
	File      string // "" for a flag (Set) or a Config checked by Validate
	Line, Col int    // from 1; 0 when unknown
	// Key is the setting as the file spells it ("afpacket.block-size"), or
	// the flag for Set's errors ("--workers"); "" for the file as a whole.
	Key string
	Msg string
}

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
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// A RestartError names the settings a reload changed that only a restart
// can apply.
type RestartError struct {
	Keys []string
}

func (e *RestartError) Error() string {
	them := "them"
	if len(e.Keys) == 1 {
		them = "it"
	}
	return fmt.Sprintf("%s changed: only a restart applies %s (the running configuration stays)", strings.Join(e.Keys, ", "), them)
}

// Unwrap returns ErrNeedsRestart.
func (e *RestartError) Unwrap() error { return ErrNeedsRestart }
