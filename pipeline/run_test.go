package pipeline

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/flowmon/flowmon/capture"
)

// sliceSource is a Source of packets in memory: what a live source looks
// like to Run.
type sliceSource struct {
	pkts  []capture.Packet
	i     int
	stats capture.Stats
}

func (s *sliceSource) Next(p *capture.Packet) error {
	if s.i == len(s.pkts) {
		return io.EOF
	}
	*p = s.pkts[s.i]
	s.i++
	s.stats.Count(p, capture.ReasonNone)
	return nil
}
func (s *sliceSource) Stats() *capture.Stats { return &s.stats }
func (s *sliceSource) Close() error          { return nil }

// TestRunAnySource: Run gives the same summary for a source that is not
// a file as for the file its packets came from.
func TestRunAnySource(t *testing.T) {
	r, err := capture.Open("../pcaps/sample.pcap")
	if err != nil {
		t.Fatal(err)
	}
	src := &sliceSource{}
	var p capture.Packet
	for r.Next(&p) == nil {
		p.Payload = append([]byte(nil), p.Payload...) // the reader reuses its buffer
		src.pkts = append(src.pkts, p)
	}
	r.Close()
	cfg := DefaultConfig()
	cfg.Workers = 1
	want, err := Replay(context.Background(), []string{"../pcaps/sample.pcap"}, ReplayOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Run(context.Background(), src, ReplayOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if got.UniquePackets != want.UniquePackets || got.Flows != want.Flows || got.Duplicates != want.Duplicates ||
		len(got.ConnStates) != len(want.ConnStates) {
		t.Errorf("from memory: %d unique packets, %d flows, %d duplicates, states %v; from the file: %d, %d, %d, %v",
			got.UniquePackets, got.Flows, got.Duplicates, got.ConnStates, want.UniquePackets, want.Flows, want.Duplicates, want.ConnStates)
	}
	for k, v := range want.ConnStates {
		if got.ConnStates[k] != v {
			t.Errorf("conn_state %s: %d from memory, %d from the file", k, got.ConnStates[k], v)
		}
	}
}

// TestRunStops: a done context stops the run with ErrStopped and a
// summary of what was read.
func TestRunStops(t *testing.T) {
	src := &sliceSource{pkts: make([]capture.Packet, 3*publishEvery)}
	for i := range src.pkts {
		src.pkts[i].Hash = uint64(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := Run(ctx, src, ReplayOptions{Config: DefaultConfig()})
	if !errors.Is(err, ErrStopped) || s == nil || s.Packets != publishEvery {
		t.Errorf("stopped run: summary %v, err %v; want %d packets and ErrStopped", s != nil, err, publishEvery)
	}
}
