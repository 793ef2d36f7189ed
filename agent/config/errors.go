package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flowmon/flowmon/conferr"
)

// ErrInvalid is wrapped by every *conferr.Error this package returns: a
// configuration's content is wrong (not that its file could not be read).
var ErrInvalid = errors.New("invalid configuration")

// ErrNeedsRestart is wrapped by Reloadable's error: a setting changed
// that the running agent cannot take without a restart.
var ErrNeedsRestart = errors.New("needs a restart")

// invalid is an error of key that has no position: a flag's (Set), or a
// Config's checked in code (Validate, CheckHost).
func invalid(key, msg string) *conferr.Error {
	return &conferr.Error{Key: key, Msg: msg, Err: ErrInvalid}
}

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
