//go:build !linux

package kbf

import "time"

var start = time.Now()

// threadCPU falls back to wall-clock time where the thread clock is not
// wired up.
func threadCPU() time.Duration { return time.Since(start) }
