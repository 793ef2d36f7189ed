package pipeline

import (
	"context"
	"errors"
	"testing"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// TestReplayEverySharedCapture runs every capture in ../shared/pcaps/real
// through the whole pipeline (dedup, ACSM, flow counter, flow table):
// nothing may panic, a damaged file must end in a ReadError, and the flow
// records must account for every flow.
func TestReplayEverySharedCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every shared capture (about 25 s): not with -short")
	}
	var files []string
	for _, c := range sharedpcaps.Captures(t) {
		files = append(files, c.Path)
	}
	if len(files) < 1000 {
		t.Fatalf("manifest lists %d captures", len(files))
	}
	cfg := DefaultConfig()
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 1024, 1024, 4096
	cfg.Dedup.PacketsPerWindow = 1024
	cfg.Workers = 2
	var packets, flows, damaged int
	for _, name := range files {
		s, err := Replay(context.Background(), []string{name}, ReplayOptions{Config: cfg})
		if s == nil {
			continue // not a capture flowmon opens (the reader's tests cover why)
		}
		var re *capture.ReadError
		if err != nil {
			if !errors.As(err, &re) {
				t.Errorf("%s: %v", name, err)
			}
			damaged++
		}
		var states uint64
		for _, n := range s.ConnStates {
			states += n
		}
		if states != s.Flows || s.UniquePackets+s.Duplicates != s.Decoded {
			t.Errorf("%s: %d flows but %d conn_states; %d decoded = %d unique + %d duplicates?",
				name, s.Flows, states, s.Decoded, s.UniquePackets, s.Duplicates)
		}
		packets += int(s.Packets)
		flows += int(s.Flows)
	}
	t.Logf("%d captures, %d packets, %d flows, %d damaged", len(files), packets, flows, damaged)
}
