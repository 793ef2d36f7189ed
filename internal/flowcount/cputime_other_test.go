//go:build !linux

package flowcount

import "time"

// threadCPU is 0 where the thread's CPU clock is not wired up.
func threadCPU() time.Duration { return 0 }
