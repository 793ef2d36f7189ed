package capture

import (
	"fmt"
	"strconv"
	"time"
)

// What the live sources' settings share: their errors, the bounds of a
// read timeout and of an interface's name, and sizes written as the
// agent's config file writes them.

// Bounds of a live source's read (or poll) timeout: AF_PACKET's block
// timeout, libpcap's read timeout, the eBPF rings' poll timeout.
const (
	MinReadTimeout = time.Millisecond
	MaxReadTimeout = 10 * time.Second
)

// A SettingError is one setting of a live source's configuration
// (afpacket.Config, source.Config of the eBPF capture) that its Validate
// refuses.
type SettingError struct {
	// Key is the setting as the agent's config file names it in the
	// source's section (afpacket: block-size, block-count, frame-size,
	// block-timeout, fanout or filter; ebpf: ring-size, ...); iface is
	// the interface (the file's top-level interface).
	Key string
	// Msg is what is wrong: the value and the rule, sizes written as
	// FormatSize does ("3000 must be a power of two from 4KiB to 256MiB
	// (a whole number of 4096-byte pages)").
	Msg string
	Err error // the cause, if any: ErrBPF for a filter
}

func (e *SettingError) Error() string { return e.Key + ": " + e.Msg }

// Unwrap returns the cause, nil but for a filter.
func (e *SettingError) Unwrap() error { return e.Err }

// FormatSize writes a byte count in the largest binary unit that holds
// it whole ("1MiB", "4KiB"), in bytes otherwise ("3000"), as the agent's
// config file writes sizes and reads them back.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// CheckIface returns a live source's iface setting's error (a
// *SettingError of key iface), nil when it can name an interface.
func CheckIface(iface string) error {
	switch {
	case iface == "":
		return &SettingError{Key: "iface", Msg: "no interface named"}
	case len(iface) > MaxIfaceName:
		return &SettingError{Key: "iface", Msg: fmt.Sprintf("%q is %d bytes, more than an interface name's %d", iface, len(iface), MaxIfaceName)}
	}
	return nil
}
