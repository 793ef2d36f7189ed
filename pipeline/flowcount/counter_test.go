package flowcount

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/cputime"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func mustCounter(t testing.TB, o Options) *Counter {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, o := range []Options{{Window: time.Millisecond}, {FPRate: 2}, {CounterBits: 60}} {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestWindowsAgainstReference feeds three windows of packets and compares
// current and published counts with exact per-window maps.
func TestWindowsAgainstReference(t *testing.T) {
	c := mustCounter(t, Options{ExpectedFlows: 5000, Window: time.Minute})
	r := rand.New(rand.NewPCG(1, 2))
	flows := make([]uint64, 3000)
	for i := range flows {
		flows[i] = r.Uint64()
	}
	var prev map[uint64]uint64
	for w := range 3 {
		ref := map[uint64]uint64{}
		start := t0.Add(time.Duration(w) * time.Minute)
		for i := range 20000 {
			h := flows[r.IntN(len(flows))]
			now := start.Add(time.Duration(i) * time.Minute / 20000)
			ref[h]++
			if got := c.Add(h, now); got != ref[h] {
				t.Fatalf("window %d: Add returned %d, want %d", w, got, ref[h])
			}
		}
		for h, n := range ref {
			if c.Count(h) != n {
				t.Fatalf("window %d: Count %d want %d", w, c.Count(h), n)
			}
		}
		if w == 0 {
			if c.Last() != nil {
				t.Fatal("snapshot before the first window ended")
			}
		} else {
			s := c.Last()
			if !s.Start.Equal(start.Add(-time.Minute)) || !s.End.Equal(start) || s.Packets != 20000 || s.Partial {
				t.Fatalf("snapshot %v..%v packets %d", s.Start, s.End, s.Packets)
			}
			for h, n := range prev {
				if s.Filter.Count(h) != n {
					t.Fatalf("snapshot count %d want %d", s.Filter.Count(h), n)
				}
			}
		}
		prev = ref
	}
	// A jump over empty windows publishes an empty last window.
	c.Add(flows[0], t0.Add(10*time.Minute+time.Second))
	s := c.Last()
	if !s.Start.Equal(t0.Add(9*time.Minute)) || s.Filter.Stats().Distinct != 0 {
		t.Errorf("after a gap: %v, %d flows", s.Start, s.Filter.Stats().Distinct)
	}
	c.Flush()
	if s := c.Last(); !s.Partial || s.Packets != 1 {
		t.Errorf("flush: %+v", s)
	}
}

func TestFullCounterDrops(t *testing.T) {
	c := mustCounter(t, Options{ExpectedFlows: 100})
	zero := 0
	for i := range uint64(1000) {
		if c.Add(i*0x9e3779b97f4a7c15, t0) == 0 {
			zero++
		}
	}
	if st := c.Stats(); st.Dropped == 0 || st.Dropped != uint64(zero) || st.Packets != 1000 {
		t.Errorf("stats %+v, zero returns %d", st, zero)
	}
}

// TestAddNewDropsOnceRefusing: AddNew counts as AddN until the window's
// filter refuses a flow; then new flows' packets are dropped without a
// lookup (the filter is left as it was), and the next window counts again.
func TestAddNewDropsOnceRefusing(t *testing.T) {
	c := mustCounter(t, Options{ExpectedFlows: 100})
	c.Rotate(t0)
	key := func(i uint64) uint64 { return i * 0x9e3779b97f4a7c15 }
	i := uint64(0)
	for ; !c.Refusing(); i++ {
		if i > 10_000 {
			t.Fatal("a filter sized for 100 flows took 10,000")
		}
		if got := c.AddNew(key(i), 2); got != 2 && !c.Refusing() {
			t.Fatalf("flow %d: %d packets counted, want 2", i, got)
		}
	}
	before := c.Stats()
	distinct := c.cur.Stats().Distinct
	for j := range uint64(50) {
		if got := c.AddNew(key(i+j), 1); got != 0 {
			t.Fatalf("a new flow counted %d once refusing", got)
		}
	}
	st := c.Stats()
	if st.Dropped != before.Dropped+50 || st.Packets != before.Packets+50 || c.cur.Stats().Distinct != distinct {
		t.Errorf("after 50 new flows refusing: stats %+v (before %+v), %d flows held (before %d)", st, before, c.cur.Stats().Distinct, distinct)
	}
	if got := c.AddN(key(0), 1); got != 3 {
		t.Errorf("a held flow's AddN: %d packets, want 3", got)
	}
	c.Rotate(t0.Add(2 * DefaultWindow))
	if c.Refusing() || c.AddNew(key(i), 1) != 1 {
		t.Errorf("the next window refuses (%v) or did not count a new flow", c.Refusing())
	}
}

func TestHandlerAndFetch(t *testing.T) {
	c := mustCounter(t, Options{ExpectedFlows: 1000})
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	ctx := context.Background()
	if _, err := FetchPeer(ctx, srv.Client(), srv.URL); !errors.Is(err, ErrPeer) {
		t.Errorf("before a window: %v", err)
	}
	resp, err := srv.Client().Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s", resp.Status)
	}
	for i := range uint64(500) {
		c.Add(i, t0)
		c.Add(i, t0)
	}
	c.Add(1, t0.Add(time.Minute))
	p, err := FetchPeer(ctx, srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Start.Equal(t0) || !p.End.Equal(t0.Add(time.Minute)) || p.Filter.Count(7) != 2 || p.Filter.Stats().Distinct != 500 {
		t.Errorf("peer %v..%v count %d distinct %d", p.Start, p.End, p.Filter.Count(7), p.Filter.Stats().Distinct)
	}
}

// TestConcurrentSnapshots reads snapshots over HTTP while the packet
// goroutine rotates windows (run with -race).
func TestConcurrentSnapshots(t *testing.T) {
	c := mustCounter(t, Options{ExpectedFlows: 2000, Window: time.Second})
	h := c.Handler()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
			if rec.Code != http.StatusOK && rec.Code != http.StatusServiceUnavailable {
				t.Errorf("status %d", rec.Code)
				return
			}
		}
	}()
	for i := range 50000 {
		c.Add(uint64(i%1500), t0.Add(time.Duration(i)*time.Millisecond/5))
	}
	close(stop)
	wg.Wait()
	if c.Stats().Windows < 9 {
		t.Errorf("windows %d", c.Stats().Windows)
	}
}

var sink uint64

func TestNoAllocs(t *testing.T) {
	c := mustCounter(t, Options{ExpectedFlows: 10000})
	var i uint64
	if a := testing.AllocsPerRun(1000, func() { sink += c.Add(i%5000, t0); i++ }); a != 0 {
		t.Errorf("Add: %v allocs", a)
	}
	if a := testing.AllocsPerRun(1000, func() { sink += c.Count(i); i++ }); a != 0 {
		t.Errorf("Count: %v allocs", a)
	}
	// A rotation (once a window) allocates the new window's filter and
	// the published Snapshot: the old filter cannot be reused, since
	// readers of Last may still hold it.
	now := t0
	a := testing.AllocsPerRun(100, func() { now = now.Add(time.Minute); sink += c.Add(i, now); i++ })
	t.Logf("Add that rotates the window: %v allocs", a)
}

func BenchmarkAdd(b *testing.B) {
	c := mustCounter(b, Options{ExpectedFlows: 1_000_000})
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		sink += c.Add(i%1_000_000*0x9e3779b97f4a7c15, t0)
		i++
	}
}

// addSizes are a window's flows in cache, and a replay's ~500k flows in a
// window sized for them (3.4 MB of slots: cache misses).
var addSizes = []struct {
	name            string
	expected, flows uint64
}{{"4k", 4096, 4000}, {"500k", 1 << 19, 500_000}}

// BenchmarkAddExisting counts later packets of flows already in the
// window, drawn at random (a stream that does not repeat every n flows,
// whose branches a predictor would learn).
func BenchmarkAddExisting(b *testing.B) {
	for _, s := range addSizes {
		b.Run(s.name, func(b *testing.B) {
			c := mustCounter(b, Options{ExpectedFlows: s.expected})
			for i := range s.flows {
				c.Add(i*0x9e3779b97f4a7c15, t0)
			}
			r := rand.New(rand.NewPCG(7, 8))
			hs := make([]uint64, 1<<20)
			for i := range hs {
				hs[i] = r.Uint64N(s.flows) * 0x9e3779b97f4a7c15
			}
			b.ReportAllocs()
			i := 0
			cpu := cputime.Start()
			for b.Loop() {
				sink += c.Add(hs[i], t0)
				i = (i + 1) & (len(hs) - 1)
			}
			cpu.Report(b)
		})
	}
}

// BenchmarkAddNew counts first packets of flows: the window fills to 90%
// and is flushed (outside the timer).
func BenchmarkAddNew(b *testing.B) {
	for _, s := range addSizes {
		b.Run(s.name, func(b *testing.B) {
			c := mustCounter(b, Options{ExpectedFlows: s.expected})
			b.ReportAllocs()
			var h, n uint64
			cpu := cputime.Start()
			for b.Loop() {
				if n == s.expected*9/10 {
					cpu.Pause()
					b.StopTimer()
					c.Flush()
					n = 0
					b.StartTimer()
					cpu.Resume()
				}
				sink += c.Add(h*0x9e3779b97f4a7c15, t0)
				h++
				n++
			}
			cpu.Report(b)
		})
	}
}

func BenchmarkCount(b *testing.B) {
	c := mustCounter(b, Options{ExpectedFlows: 1_000_000})
	for i := range uint64(1_000_000) {
		c.Add(i*0x9e3779b97f4a7c15, t0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var i uint64
	for b.Loop() {
		sink += c.Count(i % 1_000_000 * 0x9e3779b97f4a7c15)
		i++
	}
}

// TestUnseenFlowFalsePositives measures how often a flow never seen in the
// window reads a non-zero count, against the configured target ε (the
// filter's f = ceil(log2(8/ε)) gives about load*2b/2^f <= ε).
func TestUnseenFlowFalsePositives(t *testing.T) {
	const eps, n, trials = 0.01, 10000, 200000
	c := mustCounter(t, Options{ExpectedFlows: n, FPRate: eps})
	for i := range uint64(n) {
		c.Add(i*0x9e3779b97f4a7c15, t0)
	}
	fp := 0
	for i := range uint64(trials) {
		if c.Count((n+i)*0x9e3779b97f4a7c15) != 0 {
			fp++
		}
	}
	rate := float64(fp) / trials
	if slack := 4 * math.Sqrt(eps*(1-eps)/trials); rate > eps+slack {
		t.Errorf("false-positive rate %.5f > target %v", rate, eps)
	}
	t.Logf("unseen-flow false-positive rate %.5f (target %v)", rate, eps)
}

// TestShardedHandler merges the windows of several shard counters.
func TestShardedHandler(t *testing.T) {
	o := Options{ExpectedFlows: 3000}
	shards := []*Counter{mustCounter(t, o), mustCounter(t, o), mustCounter(t, o)}
	srv := httptest.NewServer(Handler(shards...))
	defer srv.Close()
	ref := map[uint64]uint64{}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		h := r.Uint64() % 2000 * 0x9e3779b97f4a7c15
		shards[h%3].Add(h, t0)
		ref[h]++
	}
	shards[0].Add(1, t0.Add(time.Minute))
	shards[1].Add(2, t0.Add(time.Minute))
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(HeaderShardsMissing); got != "1" {
		t.Errorf("missing shards %q, want 1", got)
	}
	shards[2].Add(3, t0.Add(time.Minute))
	p, err := FetchPeer(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for h, n := range ref {
		if p.Filter.Count(h) != n {
			t.Fatalf("merged count %d want %d", p.Filter.Count(h), n)
		}
	}
}

// TestLastWindow sums the shards' latest published window, counts the
// shards that have not published it, and after Flush reads the final
// window (not the empty one Flush begins).
func TestLastWindow(t *testing.T) {
	o := Options{ExpectedFlows: 3000, Window: time.Minute}
	shards := []*Counter{mustCounter(t, o), mustCounter(t, o), mustCounter(t, o)}
	if w := LastWindow(shards...); w.Flows != 0 || w.Missing != 3 || !w.Start.IsZero() {
		t.Errorf("before any window: %+v", w)
	}
	// Window 1: 30 flows, 2 packets each, spread over the shards.
	for h := uint64(1); h <= 30; h++ {
		shards[h%3].Add(h, t0)
		shards[h%3].Add(h, t0.Add(time.Second))
	}
	// Window 2 begins on shards 0 and 1 only: window 1 is published
	// there, shard 2 has not seen its end.
	shards[0].Add(100, t0.Add(time.Minute))
	shards[1].Add(101, t0.Add(time.Minute))
	w := LastWindow(shards...)
	if w.Start != t0 || w.End != t0.Add(time.Minute) || w.Missing != 1 || w.Partial {
		t.Errorf("window 1 on two shards: %+v", w)
	}
	if w.Flows != 20 || w.Packets != 40 {
		t.Errorf("window 1 on two shards: %d flows, %d packets; want 20, 40", w.Flows, w.Packets)
	}
	for _, c := range shards {
		c.Flush()
	}
	// Shard 2 flushes window 1, the others window 2, which is the latest.
	w = LastWindow(shards...)
	if w.Start != t0.Add(time.Minute) || w.Flows != 2 || w.Packets != 2 || w.Missing != 1 || !w.Partial {
		t.Errorf("after Flush: %+v, want window 2 with 2 flows, 1 shard missing, partial", w)
	}
}
