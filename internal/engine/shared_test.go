package engine

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/capture"
)

// TestReplayEverySharedCapture runs every capture in ../shared/pcaps/real
// through the whole pipeline (dedup, ACSM, flow counter, flow table):
// nothing may panic, a damaged file must end in a ReadError, and the flow
// records must account for every flow.
func TestReplayEverySharedCapture(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "pcaps", "real")
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Skipf("shared captures not found: %v", err)
	}
	defer f.Close()
	var files []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) > 6 && c[5] == "capture" {
			files = append(files, filepath.Join(dir, c[0]))
		}
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
		s, err := Replay([]string{name}, ReplayOptions{Config: cfg})
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
