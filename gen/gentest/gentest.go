// Package gentest writes generated traces for tests: a file of normal
// flows to read, or to play into a network interface and capture. It is
// imported by tests only.
package gentest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowmon/flowmon/gen"
)

// Trace writes a generated trace of normal client/server flows (TCP, UDP
// and ICMP, IPv4 and IPv6, full-size packets: no snaplen) of the given
// link type to a temporary file and returns its path.
func Trace(t testing.TB, flows int, link gen.LinkType) string {
	t.Helper()
	opt := gen.DefaultOptions()
	opt.Flows, opt.Duration, opt.Link = flows, 5*time.Second, link
	opt.Mix = gen.Mix{Normal: 1}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("trace-%d.pcap", flows))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(f, nil, opt); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}
