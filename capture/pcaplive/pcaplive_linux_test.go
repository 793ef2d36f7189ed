//go:build pcap && linux

package pcaplive_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/capture/capturetest"
	"github.com/flowmon/flowmon/capture/pcaplive"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/gen/gentest"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// openPcapIn opens a libpcap capture in n's namespace and closes it when
// t ends.
func openPcapIn(t testing.TB, n *netnstest.Net, iface, filter string, timeout time.Duration) *pcaplive.Handle {
	t.Helper()
	var s *pcaplive.Handle
	if err := n.Do(func() error {
		var err error
		s, err = pcaplive.Open(iface, 0, false, filter, timeout)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readPcap reads s while play runs and until it has read every packet
// libpcap counted.
func readPcap(t testing.TB, s *pcaplive.Handle, play func() error) *capturetest.Tally {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- play() }()
	ta := capturetest.NewTally()
	var p capture.Packet
	played := false
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := s.Next(&p)
		if err == nil {
			ta.Add(&p)
			continue
		}
		if !errors.Is(err, capture.ErrNoPacket) {
			t.Fatal(err)
		}
		if !played {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				played = true
			default:
				continue
			}
		}
		ks, err := s.KernelStats()
		if err != nil {
			t.Fatal(err)
		}
		if s.Stats().Packets >= ks.Packets-ks.Drops {
			ta.Stats = *s.Stats()
			return ta
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %d packets, libpcap counted %+v", s.Stats().Packets, ks)
		}
	}
}

// TestPcapLiveVethMatchesFile plays a trace into a veth pair and checks
// that libpcap's capture is what reading the file gives.
func TestPcapLiveVethMatchesFile(t *testing.T) {
	path := gentest.Trace(t, 500, gen.LinkEthernet)
	want := capturetest.FileTally(t, path)
	n := netnstest.New(t)
	s := openPcapIn(t, n, n.B, "", 0)
	if s.LinkType() != capture.LinkEthernet {
		t.Fatalf("link type %d", s.LinkType())
	}
	var st netnstest.SendStats
	got := readPcap(t, s, func() (err error) {
		st, err = n.Send(n.A, path, netnstest.SendOptions{Rate: 200000})
		return err
	})
	ks, err := s.KernelStats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %v; libpcap %+v", st, ks)
	if ks.Drops != 0 || ks.Packets != st.Packets {
		t.Errorf("libpcap counts %+v, want %d packets and no drop", ks, st.Packets)
	}
	capturetest.Compare(t, got, want)
}

// TestPcapLiveFilter checks a tcpdump expression on the handle, and that
// CompileBPF gives the program tcpdump prints and one the AF_PACKET
// source applies.
func TestPcapLiveFilter(t *testing.T) {
	prog, err := pcaplive.CompileBPF("tcp", 1, 262144)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := capture.ParseBPF(capturetest.BPFTCP)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) != len(ref) {
		t.Fatalf("CompileBPF(tcp) = %v, tcpdump -ddd: %v", prog, ref)
	}
	for i := range prog {
		if prog[i] != ref[i] {
			t.Fatalf("CompileBPF(tcp)[%d] = %v, tcpdump -ddd: %v", i, prog[i], ref[i])
		}
	}
	for _, bad := range []string{"tcp and", "port 99999"} {
		if _, err := pcaplive.CompileBPF(bad, 1, 262144); err == nil || !errors.Is(err, capture.ErrBPF) {
			t.Errorf("CompileBPF(%q): %v, want an ErrBPF", bad, err)
		}
	}

	path := gentest.Trace(t, 300, gen.LinkEthernet)
	want := capturetest.FileTally(t, path).Stats.TransportCounts()
	n := netnstest.New(t)
	s := openPcapIn(t, n, n.B, "udp", 0)
	udp, err := pcaplive.CompileBPF("udp", int(capture.LinkEthernet), 262144)
	if err != nil {
		t.Fatal(err)
	}
	var a []*afpacket.Socket
	if err := n.Do(func() error {
		var err error
		a, err = afpacket.Open(afpacket.Config{Iface: n.B, BlockSize: 1 << 20, BlockCount: 64, BlockTimeout: 100 * time.Millisecond, Filter: udp}, 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer a[0].Close()
	var viaAF *capturetest.Tally
	got := readPcap(t, s, func() error {
		viaAF = capturetest.Play(t, a, func() error {
			_, err := n.Send(n.A, path, netnstest.SendOptions{})
			return err
		})[0]
		return nil
	})
	for name, ta := range map[string]*capturetest.Tally{"pcap": got, "afpacket": viaAF} {
		tr := ta.Stats.TransportCounts()
		if tr["udp"] != want["udp"] || len(tr) != 1 {
			t.Errorf("%s with filter udp captured %v, want the file's %d UDP packets only", name, tr, want["udp"])
		}
	}
}

// TestPcapLiveNoAllocs fills libpcap's buffer and checks that Next
// allocates nothing per packet.
func TestPcapLiveNoAllocs(t *testing.T) {
	path := gentest.Trace(t, 300, gen.LinkEthernet)
	n := netnstest.New(t)
	s := openPcapIn(t, n, n.B, "", 0)
	st, err := n.Send(n.A, path, netnstest.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	capturetest.CheckNextNoAllocs(t, s, int(st.Packets))
}

// TestPcapLiveClose: Next returns ErrNoPacket while idle, io.EOF once
// Close is called from another goroutine.
func TestPcapLiveClose(t *testing.T) {
	n := netnstest.New(t)
	s := openPcapIn(t, n, n.B, "", 20*time.Millisecond)
	var p capture.Packet
	if err := s.Next(&p); !errors.Is(err, capture.ErrNoPacket) {
		t.Fatalf("idle Next: %v, want ErrNoPacket", err)
	}
	done := make(chan error)
	go func() {
		for {
			if err := s.Next(&p); !errors.Is(err, capture.ErrNoPacket) {
				done <- err
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != io.EOF {
			t.Fatalf("Next after Close: %v, want io.EOF", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Next still waiting 3s after Close")
	}
	if _, err := s.KernelStats(); err != nil {
		t.Errorf("KernelStats after Close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		iface   string
		snaplen int
		timeout time.Duration
		want    string
	}{
		{"", 0, 0, "iface: no interface named"},
		{"lo", 10, 0, "snaplen 10 must be from 96 to 262144"},
		{"lo", 0, time.Hour, "timeout 1h0m0s must be from 1ms to 10s"},
		{"fm-none", 0, 0, "fm-none"},
	} {
		s, err := pcaplive.Open(tc.iface, tc.snaplen, false, "", tc.timeout)
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q, %d, %v): %v, want %q", tc.iface, tc.snaplen, tc.timeout, err, tc.want)
		}
	}
}
