// Package snapshottest holds what the structures' state tests share: a
// realistic packet sequence to run through a structure before and after
// a snapshot.
package snapshottest

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/gen"
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
