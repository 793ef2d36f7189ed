package snapshot

import (
	"errors"
	"fmt"
)

// Reason says why a snapshot was refused.
type Reason uint8

// Reasons for refusing a snapshot.
const (
	// Missing: there is no snapshot file (a first start, or the previous
	// run did not stop cleanly).
	Missing Reason = iota + 1
	// Damaged: the file is not a whole snapshot (bad magic, truncated,
	// checksum mismatch, inconsistent lengths), or could not be read.
	Damaged
	// Version: the file is in another format version.
	Version
	// Incompatible: the snapshot was taken with other settings.
	Incompatible
	// Stale: the snapshot is older than the caller allows.
	Stale
)

var reasonNames = [...]string{"", "missing", "damaged", "version", "incompatible", "stale"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) && r != 0 {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Sentinel errors, one per Reason: an *Error is errors.Is its reason's
// sentinel, and the structures' RestoreState errors wrap ErrDamaged or
// ErrIncompatible, so a caller tells the cases apart the same way for the
// file and for a section.
var (
	ErrMissing      = errors.New("snapshot missing")
	ErrDamaged      = errors.New("snapshot damaged")
	ErrVersion      = errors.New("snapshot format version differs")
	ErrIncompatible = errors.New("snapshot incompatible with the configuration")
	ErrStale        = errors.New("snapshot stale")
)

var sentinels = [...]error{nil, ErrMissing, ErrDamaged, ErrVersion, ErrIncompatible, ErrStale}

// Error is why Read refused a snapshot. Msg is written for an operator:
// the file's name and what is wrong with it.
type Error struct {
	Path   string
	Reason Reason
	Msg    string // what is wrong, without the path
	Err    error  // the underlying error, if any (an *fs.PathError, say)
}

func (e *Error) Error() string { return "snapshot " + e.Path + ": " + e.Msg }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's reason.
func (e *Error) Is(target error) bool {
	return int(e.Reason) < len(sentinels) && e.Reason != 0 && target == sentinels[e.Reason]
}

func refuse(path string, r Reason, err error, format string, a ...any) *Error {
	return &Error{Path: path, Reason: r, Msg: fmt.Sprintf(format, a...), Err: err}
}
