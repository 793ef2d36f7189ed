package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/flowmon/flowmon/record/connlog"
)

// TestUIDsUniqueAndStable replays real captures (nDPI's, and Zeek's with
// conn.log baselines) twice with one worker and once with two: the uids
// of one capture's flows must be distinct (across captures they may
// repeat: some carry the same packets), and each flow (its endpoints and
// start) must get the same uid in every run. The endpoints are compared
// unordered: the approximate ACSM, whose capacity is split over the
// workers, may orient a flow differently (it does for one flow of
// arkime/bacnet-stack-services.pcap); the uid does not depend on it.
func TestUIDsUniqueAndStable(t *testing.T) {
	dir := sharedpcaps.Dir(t)
	var files []string
	for _, c := range sharedpcaps.Captures(t) {
		if strings.HasPrefix(c.Name, "ndpi/") {
			files = append(files, c.Name)
		}
	}
	for _, r := range readZeekConn(t, dir) {
		if !slices.Contains(files, r.trace) {
			files = append(files, r.trace)
		}
	}
	runs := [][]string{nil, nil, nil} // flow and uid per record: workers 1, 1, 2
	for i, workers := range []int{1, 1, 2} {
		for _, f := range files {
			cfg := DefaultConfig()
			cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 1<<14, 1<<14, 1<<14
			cfg.Dedup.PacketsPerWindow = 1024
			cfg.Workers = workers
			var log strings.Builder
			cfg.Sinks = connLog(&log)
			if s, _ := Replay(context.Background(), []string{filepath.Join(dir, f)}, ReplayOptions{Config: cfg}); s == nil {
				continue
			}
			for _, r := range readJSONLines[connlog.Record](t, []byte(log.String())) {
				ends := []string{fmt.Sprintf("%s:%d", r.OrigH, r.OrigP), fmt.Sprintf("%s:%d", r.RespH, r.RespP)}
				slices.Sort(ends)
				runs[i] = append(runs[i], fmt.Sprintf("%s %s %s %s %.6f %s", f, r.Proto, ends[0], ends[1], r.TS, r.UID))
			}
		}
		slices.Sort(runs[i])
	}
	uids := map[string]string{} // capture and uid: flow
	for _, line := range runs[0] {
		u := line[:strings.IndexByte(line, ' ')] + line[strings.LastIndexByte(line, ' '):]
		if other, dup := uids[u]; dup {
			t.Errorf("uid given to two flows:\n  %s\n  %s", other, line)
		}
		uids[u] = line
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Errorf("two runs with one worker gave different uids")
	}
	if !slices.Equal(runs[0], runs[2]) {
		t.Errorf("one and two workers gave different uids")
		for _, l := range runs[0] {
			if _, ok := slices.BinarySearch(runs[2], l); !ok {
				t.Logf("only with one worker: %s", l)
			}
		}
		for _, l := range runs[2] {
			if _, ok := slices.BinarySearch(runs[0], l); !ok {
				t.Logf("only with two workers: %s", l)
			}
		}
	}
	if len(uids) < 500 {
		t.Errorf("only %d flows: the test needs captures with more", len(uids))
	}
	t.Logf("%d flows in %d captures, uids unique and stable", len(uids), len(files))
}
