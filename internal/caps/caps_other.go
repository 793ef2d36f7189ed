//go:build !linux

package caps

import "errors"

// Capability numbers, for callers that name them on every platform.
const (
	NetAdmin = 12
	NetRaw   = 13
	Perfmon  = 38
	BPF      = 39
)

// ErrAllThreads is never returned here.
var ErrAllThreads = errors.New("capabilities: cannot change every thread's in a cgo build")

// Limit does nothing outside Linux.
func Limit(keep ...int) error { return nil }

// KeepOnSetuid does nothing outside Linux.
func KeepOnSetuid() error { return nil }

// Drop does nothing outside Linux.
func Drop(keep ...int) error { return nil }
