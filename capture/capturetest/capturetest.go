// Package capturetest holds what the live sources' tests share: a tally
// of what a source read to compare with reading a capture file (a trace
// of gen/gentest played into a veth pair), reading live sources while a
// trace plays, and the allocation check of a live source's Next. It is
// imported by tests only.
package capturetest

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
)

// BPFTCP is `tcpdump -ddd -i lo tcp` (tcpdump 4.99, libpcap 1.10.3, an
// Ethernet link): IPv4 or IPv6 (also behind one IPv6 fragment header)
// with protocol 6 keeps 262144 bytes, anything else 0.
const BPFTCP = `12
40 0 0 12
21 0 2 2048
48 0 0 23
21 6 7 6
21 0 6 34525
48 0 0 20
21 3 0 6
21 0 3 44
48 0 0 54
21 0 1 6
6 0 0 262144
6 0 0 0
`

// Tally is what a source read: its Stats, and per flow key the packets
// each way.
type Tally struct {
	Stats capture.Stats
	Flows map[capture.Key]*[2]int // [forward, reversed]
}

// NewTally returns an empty tally.
func NewTally() *Tally { return &Tally{Flows: map[capture.Key]*[2]int{}} }

// Add counts p in its flow.
func (ta *Tally) Add(p *capture.Packet) {
	c := ta.Flows[p.Key]
	if c == nil {
		c = new([2]int)
		ta.Flows[p.Key] = c
	}
	if p.Reversed {
		c[1]++
	} else {
		c[0]++
	}
}

// Merge adds o's counts to ta's.
func (ta *Tally) Merge(o *Tally) {
	ta.Stats.Add(&o.Stats)
	for k, c := range o.Flows {
		d := ta.Flows[k]
		if d == nil {
			d = new([2]int)
			ta.Flows[k] = d
		}
		d[0] += c[0]
		d[1] += c[1]
	}
}

// FileTally reads the capture file at path.
func FileTally(t testing.TB, path string) *Tally {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ta := NewTally()
	var p capture.Packet
	for {
		err := r.Next(&p)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ta.Add(&p)
	}
	ta.Stats = *r.Stats()
	return ta
}

// Compare fails t where got differs from want: the counts by class, and
// every flow's packets each way.
func Compare(t testing.TB, got, want *Tally) {
	t.Helper()
	g, w := &got.Stats, &want.Stats
	if g.Packets != w.Packets || g.Bytes != w.Bytes || g.Decoded != w.Decoded || g.Link != w.Link ||
		g.Network != w.Network || g.Transport != w.Transport || g.Skipped != w.Skipped {
		t.Errorf("captured counts differ from the file's:\ncaptured %d packets, %d bytes, %d decoded, %v %v %v skipped %v\nfile     %d packets, %d bytes, %d decoded, %v %v %v skipped %v",
			g.Packets, g.Bytes, g.Decoded, g.LinkCounts(), g.NetworkCounts(), g.TransportCounts(), g.Skipped,
			w.Packets, w.Bytes, w.Decoded, w.LinkCounts(), w.NetworkCounts(), w.TransportCounts(), w.Skipped)
	}
	if len(got.Flows) != len(want.Flows) {
		t.Errorf("captured %d flows, the file has %d", len(got.Flows), len(want.Flows))
	}
	bad := 0
	for k, wc := range want.Flows {
		if gc := got.Flows[k]; gc == nil || *gc != *wc {
			if bad++; bad <= 5 {
				t.Errorf("flow %v: captured %v packets (forward, reversed), the file has %v", k, gc, *wc)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d flows differ in all", bad)
	}
}

// ReadAll reads s into a tally until sent is closed and every packet the
// kernel passed to the source has been read (or, past deadline, fails).
func ReadAll(s capture.LiveSource, sent <-chan struct{}, deadline time.Time) (*Tally, error) {
	ta := NewTally()
	var p capture.Packet
	for {
		err := s.Next(&p)
		switch {
		case err == nil:
			ta.Add(&p)
			continue
		case !errors.Is(err, capture.ErrNoPacket):
			return ta, err
		}
		select {
		case <-sent:
		default:
			continue
		}
		ks, err := s.KernelStats()
		if err != nil {
			return ta, err
		}
		if s.Stats().Packets >= ks.Packets-ks.Drops {
			ta.Stats = *s.Stats()
			return ta, nil
		}
		if time.Now().After(deadline) {
			return ta, fmt.Errorf("read %d packets, the kernel passed %d: still missing at the deadline", s.Stats().Packets, ks.Packets-ks.Drops)
		}
	}
}

// Play reads every source on a goroutine of its own while play runs, and
// returns each source's tally once all is read.
func Play[S capture.LiveSource](t testing.TB, srcs []S, play func() error) []*Tally {
	t.Helper()
	sent := make(chan struct{})
	tallies := make([]*Tally, len(srcs))
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for i, s := range srcs {
		wg.Go(func() { tallies[i], errs[i] = ReadAll(s, sent, deadline) })
	}
	perr := play()
	close(sent)
	wg.Wait()
	if err := errors.Join(append(errs, perr)...); err != nil {
		t.Fatal(err)
	}
	return tallies
}

// CheckNextNoAllocs reads all but ten of the packets sent to s, a live
// source, and fails if a Next allocates.
func CheckNextNoAllocs(t *testing.T, s capture.Source, packets int) {
	t.Helper()
	var p capture.Packet
	var nerr error
	runs := packets - 10
	allocs := testing.AllocsPerRun(runs, func() {
		if err := s.Next(&p); err != nil && nerr == nil {
			nerr = err
		}
	})
	if nerr != nil {
		t.Fatal(nerr)
	}
	t.Logf("%v allocations per packet over %d packets", allocs, runs+1)
	if allocs != 0 {
		t.Errorf("Next allocates %v times per packet", allocs)
	}
}
