package pipeline

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/rules"
)

// pairHistory is an exact flow history (without a horizon) that keeps
// the span of the times it was given.
type pairHistory struct {
	mu          sync.Mutex
	seen        map[[2]netip.Addr]bool
	calls       int
	first, last time.Time
}

func (h *pairHistory) Novel(src, dst netip.Addr, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == 0 || now.Before(h.first) {
		h.first = now
	}
	if now.After(h.last) {
		h.last = now
	}
	h.calls++
	k := [2]netip.Addr{src, dst}
	novel := !h.seen[k]
	h.seen[k] = true
	return novel
}

// TestHostPairsAnswerNoveltyRules: with a history, every new flow's host
// pair is recorded once, at its packet's time, whether or not a rule
// asks, and a novelty rule fires once per pair the history had not seen,
// on 1 and 2 shards.
func TestHostPairsAnswerNoveltyRules(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 2000, Seed: 6, Duration: 5 * time.Second})
	for _, workers := range []int{1, 2} {
		f, err := rules.Parse("n.yaml", []byte(`groups:
  - name: n
    rules:
      - alert: NewPair
        kind: novelty
        track: by_pair
        novelty: {}
`))
		if err != nil {
			t.Fatal(err)
		}
		set, err := rules.Compile(f)
		if err != nil {
			t.Fatal(err)
		}
		mem := alerts.NewMemory("m")
		h := &pairHistory{seen: map[[2]netip.Addr]bool{}}
		cfg := DefaultConfig()
		cfg.Workers = workers
		cfg.HostPairs = h
		eng := attachRules(&cfg, rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, mem)))
		s, err := Replay(context.Background(), []string{trace}, ReplayOptions{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		eng.Manager().Close(context.Background())
		if uint64(h.calls) != s.ACSM.NewFlows {
			t.Errorf("%d workers: the history was asked %d times for %d new flows", workers, h.calls, s.ACSM.NewFlows)
		}
		if n := fired(eng, "NewPair"); n != uint64(len(h.seen)) {
			t.Errorf("%d workers: %d NewPair alerts for %d pairs", workers, n, len(h.seen))
		}
		if h.first.Before(s.TraceStart) || h.last.After(s.TraceEnd) || !h.last.After(h.first) {
			t.Errorf("%d workers: the history was given times from %v to %v, the trace spans %v to %v",
				workers, h.first, h.last, s.TraceStart, s.TraceEnd)
		}
		if fired(eng, "NewPair") == 0 {
			t.Errorf("%d workers: no NewPair alert", workers)
		}
	}
}
