package cascadeeval

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunSmall runs the whole evaluation at a toy size (64 KiB budgets,
// a fraction of a second per measurement) and checks the table's rows.
func TestRunSmall(t *testing.T) {
	cfg := Defaults
	cfg.Sizes = nil
	cfg.RAMBytes, cfg.Ratio, cfg.BloomSeconds, cfg.LookupSeconds, cfg.MaxLookups = 64<<10, 8, 0.2, 0.1, 2000
	var b strings.Builder
	r, err := Measure(cfg)
	if errors.Is(err, syscall.EINVAL) {
		t.Skipf("the temporary directory's file system refuses O_DIRECT: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sizes = []Size{{cfg.RAMBytes, cfg.Ratio}}
	if err := Write(&b, cfg, []*Result{r}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"inserts/s", "absent-key lookups/s", "Levels after the inserts", "Insert latency", "background merges (the default)"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("no %q in the table", s)
		}
	}
	if r.CFPos.Positives != r.CFPos.N || r.BFPos.Positives != r.BFPos.N {
		t.Errorf("false negatives: cascade %d of %d, bloom %d of %d", r.CFPos.Positives, r.CFPos.N, r.BFPos.Positives, r.BFPos.N)
	}
	for _, m := range []InsertRun{r.Sync, r.BG} {
		if float64(m.CF.DiskBytes) < 4*float64(cfg.RAMBytes) {
			t.Errorf("cascade (%s merges) on disk %d bytes, budget %d", m.mode(), m.CF.DiskBytes, cfg.RAMBytes)
		}
		if m.Latency.N != r.N || m.CF.Items != r.N || m.Latency.Max < m.Latency.Quantile(0.99) {
			t.Errorf("%s merges: %d insertions timed, %d stored, of %d; max %v, p99 %v",
				m.mode(), m.Latency.N, m.CF.Items, r.N, m.Latency.Max, m.Latency.Quantile(0.99))
		}
	}
	if r.Sync.Merges == 0 || r.Sync.Latency.Max < r.Sync.MergeTime/time.Duration(r.Sync.Merges) {
		t.Errorf("synchronous merges: %d merges in %v, longest insertion %v", r.Sync.Merges, r.Sync.MergeTime, r.Sync.Latency.Max)
	}
	t.Log("\n" + b.String())
}

func TestSizes(t *testing.T) {
	s, err := ParseSizes("4M:16, 1M:64,65536:8,3K:9.5")
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatSizes(s); got != "4M:16,1M:64,64K:8,3K:9.5" {
		t.Fatalf("round trip %q", got)
	}
	for _, bad := range []string{"", "4M", "4X:3", "4M:x", "-1:3"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
