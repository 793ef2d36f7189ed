//go:build linux

package source_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/bpf/source"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/gen/gentest"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// TestEBPFTCClsact: the TC attach that kernels without TCX get, forced on
// a veth end in a namespace of the test's own: a clsact qdisc with the
// program's filters at ingress and egress, which deliver every packet sent
// into the pair, and Close deletes the filters and the qdisc it made.
func TestEBPFTCClsact(t *testing.T) {
	bpftest.Require(t)
	n := netnstest.New(t)
	trace := gentest.Trace(t, 200, gen.LinkEthernet)
	var srcs []*source.Ring
	if err := n.Do(func() (err error) {
		srcs, err = source.Open(source.Config{Iface: n.B, Hook: source.HookTC, TCMode: source.TCClsact}, 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s := srcs[0]
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	if got := s.Attached(); got != source.TCClsact {
		t.Errorf("attached at %q, want %q", got, source.TCClsact)
	}
	tc := func(args ...string) string {
		out, err := n.Cmd("tc", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tc %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, hook := range []string{"ingress", "egress"} {
		if out := tc("filter", "show", "dev", n.B, hook); !strings.Contains(out, "flowmon_tc_"+hook) || !strings.Contains(out, "direct-action") {
			t.Errorf("tc filter show dev %s %s has no flowmon direct-action filter:\n%s", n.B, hook, out)
		}
	}
	st, err := n.Send(n.A, trace, netnstest.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var p capture.Packet
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Packets < st.Packets && time.Now().Before(deadline) {
		if err := s.Next(&p); err != nil && !errors.Is(err, capture.ErrNoPacket) {
			t.Fatal(err)
		}
	}
	c, err := s.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Packets; got != st.Packets || c.Seen != st.Packets || c.Lost != 0 {
		t.Errorf("sent %d packets: read %d records; the program saw %d, lost %d", st.Packets, got, c.Seen, c.Lost)
	}
	closed = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, hook := range []string{"ingress", "egress"} {
		if out := tc("filter", "show", "dev", n.B, hook); strings.TrimSpace(out) != "" {
			t.Errorf("after Close, tc filter show dev %s %s:\n%s", n.B, hook, out)
		}
	}
	if out := tc("qdisc", "show", "dev", n.B); strings.Contains(out, "clsact") {
		t.Errorf("after Close, the clsact qdisc the attach made is still there:\n%s", out)
	}
}

// TestEBPFTCClsactSharesQdisc: on an interface that has a clsact qdisc
// already, the attach adds its filters to it and leaves it, with the
// other filters, when it closes.
func TestEBPFTCClsactSharesQdisc(t *testing.T) {
	bpftest.Require(t)
	n := netnstest.New(t)
	tc := func(args ...string) string {
		out, err := n.Cmd("tc", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tc %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tc("qdisc", "add", "dev", n.B, "clsact")
	tc("filter", "add", "dev", n.B, "ingress", "prio", "7", "u32", "match", "u32", "0", "0")
	var srcs []*source.Ring
	if err := n.Do(func() (err error) {
		srcs, err = source.Open(source.Config{Iface: n.B, Hook: source.HookTC, TCMode: source.TCClsact}, 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if out := tc("filter", "show", "dev", n.B, "ingress"); !strings.Contains(out, "flowmon_tc_ingress") || !strings.Contains(out, "u32") {
		t.Errorf("tc filter show dev %s ingress, want flowmon's filter and the u32:\n%s", n.B, out)
	}
	if err := srcs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if out := tc("filter", "show", "dev", n.B, "ingress"); strings.Contains(out, "flowmon") || !strings.Contains(out, "u32") {
		t.Errorf("after Close, tc filter show dev %s ingress, want the u32 alone:\n%s", n.B, out)
	}
	if out := tc("qdisc", "show", "dev", n.B); !strings.Contains(out, "clsact") {
		t.Errorf("after Close, the clsact qdisc that was there before is gone:\n%s", out)
	}
}
