package capture

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// ipTCP is `tcpdump -ddd 'ip and tcp'` for Ethernet (libpcap 1.10): the
// EtherType at offset 12 is IPv4 and the IP protocol at 23 is TCP.
const ipTCP = "6\n40 0 0 12\n21 0 3 2048\n48 0 0 23\n21 0 1 6\n6 0 0 262144\n6 0 0 0\n"

// filterExprs are tcpdump expressions whose programs the filter test
// runs: the EtherType, the IP protocol, ports through the IP header's
// length, VLAN tags, IPv6, networks and TCP flags.
var filterExprs = []string{"ip and tcp", "udp port 53", "ip6", "vlan", "tcp[tcpflags] & tcp-syn != 0",
	"net 10.0.0.0/8 or net 192.168.0.0/16", "not arp and not tcp"}

// TestFilterMatchesTcpdump compiles tcpdump expressions for each of a
// sample of the shared pcap captures (tcpdump -r FILE -ddd EXPR, for its
// link type), reads the capture with the program, and compares the
// frames kept with the frames tcpdump -r FILE EXPR prints; those left
// out are counted as filtered and nowhere else.
func TestFilterMatchesTcpdump(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump is not installed")
	}
	compared, kept := 0, uint64(0)
	for i, c := range sharedpcaps.Captures(t) {
		// One in eight of the pcap files (pcapng's interfaces may differ in
		// link type, for which one program cannot be compiled).
		if i%8 != 0 || c.Format == "pcapng" || c.Packets <= 0 || c.Packets > 20000 {
			continue
		}
		for _, expr := range filterExprs {
			prog, want, ok := tcpdumpFilter(t, c.Path, expr)
			if !ok {
				continue // no such field for this link type
			}
			flt, err := NewFilter(prog)
			if err != nil {
				t.Errorf("%s: %q: %v", c.Name, expr, err)
				continue
			}
			r, err := Open(c.Path)
			if err != nil {
				t.Fatal(err)
			}
			r.SetFilter(flt)
			var p Packet
			for {
				if err := r.Next(&p); err != nil {
					var re *ReadError
					if !errors.Is(err, io.EOF) && !errors.As(err, &re) {
						t.Fatalf("%s: %v", c.Name, err)
					}
					break
				}
			}
			r.Close()
			st := r.Stats()
			if st.Packets != want {
				t.Errorf("%s: %q kept %d frames (%d filtered); tcpdump: %d", c.Name, expr, st.Packets, st.Filtered, want)
			}
			compared++
			kept += st.Packets
		}
	}
	if compared < 100 || kept == 0 {
		t.Fatalf("compared only %d capture and expression pairs (%d frames kept)", compared, kept)
	}
	t.Logf("%d capture and expression pairs: %d frames kept, as tcpdump keeps them", compared, kept)
}

// tcpdumpFilter is tcpdump's program for expr on path's link type, and
// how many of path's frames tcpdump keeps with it; ok is false when
// tcpdump cannot compile expr for that link type.
func tcpdumpFilter(t *testing.T, path, expr string) (prog []SockFilter, kept uint64, ok bool) {
	t.Helper()
	out, err := exec.Command("tcpdump", "-r", path, "-ddd", expr).Output()
	if err != nil {
		return nil, 0, false
	}
	if prog, err = ParseBPF(string(out)); err != nil {
		t.Fatalf("tcpdump -ddd %q: %v", expr, err)
	}
	// The frames kept, written as a pcap and counted: what tcpdump cannot
	// read (a damaged end) it says on stderr, having written the frames
	// before it.
	out, _ = exec.Command("tcpdump", "-r", path, "-w", "-", expr).Output()
	r, err := NewReader(bytes.NewReader(out), "tcpdump's output", int64(len(out)))
	if err != nil {
		t.Fatalf("tcpdump -w - %q: %v", expr, err)
	}
	var p Packet
	for r.Next(&p) == nil {
	}
	return prog, r.Stats().Packets, true
}

// TestFilterRefusesKernelOnly: a program with a load only the kernel
// has (an ancillary field other than the length) is refused, not run
// as something else.
func TestFilterRefusesKernelOnly(t *testing.T) {
	// ld vlan_avail (SKF_AD_OFF + SKF_AD_VLAN_TAG_PRESENT); ret #0
	prog := []SockFilter{{Code: 0x20, K: 0xfffff000 + 48}, {Code: 0x06}}
	if _, err := NewFilter(prog); !errors.Is(err, ErrBPF) {
		t.Errorf("NewFilter of an ancillary load: %v, want ErrBPF", err)
	}
}

func TestFilterAllocatesNothing(t *testing.T) {
	prog, _ := ParseBPF(ipTCP)
	flt, err := NewFilter(prog)
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 60)
	frame[12], frame[13], frame[23] = 0x08, 0x00, 6
	if !flt.Keep(frame) || flt.Keep(frame[:20]) {
		t.Fatal("the program keeps the wrong frames")
	}
	if n := testing.AllocsPerRun(100, func() { flt.Keep(frame) }); n != 0 {
		t.Errorf("Keep allocates %v times a frame", n)
	}
}
