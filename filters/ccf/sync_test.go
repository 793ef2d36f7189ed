package ccf

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// pair builds two multisets over shared keys: some only in one side, some
// with different multiplicities, the rest equal.
func pair(r *rand.Rand, n int) (a, b map[uint64]uint64) {
	a, b = map[uint64]uint64{}, map[uint64]uint64{}
	for i := range n {
		k, m := r.Uint64(), 1+r.Uint64N(20)
		switch i % 10 {
		case 0:
			a[k] = m
		case 1:
			b[k] = m
		case 2:
			a[k], b[k] = m, m+1+r.Uint64N(5)
		case 3:
			a[k], b[k] = m+1+r.Uint64N(5), m
		default:
			a[k], b[k] = m, m
		}
	}
	return a, b
}

func fill(t testing.TB, o Options, ms map[uint64]uint64) *Filter {
	f := mustNew(t, o)
	for k, m := range ms {
		if _, err := f.Insert(k, m); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func exactClass(a, b map[uint64]uint64, k uint64) Class { return Classify(a[k], b[k]) }

func TestQueryAndDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	a, b := pair(r, 20000)
	for _, fb := range []int{8, 12, 48} {
		o := Options{Capacity: 20000, FingerprintBits: fb, CounterBits: 8, Seed: 9}
		fa, fbF := fill(t, o, a), fill(t, o, b)
		d, err := Decode(fa, fbF)
		if err != nil {
			t.Fatal(err)
		}
		var qWrong, dWrong int
		for k, m := range a {
			want := exactClass(a, b, k)
			qc, qr := Query(fbF, k, m)
			if qc != want {
				qWrong++
				// Errors are one sided: the filter only over-counts.
				if qr < b[k] {
					t.Fatalf("f=%d: remote count %d below truth %d", fb, qr, b[k])
				}
			}
			if dc, _ := d.Classify(k); dc != want {
				dWrong++
			}
		}
		var onlyB, onlyBTotal uint64
		for k, m := range b {
			if a[k] == 0 {
				onlyB++
				onlyBTotal += m
			}
		}
		// Bound on wrong classes: an element is misread when its
		// fingerprint matches another one in its buckets, on either side:
		// at most 2 * (2b+s)/(2^f-1) per element.
		bound := 2 * fa.FalsePositiveBound() * float64(len(a))
		if float64(qWrong) > bound || float64(dWrong) > bound {
			t.Errorf("f=%d: %d query / %d decode misclassified, bound %.0f", fb, qWrong, dWrong, bound)
		}
		if fb == 48 && (qWrong != 0 || dWrong != 0 || d.OnlyThere != onlyB || d.OnlyThereTotal != onlyBTotal) {
			t.Errorf("f=48: wrong %d/%d, only-there %d/%d want %d/%d", qWrong, dWrong, d.OnlyThere, d.OnlyThereTotal, onlyB, onlyBTotal)
		}
		t.Logf("f=%d: %d elements, query wrong %d, decode wrong %d (bound %.0f), only-there %d (true %d)",
			fb, len(a), qWrong, dWrong, bound, d.OnlyThere, onlyB)
	}
}

func TestDecodeIncompatible(t *testing.T) {
	base := Options{Capacity: 100, FingerprintBits: 10, CounterBits: 8}
	f := mustNew(t, base)
	for _, o := range []Options{
		{Capacity: 200, FingerprintBits: 10, CounterBits: 8},
		{Capacity: 100, FingerprintBits: 11, CounterBits: 8},
		{Capacity: 100, FingerprintBits: 10, CounterBits: 9},
		{Capacity: 100, FingerprintBits: 10, CounterBits: 8, Seed: 1},
	} {
		if _, err := Decode(f, mustNew(t, o)); !errors.Is(err, ErrIncompatible) {
			t.Errorf("%+v: err %v", o, err)
		}
	}
	if _, err := Decode(f, NewLike(f)); err != nil {
		t.Errorf("NewLike: %v", err)
	}
}

func TestClassString(t *testing.T) {
	for c, s := range map[Class]string{Same: "same", OnlyHere: "only-here", HereMore: "here-more", ThereMore: "there-more", 9: "class(9)"} {
		if c.String() != s {
			t.Errorf("%d: %q", c, c.String())
		}
	}
}
