//go:build linux

package capture

import "golang.org/x/sys/unix"

// SockFilter is one classic BPF instruction (struct sock_filter), as
// SO_ATTACH_FILTER takes it.
type SockFilter = unix.SockFilter
