package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/flowmon/flowmon/rules"
)

// TestSparseTraceAlertsAsOneWorker: on a sparse capture (cip.pcap: 26,068
// packets over three minutes, a port scan near the PortScan rule's
// threshold) two workers raise the default rules' alerts one worker
// raises, run after run, and each resolves with as many crossings folded.
// A worker's batch of 1024 packets spans seconds of such a capture; the
// pipeline hands partial batches over every batchSpan, since otherwise one
// shard's packets are counted into window slots the other has recycled,
// and the alerts change from run to run (2 or 4 PortScans, a third
// source's false one in some).
func TestSparseTraceAlertsAsOneWorker(t *testing.T) {
	name := filepath.Join(sharedpcaps.Dir(t), "gopacket-fork", "cip.pcap")
	run := func(workers int) []string {
		set, err := rules.Default()
		if err != nil {
			t.Fatal(err)
		}
		mem := alerts.NewMemory("m")
		cfg := DefaultConfig()
		cfg.Workers = workers
		eng := attachRules(&cfg, rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, mem)))
		if _, err := Replay(context.Background(), []string{name}, ReplayOptions{Config: cfg}); err != nil {
			t.Fatal(err)
		}
		eng.Manager().Close(context.Background())
		if late := eng.Stats().Late; late != 0 {
			t.Errorf("%d workers: %d packets left out as late", workers, late)
		}
		var got []string
		for _, a := range mem.All() {
			got = append(got, fmt.Sprintf("%s %v resolved %v count %d", a.Name(), a.Labels, a.Resolved(), a.Count))
		}
		slices.Sort(got)
		return got
	}
	want := run(1)
	if len(want) == 0 {
		t.Fatal("one worker raised no alert on cip.pcap")
	}
	t.Logf("one worker: %q", want)
	for i := range 3 {
		if got := run(2); !slices.Equal(got, want) {
			t.Fatalf("two workers, run %d: %q", i, got)
		}
	}
}
