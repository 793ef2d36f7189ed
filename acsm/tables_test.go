package acsm

import (
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// tableStepper steps flows over Tables as a program outside Go does: a
// value a flow, no aging.
type tableStepper struct {
	t      Tables
	values map[uint64]uint16
}

func (s *tableStepper) step(p *capture.Packet, flags capture.TCPFlags, data bool) (ev Event) {
	t := &s.t
	isSYN := flags&(fS|fA|fF|fR) == fS
	if v, ok := s.values[p.Hash]; ok && !(t.Info[v]&InfoClosed != 0 && isSYN) {
		isOrig := p.Reversed == (t.Info[v]&InfoOrigIsDst != 0)
		n := t.Next[int(v)*256+int(inputOf(isOrig, data, flags))]
		v = n &^ TransEnds
		s.values[p.Hash] = v
		return Event{Result: Found, State: t.Conn[v], OrigIsDst: t.Info[v]&InfoOrigIsDst != 0, Ended: n&TransEnds != 0}
	} else if ok {
		ev.Reused = true
	}
	flip := flipNew(p)
	origIsDst := p.Reversed != flip
	kind := kindOf(p.Key.Proto)
	rst := kind == kindTCP && !flip && isSYN
	v0 := t.Start[kind][b2i(origIsDst)][b2i(rst)]
	n := t.Next[int(v0)*256+int(inputOf(!flip, data, flags))]
	v := n &^ TransEnds
	s.values[p.Hash] = v
	ev.Result, ev.New, ev.State, ev.OrigIsDst = Absent, true, t.Conn[v], t.Info[v]&InfoOrigIsDst != 0
	ev.Ended = n&TransEnds != 0 || t.Info[v]&InfoTerminal != 0
	return ev
}

// TestTablesStepLikeTracker: stepping every real capture's packets over
// MachineTables gives, packet by packet, the exact backend's answers
// (state, orientation, new, ended, reused), for both machines.
func TestTablesStepLikeTracker(t *testing.T) {
	for _, mk := range []MachineKind{MachineZeek, MachineFlags} {
		packets := 0
		// One tracker and one stepper for all the captures: both see the
		// same packets in the same order, and making an exact backend for
		// each capture would take most of the test's time.
		tr, err := New(Config{Backend: BackendExact, Machine: mk, Capacity: 1 << 18, KeepEnded: true})
		if err != nil {
			t.Fatal(err)
		}
		st := tableStepper{t: MachineTables(mk), values: map[uint64]uint16{}}
		for _, c := range sharedpcaps.Captures(t) {
			if strings.HasPrefix(c.Name, "derived-caida-style/") {
				continue // large; the others cover the machine
			}
			r, err := capture.Open(c.Path)
			if err != nil {
				continue // a capture the reader refuses is another test's
			}
			var p capture.Packet
			for {
				err := r.Next(&p)
				if err != nil {
					break // io.EOF, or damage past which the reader stops
				}
				if p.Fragment == capture.LaterFragment || (p.Key.Proto == capture.ProtoTCP && !p.HasTCP) {
					continue
				}
				// Aging is not under test: one time for every packet, as
				// some captures' clocks jump back and forth.
				p.Timestamp = time.Unix(1e9, 0)
				var want Event
				tr.ObserveInto(&p, &want)
				var flags capture.TCPFlags
				if p.Key.Proto == capture.ProtoTCP {
					flags = p.Flags
				}
				got := st.step(&p, flags, p.PayloadLen > 0)
				packets++
				if got.New != want.New || got.State != want.State || got.OrigIsDst != want.OrigIsDst ||
					got.Ended != want.Ended || got.Reused != want.Reused {
					t.Fatalf("%s, %v: packet of %v: tables give new %v state %v origIsDst %v ended %v reused %v; tracker new %v state %v origIsDst %v ended %v reused %v",
						mk, c.Name, p.Key, got.New, got.State, got.OrigIsDst, got.Ended, got.Reused,
						want.New, want.State, want.OrigIsDst, want.Ended, want.Reused)
				}
			}
			r.Close()
		}
		t.Logf("%s: %d packets agree", mk, packets)
	}
}
