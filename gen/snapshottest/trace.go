// Package snapshottest holds what the structures' state tests share: a
// realistic packet sequence to run through a structure before and after
// a snapshot, and the checks of a restore a fuzzer drives.
package snapshottest

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// Trace returns the decoded packets of a `flowmon gen` trace: flows
// normal TCP, UDP and ICMP flows with every conn_state outcome, a SYN
// flood and port scans (no heavy hitters, to keep it small), over
// duration, with SPAN duplicates at dupRate. Payloads are copied, so the
// packets stay valid. 2000 flows over 20 s give about 30,000 packets.
// A trace is made once per test binary and options, and shared: callers
// must not change its packets.
func Trace(t testing.TB, flows int, duration time.Duration, dupRate float64, seed uint64) []capture.Packet {
	t.Helper()
	k := traceKey{flows, duration, dupRate, seed}
	mu.Lock()
	defer mu.Unlock()
	if tr, ok := traces[k]; ok {
		return tr
	}
	tr := makeTrace(t, flows, duration, dupRate, seed)
	traces[k] = tr
	return tr
}

type traceKey struct {
	flows    int
	duration time.Duration
	dupRate  float64
	seed     uint64
}

var (
	mu     sync.Mutex
	traces = map[traceKey][]capture.Packet{}
)

func makeTrace(t testing.TB, flows int, duration time.Duration, dupRate float64, seed uint64) []capture.Packet {
	t.Helper()
	o := gen.DefaultOptions()
	o.Flows, o.Duration, o.Seed, o.DupRate = flows, duration, seed, dupRate
	o.Mix = gen.Mix{Normal: 0.96, SYNFlood: 0.02, Scan: 0.02}
	g, err := gen.New(o)
	if err != nil {
		t.Fatal(err)
	}
	var out []capture.Packet
	var gp gen.Packet
	for g.Next(&gp) {
		var p capture.Packet
		if capture.Decode(&p, uint16(o.Link), gp.Data, gp.Length, gp.Timestamp) != capture.ReasonNone {
			continue
		}
		p.Payload = bytes.Clone(p.Payload)
		out = append(out, p)
	}
	if len(out) == 0 {
		t.Fatal("the generator wrote no flow packets")
	}
	return out
}

// State is a structure whose state goes into a snapshot.
type State interface {
	AppendState(b []byte) ([]byte, error)
	RestoreState(b []byte) error
}

// CheckRestore restores b into s and checks what every state's restore
// promises a fuzzer: a refusal wraps one of snapshot's sentinels and
// leaves s as it was; an accepted state encodes back to itself. It
// reports whether b was accepted.
func CheckRestore(t *testing.T, s State, b []byte) bool {
	t.Helper()
	before, _ := s.AppendState(nil)
	if err := s.RestoreState(b); err != nil {
		if !errors.Is(err, snapshot.ErrDamaged) && !errors.Is(err, snapshot.ErrIncompatible) && !errors.Is(err, snapshot.ErrVersion) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		if after, _ := s.AppendState(nil); !bytes.Equal(after, before) {
			t.Fatal("a refused restore changed the state")
		}
		return false
	}
	if again, _ := s.AppendState(nil); !bytes.Equal(again, b) {
		t.Fatal("an accepted state does not encode back to itself")
	}
	return true
}
