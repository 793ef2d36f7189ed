package hostpairs

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/filters/cascade"
)

func ip4(n uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

func mustOpen(t *testing.T, dir string, o Options) *History {
	t.Helper()
	h, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// t0 is the packet time the tests start at.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// TestNovelAgainstExact: on random pairs with repeats, past several
// merges and a reopen, without a horizon, a pair seen before is never
// novel, and a pair never seen is novel but for the filter's false
// positives and the pairs a busy merge left unrecorded.
func TestNovelAgainstExact(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(map[bool]string{false: "background", true: "sync"}[sync], func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Options: cascade.Options{RAMBytes: 64 << 10, Capacity: 1 << 24, FPRate: 1e-4, SyncMerge: sync}}
			h := mustOpen(t, dir, o)
			recorded := map[[2]uint32]bool{}
			r := rand.New(rand.NewPCG(5, 6))
			missed, now := 0, t0
			for round := range 2 {
				for i := range 100_000 {
					k := [2]uint32{r.Uint32N(20000), r.Uint32N(50)}
					if i%3 == 0 { // a repeat of a recent one
						k = [2]uint32{uint32(i % 20000), uint32(i % 50)}
					}
					un := h.Stats().Unrecorded
					got := h.Novel(ip4(k[0]), ip4(0xc6120000|k[1]), now)
					switch {
					case recorded[k] && got:
						t.Fatalf("round %d: pair %v seen before is novel", round, k)
					case !recorded[k] && !got:
						missed++
					}
					recorded[k] = recorded[k] || h.Stats().Unrecorded == un
					now = now.Add(time.Millisecond)
				}
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
				h = mustOpen(t, dir, o)
			}
			defer h.Close()
			st := h.Stats()
			g := st.Generations[0].Filter
			t.Logf("%d distinct pairs, %d missed as seen, %d unrecorded; levels %d, merges %d", len(recorded), missed, st.Unrecorded, len(g.Levels), g.Merges)
			if missed > 10 {
				t.Errorf("%d novel pairs called seen among %d", missed, len(recorded))
			}
			if len(st.Generations) != 1 || g.Merges == 0 {
				t.Errorf("%d generations, %d merges: the test does not reach the disk levels", len(st.Generations), g.Merges)
			}
			if st.Errors != 0 {
				t.Errorf("%d errors: %v", st.Errors, st.LastError)
			}
		})
	}
}

// TestHorizonAgainstExact drives the history through minutes of packet
// time against an exact reference of each pair's last sighting, with
// generations rotating, sealing and expiring, merges in the background
// and a reopen half way: a pair last seen less than the horizon ago is
// never novel, one last seen a horizon and a generation ago or more is
// novel but for false positives, and in between either may be.
func TestHorizonAgainstExact(t *testing.T) {
	dir := t.TempDir()
	const horizon = 10 * time.Second
	o := Options{Options: cascade.Options{RAMBytes: 16 << 10, Capacity: 1 << 20, FPRate: 1e-4}, Horizon: horizon}
	span := o.span()
	h := mustOpen(t, dir, o)
	last := map[[2]uint32]time.Time{}
	r := rand.New(rand.NewPCG(7, 8))
	now := t0
	var calls, mustSeen, mustNovel, either, falseSeen int
	maxGens := 0
	for round := range 2 {
		for range 60_000 {
			k := [2]uint32{r.Uint32N(2500), r.Uint32N(4)}
			un := h.Stats().Unrecorded
			got := h.Novel(ip4(k[0]), ip4(0x0a000000|k[1]), now)
			calls++
			seen, ok := last[k]
			switch age := now.Sub(seen); {
			case ok && age < horizon:
				mustSeen++
				if got {
					t.Fatalf("pair %v last seen %v ago (horizon %v) is novel", k, age, horizon)
				}
			case !ok || age >= horizon+span:
				mustNovel++
				if !got {
					falseSeen++
				}
			default:
				either++
			}
			if h.Stats().Unrecorded == un {
				last[k] = now
			}
			now = now.Add(time.Duration(r.Uint64N(uint64(2 * time.Millisecond))))
			maxGens = max(maxGens, len(h.Stats().Generations))
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		gens, _ := filepath.Glob(filepath.Join(dir, genPrefix+"*"))
		if len(gens) > o.generations()+1 {
			t.Errorf("round %d: %d generation directories left: %v", round, len(gens), gens)
		}
		h = mustOpen(t, dir, o)
	}
	defer h.Close()
	st := h.Stats()
	t.Logf("%d calls over %v: %d must be seen, %d novel (%d called seen), %d either; at most %d generations; %d unrecorded, %d errors",
		calls, now.Sub(t0), mustSeen, mustNovel, falseSeen, either, maxGens, st.Unrecorded, st.Errors)
	if mustSeen < 1000 || mustNovel < 1000 || either < 100 {
		t.Errorf("the trace does not test the bounds: %d, %d, %d", mustSeen, mustNovel, either)
	}
	if falseSeen > mustNovel/1000+5 {
		t.Errorf("%d of %d pairs past the horizon called seen", falseSeen, mustNovel)
	}
	if maxGens > o.generations()+1 || maxGens < o.generations() {
		t.Errorf("at most %d live generations, want %d or %d", maxGens, o.generations(), o.generations()+1)
	}
	if st.Errors != 0 {
		t.Errorf("%d errors: %v", st.Errors, st.LastError)
	}
	for _, g := range st.Generations[:len(st.Generations)-1] {
		if g.Filter.QF0Bytes != 0 {
			t.Errorf("generation %v holds %d bytes of QF0 after its seal", g.Start, g.Filter.QF0Bytes)
		}
	}
}

// TestOpenExpiresAndCleans: a history reopened with a horizon removes the
// generations past it (as of its newest generation's start) and what a
// crash left of a removal, and refuses a directory holding a Cascade
// Filter of its own (a history without generations).
func TestOpenExpiresAndCleans(t *testing.T) {
	dir := t.TempDir()
	o := Options{Options: cascade.Options{RAMBytes: 16 << 10, Capacity: 1 << 16, FPRate: 1e-3}}
	for i, at := range []time.Duration{0, 2 * time.Hour, 10 * time.Hour} {
		f, err := cascade.Open(filepath.Join(dir, genName(t0.Add(at))), o.Options)
		if err != nil {
			t.Fatal(err)
		}
		f.Insert(uint64(i))
		f.Close()
	}
	if err := os.MkdirAll(filepath.Join(dir, genName(t0)+expiredExt, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.Horizon = 2 * time.Hour // the generation of t0 ends at t0+30m, of t0+2h at t0+2.5h: 10h is past both
	h := mustOpen(t, dir, o)
	if st := h.Stats(); len(st.Generations) != 1 || !st.Generations[0].Start.Equal(t0.Add(10*time.Hour)) || !st.Clock.Equal(t0.Add(10*time.Hour)) {
		t.Errorf("reopened: %+v", st)
	}
	h.Close()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{genName(t0.Add(10 * time.Hour))}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("left %v, want %v", names, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, o); err == nil || !strings.Contains(err.Error(), "before generations") {
		t.Errorf("a cascade at the top: %v", err)
	}
}

// TestConcurrentNovel: shards asking about overlapping pairs at once (run
// with -race): every pair is novel once, unless a busy merge left it
// unrecorded, and every call is answered.
func TestConcurrentNovel(t *testing.T) {
	// Generations of 56 s, none expiring over the run's 500 s.
	o := Options{Options: cascade.Options{RAMBytes: 16 << 10, Capacity: 1 << 20, FPRate: 1e-5}, Horizon: time.Hour, Generations: MaxGenerations}
	h := mustOpen(t, t.TempDir(), o)
	defer h.Close()
	const shards, per, pairs = 4, 5000, 3000
	var wg sync.WaitGroup
	var mu sync.Mutex
	novel := map[uint32]int{}
	for s := range shards {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(s), 9))
			for i := range per {
				p := r.Uint32N(pairs)
				at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
				if h.Novel(ip4(p), ip4(p+1), at) {
					mu.Lock()
					novel[p]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	st := h.Stats()
	twice := 0
	for _, n := range novel {
		twice += n - 1
	}
	t.Logf("%d pairs novel, %d twice or more; %d unrecorded, %d generations", len(novel), twice, st.Unrecorded, len(st.Generations))
	if st.Novel+st.Seen+st.Errors != shards*per || st.Errors != 0 {
		t.Errorf("stats %+v for %d calls", st, shards*per)
	}
	if uint64(twice) > st.Unrecorded {
		t.Errorf("%d pairs novel more than once, %d unrecorded", twice, st.Unrecorded)
	}
	if len(st.Generations) < 5 {
		t.Errorf("%d generations: the run does not rotate", len(st.Generations))
	}
	if len(novel) < pairs*99/100 {
		t.Errorf("%d of %d pairs novel", len(novel), pairs)
	}
}

func TestOptions(t *testing.T) {
	good := DefaultOptions
	for _, o := range []Options{
		{Options: good.Options, Horizon: -1},
		{Options: good.Options, Horizon: time.Hour, Generations: MaxGenerations + 1},
		{Options: good.Options, Horizon: time.Millisecond, Generations: 4},
		{Options: cascade.Options{RAMBytes: 1}},
	} {
		if _, err := Open(t.TempDir(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// busyFilter is a generation's filter whose merges never end: every
// insertion is refused with cascade.ErrBusy.
type busyFilter struct{ filter }

func (busyFilter) TryInsert(uint64) error { return cascade.ErrBusy }

// TestBusyLeavesPairsUnrecorded: when the newest generation's filter is
// busy merging, Novel does not wait: a new pair is answered novel and
// counted unrecorded, and so is novel again next time; a pair found in
// an older generation is answered seen, its refresh counted unrecorded.
func TestBusyLeavesPairsUnrecorded(t *testing.T) {
	o := Options{Options: cascade.Options{RAMBytes: 16 << 10, Capacity: 1 << 16, FPRate: 1e-4}, Horizon: 4 * time.Minute}
	h := mustOpen(t, t.TempDir(), o)
	defer h.Close()
	old := ip4(1)
	if !h.Novel(old, old, t0) || !h.Novel(ip4(2), old, t0.Add(time.Minute)) { // the second starts a generation
		t.Fatal("new pairs not novel")
	}
	h.mu.Lock()
	newest := h.gens[len(h.gens)-1]
	newest.f = busyFilter{newest.f}
	h.mu.Unlock()
	for i := range 2 {
		if !h.Novel(ip4(3), old, t0.Add(time.Minute)) {
			t.Fatalf("call %d: a pair never recorded is not novel", i)
		}
	}
	if h.Novel(old, old, t0.Add(time.Minute)) {
		t.Fatal("a pair of the older generation is novel")
	}
	if st := h.Stats(); st.Unrecorded != 3 || st.Novel != 4 || st.Seen != 1 || st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestNovelAllocatesNothing: a new flow's lookup and insertion allocate
// nothing once the generation is open.
func TestNovelAllocatesNothing(t *testing.T) {
	h := mustOpen(t, t.TempDir(), Options{Options: cascade.Options{RAMBytes: 1 << 20, Capacity: 1 << 20, FPRate: 1e-4}})
	defer h.Close()
	h.Novel(ip4(0), ip4(0), t0)
	var i uint32
	if n := testing.AllocsPerRun(1000, func() {
		h.Novel(ip4(i), ip4(7), t0)
		i++
	}); n != 0 {
		t.Errorf("%.1f allocations a call", n)
	}
}

// BenchmarkNovel: new pairs into a history of 1 MiB of QF0 (its merges
// run in the background, page cache allowed).
func BenchmarkNovel(b *testing.B) {
	h, err := Open(b.TempDir(), Options{Options: cascade.Options{RAMBytes: 1 << 20, Capacity: 1 << 24, FPRate: 1e-4}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ReportAllocs()
	var i uint32
	for b.Loop() {
		h.Novel(ip4(i), ip4(i>>8), t0)
		i++
	}
	st := h.Stats()
	b.ReportMetric(float64(st.Unrecorded)/float64(b.N), "unrecorded/op")
}
