package dleft

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm/backend"
)

const sec = int64(time.Second)

func newTable(t testing.TB, o Options) *Table {
	t.Helper()
	tb, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestAgainstMap fills a table to its capacity with random flows, churns
// them (updates, deletes, new flows) and compares every answer with a
// map: the share of flows answered wrongly (absent, don't know or another
// state) must stay within the analytic bound, twice the false-positive
// rate n/(B 2^f) per flow (the flow's (b, r) taken by another flow, in
// either order) plus the overflows.
func TestAgainstMap(t *testing.T) {
	const n, values = 200_000, 276
	tb := newTable(t, Options{Capacity: n, Values: values, Seed: 3})
	r := rand.New(rand.NewPCG(1, 2))
	ref := make(map[uint64]uint32, n)
	keys := make([]uint64, 0, n)
	add := func() {
		k, v := r.Uint64(), uint32(r.IntN(values))
		if tb.Insert(k, v) == nil {
			ref[k] = v
			keys = append(keys, k)
		}
	}
	for range n {
		add()
	}
	for round := range 5 {
		for i := 0; i < len(keys); i++ {
			k := keys[i]
			switch x := r.IntN(10); {
			case x < 6:
				nv := uint32(r.IntN(values))
				if v, res := tb.Query(k); res == backend.Found && v == ref[k] && tb.Update(k, v, nv) == nil {
					ref[k] = nv
				}
			case x == 6:
				if v, res := tb.Query(k); res == backend.Found {
					_ = tb.Delete(k, v)
				}
				delete(ref, k)
				keys[i] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
				add()
			}
		}
		_ = round
	}
	wrong := 0
	for k, v := range ref {
		if got, res := tb.Query(k); res != backend.Found || got != v {
			wrong++
		}
	}
	st := tb.TableStats()
	rate := float64(wrong) / float64(len(ref))
	bound := 2*tb.FPRate(n) + float64(st.InsertFailures)/float64(n)
	t.Logf("%d flows, %d cells (%.2f bytes/flow), f=%d: %d wrong (%.2e; bound %.2e), %d overflows, %d duplicates",
		len(ref), tb.Cells(), float64(tb.MemoryBytes())/n, tb.FingerprintBits(), wrong, rate, bound, st.InsertFailures, st.Duplicates)
	// 3x slack over the mean: with ~10 expected errors the count is Poisson.
	if rate > 3*bound+5.0/float64(n) {
		t.Errorf("error rate %.2e above 3x the bound %.2e", rate, bound)
	}
	if b := float64(tb.MemoryBytes()) / n; b > 5 {
		t.Errorf("%.2f bytes/flow, want <= 5", b)
	}
}

// TestFalsePositives: flows never inserted are reported present at about
// n/(B 2^f).
func TestFalsePositives(t *testing.T) {
	const n, trials = 100_000, 2_000_000
	tb := newTable(t, Options{Capacity: n, Values: 128, Seed: 5})
	r := rand.New(rand.NewPCG(3, 4))
	for range n {
		_ = tb.Insert(r.Uint64(), uint32(r.IntN(128)))
	}
	fp := 0
	for range trials {
		if _, res := tb.Query(r.Uint64()); res != backend.Absent {
			fp++
		}
	}
	want := tb.FPRate(n)
	got := float64(fp) / trials
	t.Logf("false positives %.2e, analytic %.2e", got, want)
	if got > 2*want+10.0/trials {
		t.Errorf("false-positive rate %.2e above twice the analytic %.2e", got, want)
	}
}

// TestExpiry: a flow idle for its tier's timeout is kept, one idle for
// 9/8 of it is gone, per tier; writes refresh the tag.
func TestExpiry(t *testing.T) {
	to := []time.Duration{60 * time.Second, 3600 * time.Second, 120 * time.Second}
	tiers := []uint8{0, 1, 2}
	for tier, d := range to {
		tb := newTable(t, Options{Capacity: 100, Values: 3, Tier: tiers, Timeouts: to})
		start := 1_700_000_000 * sec
		tb.Advance(start)
		if err := tb.Insert(42, uint32(tier)); err != nil {
			t.Fatal(err)
		}
		tb.Advance(start + int64(d))
		if _, r := tb.Query(42); r != backend.Found {
			t.Fatalf("tier %d: flow idle for its timeout %v is %s", tier, d, r)
		}
		tb.Advance(start + int64(d)*9/8 + int64(d)/8)
		if _, r := tb.Query(42); r != backend.Absent {
			t.Fatalf("tier %d: flow idle for 10/8 of its timeout is %s", tier, r)
		}
		if s := tb.Stats(); s.Expired != 1 || tb.Len() != 0 {
			t.Errorf("tier %d: expired %d, len %d; want 1, 0", tier, s.Expired, tb.Len())
		}
		// A write keeps a flow alive past its first timeout.
		now := start + 10*int64(d)
		tb.Advance(now)
		_ = tb.Insert(7, uint32(tier))
		for range 4 {
			now += int64(d) / 2
			tb.Advance(now)
			v, r, slot := tb.Find(7)
			if r != backend.Found {
				t.Fatalf("tier %d: flow touched every half timeout is %s", tier, r)
			}
			tb.Set(slot, v)
		}
	}
}

// TestSweepBoundsAge: a flow never looked up again is still dropped by
// the sweep within its timeout plus a tick, and does not come back when
// its 4-bit tag wraps, however long the clock runs.
func TestSweepBoundsAge(t *testing.T) {
	to := []time.Duration{60 * time.Second}
	tb := newTable(t, Options{Capacity: 10_000, Values: 2, Timeouts: to})
	now := int64(0)
	tb.Advance(now)
	for k := range uint64(5000) {
		_ = tb.Insert(k*0x9e3779b97f4a7c15+1, 1)
	}
	for now < 40*int64(to[0]) {
		now += sec / 3
		tb.Advance(now)
		if now > int64(to[0])*9/8+int64(to[0])*6/8 && tb.Len() != 0 {
			t.Fatalf("at %v, %d cells still held", time.Duration(now), tb.Len())
		}
	}
	for k := range uint64(5000) {
		if _, r := tb.Query(k*0x9e3779b97f4a7c15 + 1); r != backend.Absent {
			t.Fatalf("flow %d is %s after 40 timeouts", k, r)
		}
	}
}

// TestDuplicateIsDontKnow: a second insert of a fingerprint a bucket
// already holds turns the cell into "don't know" (the paper's rule).
func TestDuplicateIsDontKnow(t *testing.T) {
	tb := newTable(t, Options{Capacity: 100, Values: 10})
	_ = tb.Insert(9, 3)
	if err := tb.Insert(9, 4); err != nil {
		t.Fatal(err)
	}
	if _, r := tb.Query(9); r != backend.Unknown {
		t.Errorf("duplicate answers %s, want unknown", r)
	}
	if !errors.Is(tb.Update(9, 3, 5), ErrNotFound) {
		t.Error("update of a DK cell succeeded")
	}
}

// TestFloodFixedSize: far more flows than cells neither grow the heap nor
// the table; inserts into full buckets are refused; once the flood has
// aged out, its expired cells are reused.
func TestFloodFixedSize(t *testing.T) {
	tb := newTable(t, Options{Capacity: 10_000, Values: 2, Timeouts: []time.Duration{time.Minute}})
	r := rand.New(rand.NewPCG(9, 9))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	full := 0
	for range 1_000_000 {
		if errors.Is(tb.Insert(r.Uint64(), 1), ErrFull) {
			full++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > 64<<10 {
		t.Errorf("heap grew %d bytes under a flood", grow)
	}
	if tb.Len() != tb.Cells() || full == 0 {
		t.Errorf("after the flood: %d of %d cells, %d refused", tb.Len(), tb.Cells(), full)
	}
	tb.Advance(int64(2 * time.Minute))
	if err := tb.Insert(r.Uint64(), 1); err != nil {
		t.Errorf("insert after the flood aged out: %v", err)
	}
}

func TestNoAllocs(t *testing.T) {
	tb := newTable(t, Options{Capacity: 1 << 12, Values: 8, Timeouts: []time.Duration{time.Second}})
	i := uint64(0)
	if n := testing.AllocsPerRun(1000, func() {
		i++
		tb.Advance(int64(i) * int64(time.Millisecond))
		tb.Prefetch(i % 3000)
		if v, r, slot := tb.Find(i % 3000); r == backend.Found {
			tb.Set(slot, (v+1)%8)
		} else {
			_ = tb.Insert(i%3000, 1)
		}
	}); n != 0 {
		t.Errorf("packet path allocates %v times", n)
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{
		{Capacity: 0, Values: 2},
		{Capacity: 10, Values: 5000},
		{Capacity: 10, Values: 2, Tier: []uint8{0}},
		{Capacity: 10, Values: 2, Tier: []uint8{0, 3}},
		{Capacity: 10, Values: 2, Timeouts: []time.Duration{-1}},
	} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: err %v, want ErrOptions", o, err)
		}
	}
}

// TestShedKeepsEstablished: a table holding established flows (tier 1)
// and half-open ones (tier 0), flooded with ten times its cells of new
// half-open flows. With Shed every flood insert succeeds, only tier-0
// cells are replaced, and every established flow keeps its state (a
// fingerprint collision with a flood flow, which makes a cell "don't
// know", is allowed at the analytic rate); without Shed (the paper) the
// flood is refused once the buckets are full, and the table is the same.
func TestShedKeepsEstablished(t *testing.T) {
	const values = 4 // 0, 1: half-open (tier 0); 2, 3: established (tier 1)
	tiers := []uint8{0, 0, 1, 1}
	for _, shed := range []bool{false, true} {
		tb := newTable(t, Options{Capacity: 20_000, Values: values, Seed: 5, Tier: tiers,
			Timeouts: []time.Duration{time.Minute, time.Hour}, Shed: shed})
		r := rand.New(rand.NewPCG(5, uint64(len(tiers))))
		est := map[uint64]uint32{}
		for range tb.Cells() / 4 { // a quarter established
			k, v := r.Uint64(), uint32(2+r.IntN(2))
			if tb.Insert(k, v) == nil {
				est[k] = v
			}
		}
		for range tb.Cells() { // fill the rest with half-open ones
			_ = tb.Insert(r.Uint64(), 0)
		}
		tb.Advance(int64(10 * time.Second)) // the flood is younger than what it finds
		refused := 0
		for range 10 * tb.Cells() {
			if errors.Is(tb.Insert(r.Uint64(), 1), ErrFull) {
				refused++
			}
		}
		wrong := 0
		for k, v := range est {
			if got, res := tb.Query(k); res != backend.Found || got != v {
				wrong++
			}
		}
		st := tb.TableStats()
		// A flood flow sharing an established flow's (b, r) makes it
		// "don't know": per flow about (flood inserts into its two
		// buckets) / 2^f.
		bound := 3 * float64(len(est)) * float64(10*tb.Cells()) / float64(tb.nb) / float64(uint64(1)<<tb.fbits) * 2
		if float64(wrong) > bound+3 {
			t.Errorf("shed=%v: %d of %d established flows wrong, bound %.1f", shed, wrong, len(est), bound+3)
		}
		if shed && (refused != 0 || st.Shed == 0) {
			t.Errorf("shed: %d refused, %d shed; want none refused", refused, st.Shed)
		}
		if !shed && (refused == 0 || st.Shed != 0) {
			t.Errorf("no shed: %d refused, %d shed; want refusals, none shed", refused, st.Shed)
		}
		if tb.Len() > tb.Cells() {
			t.Errorf("shed=%v: %d live cells in %d", shed, tb.Len(), tb.Cells())
		}
	}
}

// TestShedOldestFirst: in two full buckets, the shed cell is the
// longest-idle of the shed tier.
func TestShedOldestFirst(t *testing.T) {
	tb := newTable(t, Options{MemoryBytes: 2 * 64, Values: 2, Tier: []uint8{0, 1},
		Timeouts: []time.Duration{8 * time.Second, time.Hour}, Shed: true}) // one bucket a subtable; tick 1 s
	r := rand.New(rand.NewPCG(7, 7))
	old := r.Uint64()
	if err := tb.Insert(old, 0); err != nil { // at 0 s: the oldest half-open flow
		t.Fatal(err)
	}
	tb.Advance(int64(3 * time.Second))
	var young []uint64
	for tb.Len() < tb.Cells() {
		k := r.Uint64()
		if tb.Insert(k, 0) == nil {
			young = append(young, k)
		}
	}
	if err := tb.Insert(r.Uint64(), 0); err != nil {
		t.Fatalf("insert into a full table with Shed: %v", err)
	}
	if _, res := tb.Query(old); res != backend.Absent {
		t.Errorf("the oldest half-open flow is %v, want shed", res)
	}
	for _, k := range young {
		if _, res := tb.Query(k); res != backend.Found {
			t.Errorf("a younger flow was shed (%v) before the oldest", res)
			break
		}
	}
}

// TestShedRankWalks: the cell Insert sheds, the candidate of highest
// shedRank over both buckets, is the one a walk of the 32 cells from the
// fingerprint's start meets first among the longest idle (how ties
// spread over the tied cells instead of falling on one).
func TestShedRankWalks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const n = 2 * cellsPerBucket
	for range 10000 {
		var eligible [n]bool
		var age [n]int
		for i := range n {
			eligible[i], age[i] = r.IntN(3) > 0, r.IntN(4) // few ages: many ties
		}
		start := r.IntN(n)
		walk, walkAge := -1, -1
		for k := range n {
			if i := (start + k) % n; eligible[i] && age[i] > walkAge {
				walk, walkAge = i, age[i]
			}
		}
		best, bestRank := -1, -1
		for i := range n {
			if k := shedRank(age[i], i, start); eligible[i] && k > bestRank {
				best, bestRank = i, k
			}
		}
		if best != walk {
			t.Fatalf("start %d, ages %v, eligible %v: ranked %d, walk %d", start, age, eligible, best, walk)
		}
	}
}
