//go:build linux

package afpacket_test

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/capture/capturetest"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/gen/gentest"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// ipIn runs the ip command in n's namespace.
func ipIn(t testing.TB, n *netnstest.Net, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

// remakeVeth makes n's veth pair again, both ends up, after a test
// deleted it: the same names, new indexes.
func remakeVeth(t testing.TB, n *netnstest.Net) {
	t.Helper()
	ipIn(t, n, "link", "add", n.A, "type", "veth", "peer", "name", n.B)
	ipIn(t, n, "link", "set", n.A, "up")
	ipIn(t, n, "link", "set", n.B, "up")
}

// waitIfaceDown reads s until Next reports the interface down or gone,
// and fails t if it does not by the deadline.
func waitIfaceDown(t testing.TB, s capture.Source) {
	t.Helper()
	var p capture.Packet
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		err := s.Next(&p)
		if errors.Is(err, capture.ErrIfaceDown) {
			return
		}
		if err != nil && !errors.Is(err, capture.ErrNoPacket) {
			t.Fatalf("Next: %v, want an error wrapping ErrIfaceDown", err)
		}
	}
	t.Fatal("Next did not report the interface down within 10s")
}

// sendAndRead sends path into n.A and reads every socket until each has
// read all the kernel passed it, and returns the packets read by all,
// since they were opened.
func sendAndRead(t testing.TB, n *netnstest.Net, socks []*afpacket.Socket, path string) (sent, read uint64) {
	t.Helper()
	capturetest.Play(t, socks, func() error {
		st, err := n.Send(n.A, path, netnstest.SendOptions{})
		sent = st.Packets
		return err
	})
	for _, s := range socks {
		read += s.Stats().Packets
	}
	return sent, read
}

// TestAFPacketIfaceDownAndGone takes the interface of a two-socket
// fanout capture down and up, then deletes it and makes it again under
// the same name: down, each socket's Next reports ErrIfaceDown once and
// IfaceState says down; up again, the same sockets read what is sent;
// deleted, the state is gone and Reopen fails until the interface is
// back; then Reopen (the first socket's only once the second has let go
// of the old fanout group) reads the new interface, and the counts, the
// kernel's too, go on from where they were.
func TestAFPacketIfaceDownAndGone(t *testing.T) {
	path := gentest.Trace(t, 40, gen.LinkEthernet)
	n := netnstest.New(t)
	socks := openIn(t, n, ringFor(t, n.B, path), 2)
	want := func(st capture.IfaceState) {
		t.Helper()
		for i, s := range socks {
			if got := s.IfaceState(); got != st {
				t.Fatalf("socket %d: IfaceState %v, want %v", i, got, st)
			}
		}
	}
	want(capture.IfaceUp)
	sent, read := sendAndRead(t, n, socks, path)
	if read != sent || sent == 0 {
		t.Fatalf("read %d packets of %d sent", read, sent)
	}

	ipIn(t, n, "link", "set", n.B, "down")
	for _, s := range socks {
		waitIfaceDown(t, s)
	}
	want(capture.IfaceDown)
	ipIn(t, n, "link", "set", n.B, "up")
	want(capture.IfaceUp)
	s2, r2 := sendAndRead(t, n, socks, path)
	if r2 != read+s2 {
		t.Fatalf("up again: read %d packets in all, want %d", r2, read+s2)
	}

	ipIn(t, n, "link", "del", n.A) // and its peer, n.B
	for _, s := range socks {
		waitIfaceDown(t, s)
	}
	want(capture.IfaceGone)
	if err := socks[0].Reopen(); err == nil {
		t.Fatal("Reopen with no interface of the name: no error")
	}
	var before capture.KernelStats
	for _, s := range socks {
		ks, err := s.KernelStats()
		if err != nil {
			t.Fatal(err)
		}
		before.Add(ks)
	}
	remakeVeth(t, n)
	want(capture.IfaceGone) // a new index: the sockets are not on it
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < len(socks); {
		err := socks[i].Reopen()
		if err == nil {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket %d: Reopen: %v", i, err)
		}
		t.Logf("socket %d: %v", i, err)
		socks = append(socks[1:], socks[0]) // the other one first
	}
	want(capture.IfaceUp)
	s3, r3 := sendAndRead(t, n, socks, path)
	if r3 != r2+s3 {
		t.Fatalf("reopened: read %d packets in all, want %d", r3, r2+s3)
	}
	var after capture.KernelStats
	for i, s := range socks {
		ks, err := s.KernelStats()
		if err != nil {
			t.Fatal(err)
		}
		if s.Stats().Packets == r2 {
			t.Errorf("socket %d read nothing after the reopen", i)
		}
		after.Add(ks)
	}
	if after.Packets != before.Packets+s3 {
		t.Errorf("kernel packets %d after the reopen, want %d before + %d sent", after.Packets, before.Packets, s3)
	}
}
