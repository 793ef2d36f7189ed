package capture

import (
	"fmt"
	"strconv"
	"time"

	"github.com/flowmon/flowmon/conferr"
)

// What the live sources' settings share: the bounds of a read timeout and of an interface's name, and sizes written as the
// agent's config file writes them.

// Bounds of a live source's read (or poll) timeout: AF_PACKET's block
// timeout, libpcap's read timeout, the eBPF rings' poll timeout.
const (
	MinReadTimeout = time.Millisecond
	MaxReadTimeout = 10 * time.Second
)

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
// *conferr.Error of key iface), nil when it can name an interface.
func CheckIface(iface string) error {
	switch {
	case iface == "":
		return &conferr.Error{Key: "iface", Msg: "no interface named"}
	case len(iface) > MaxIfaceName:
		return &conferr.Error{Key: "iface", Msg: fmt.Sprintf("%q is %d bytes, more than an interface name's %d", iface, len(iface), MaxIfaceName)}
	}
	return nil
}
