//go:build !linux

package capture

// SockFilter is one classic BPF instruction, laid out as Linux's struct
// sock_filter (golang.org/x/sys/unix.SockFilter on Linux).
type SockFilter struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}
