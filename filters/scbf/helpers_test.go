package scbf

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

func mustNew(t testing.TB, o Options) *Filter {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// mustCreate creates a file-backed filter, or skips where files are not
// supported.
func mustCreate(t testing.TB, path string, o Options) *Filter {
	t.Helper()
	f, err := Create(path, o)
	if errors.Is(err, ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustAdd(t testing.TB, f *Filter, key, id uint64) {
	t.Helper()
	if err := f.Add(key, id); err != nil {
		t.Fatal(err)
	}
}

// elem is a key added with an id.
type elem struct{ key, id uint64 }

// opGen is a deterministic stream of operations: operation i (from 1)
// removes a random live element with probability pRemove, else adds a
// fresh odd key with id i. Absent probes use even keys.
type opGen struct {
	r       *rand.Rand
	pRemove float64
	seq     uint64
	live    []elem
	removed []elem // the most recent removals, at most keepRemoved
}

const keepRemoved = 4096

func newOpGen(seed uint64, pRemove float64) *opGen {
	return &opGen{r: rand.New(rand.NewPCG(seed, 0x5cbf)), pRemove: pRemove}
}

// next returns operation seq+1: add (true) or remove, and its element.
func (g *opGen) next() (bool, elem) {
	g.seq++
	if len(g.live) > 0 && g.r.Float64() < g.pRemove {
		j := g.r.IntN(len(g.live))
		e := g.live[j]
		g.live[j] = g.live[len(g.live)-1]
		g.live = g.live[:len(g.live)-1]
		if len(g.removed) == keepRemoved {
			copy(g.removed, g.removed[1:])
			g.removed = g.removed[:keepRemoved-1]
		}
		g.removed = append(g.removed, e)
		return false, e
	}
	e := elem{g.r.Uint64() | 1, g.seq}
	g.live = append(g.live, e)
	return true, e
}

// apply runs the generator's operations on f up to seq n.
func (g *opGen) apply(t testing.TB, f *Filter, n uint64) {
	t.Helper()
	for g.seq < n {
		add, e := g.next()
		if add {
			mustAdd(t, f, e.key, e.id)
			continue
		}
		ok, err := f.Remove(e.key, e.id)
		if err != nil || !ok {
			t.Fatalf("operation %d: remove of a live element: %v, %v", g.seq, ok, err)
		}
	}
}

// end is the number of bytes f's sub-filters take.
func (f *Filter) end() int {
	s := f.subs[len(f.subs)-1]
	return s.off + subHeader + int(counterBytes(s.k, s.cpf))
}

// sameImage fails unless f and g hold the same sub-filters, counters and
// state (the header's dirty marker, boot id, flush and intent fields
// aside).
func sameImage(t testing.TB, f, g *Filter) {
	t.Helper()
	for _, c := range []struct {
		name string
		off  int
	}{{"seq", offSeq}, {"sub-filters", offFilters}, {"max id", offMaxID}, {"saturations", offSats}} {
		if a, b := get(f.mem, c.off), get(g.mem, c.off); a != b {
			t.Fatalf("%s: %d, reference %d", c.name, a, b)
		}
	}
	if len(f.subs) != len(g.subs) || f.end() != g.end() {
		t.Fatalf("%d sub-filters in %d bytes, reference %d in %d", len(f.subs), f.end(), len(g.subs), g.end())
	}
	if !bytes.Equal(f.mem[headerSize:f.end()], g.mem[headerSize:g.end()]) {
		for i := headerSize; i < f.end(); i++ {
			if f.mem[i] != g.mem[i] {
				t.Fatalf("sub-filters differ from the reference at byte %d: %#x, want %#x", i, f.mem[i], g.mem[i])
			}
		}
	}
}

// fpRate measures f's false-positive rate over trials even keys.
func fpRate(f *Filter, trials int, seed uint64) float64 {
	r := rand.New(rand.NewPCG(seed, 0xab5e))
	fp := 0
	for range trials {
		if f.Check(r.Uint64() &^ 1) {
			fp++
		}
	}
	return float64(fp) / float64(trials)
}

// slack is 4 standard deviations of a rate p measured over n trials.
func slack(p float64, n int) float64 { return 4 * math.Sqrt(p*(1-p)/float64(n)) }

// fixParams and fixClean recompute an image's checksums after an edit.
func fixParams(b []byte) []byte { put(b, offParamSum, xxh3.Hash(b[:offParamSum])); return b }
func fixClean(b []byte) []byte  { put(b, offCleanSum, cleanSum(b)); return b }
