//go:build !linux

package cputime

import "time"

// Thread is 0 where the thread's CPU clock is not wired up.
func Thread() time.Duration { return 0 }
