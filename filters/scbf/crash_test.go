package scbf

import (
	"bytes"
	"slices"
	"testing"
)

// stop is the panic crashAt stops an operation with.
type stop struct{}

// crashAt runs op, stopping it at point p by a panic the first time p is
// reached, as a kill there would; it reports whether op stopped.
func crashAt(p point, op func()) (stopped bool) {
	crashHook = func(q point) {
		if q == p {
			panic(stop{})
		}
	}
	defer func() {
		crashHook = nil
		if r := recover(); r != nil {
			if _, ok := r.(stop); !ok {
				panic(r)
			}
			stopped = true
		}
	}()
	op()
	return false
}

func (f *Filter) clone() *Filter {
	g := *f
	g.mem = bytes.Clone(f.mem)
	g.subs = slices.Clone(f.subs)
	return &g
}

var allPoints = []point{pointIntent, pointResized, pointSubInit, pointGrown, pointHalf, pointBeforeCommit}

// TestUndoAtEveryPoint stops an add, an add that scales the filter and a
// remove at every point inside them, and loads the image left behind (as
// Open does after a kill, on the same boot): it is consistent as of the
// operation before, equal to a copy taken then, and goes on as the copy
// does.
func TestUndoAtEveryPoint(t *testing.T) {
	const boot = 42
	setup := func() (*Filter, *opGen) {
		f := mustNew(t, Options{Capacity: 100, ErrorRate: 0.01, Ratio: 0.5, Seed: 1})
		f.boot = boot
		g := newOpGen(3, 0.3)
		g.apply(t, f, 380) // 4 sub-filters, the newest part full
		return f, g
	}
	f0, g0 := setup()
	live := g0.live[len(g0.live)/2]
	newest := len(f0.subs) - 1
	room := f0.opts.Capacity - get(f0.mem, f0.subs[newest].off+subCount)
	maxID := get(f0.mem, offMaxID)
	ops := []struct {
		name   string
		undone string
		points int                           // the points it passes
		prep   func(t *testing.T, f *Filter) // run before, not stopped
		run    func(t *testing.T, f *Filter)
	}{
		{"add", "add", 4, nil, func(t *testing.T, f *Filter) { mustAdd(t, f, 0x1234567, maxID) }},
		{"add growing", "add", 6, func(t *testing.T, f *Filter) {
			for i := range room {
				mustAdd(t, f, 0xf00+2*i, maxID)
			}
		}, func(t *testing.T, f *Filter) { mustAdd(t, f, 0x7777, maxID+5) }},
		{"remove", "remove", 3, nil, func(t *testing.T, f *Filter) {
			if ok, err := f.Remove(live.key, live.id); !ok || err != nil {
				t.Fatalf("remove: %v %v", ok, err)
			}
		}},
	}
	for _, op := range ops {
		stops := 0
		for _, p := range allPoints {
			f, _ := setup()
			if op.prep != nil {
				op.prep(t, f)
			}
			ref := f.clone()
			stopped := crashAt(p, func() { op.run(t, f) })
			if !stopped {
				continue // the operation has no such point
			}
			stops++
			img := bytes.Clone(f.mem)
			l, err := load(img, boot)
			if err != nil {
				t.Fatalf("%s stopped at %d: %v", op.name, p, err)
			}
			if l.state.State != Consistent || l.state.Seq != ref.Seq() || l.state.Undone != op.undone {
				t.Fatalf("%s stopped at %d: %s, want consistent as of %d with the %s undone", op.name, p, l.state, ref.Seq(), op.undone)
			}
			g := fromLoaded(l, img[:l.end:l.end], boot)
			sameImage(t, g, ref)
			// Loading again finds nothing more to undo.
			if l2, err := load(bytes.Clone(g.mem), boot); err != nil || l2.state.Undone != "" || l2.state.Seq != ref.Seq() {
				t.Fatalf("%s stopped at %d: second load %s, %v", op.name, p, l2.state, err)
			}
			// The recovered filter goes on as the copy does.
			for _, h := range []*Filter{g, ref} {
				mustAdd(t, h, 0xabc, maxID+100)
				mustAdd(t, h, 0xdef, maxID+100)
			}
			sameImage(t, g, ref)
		}
		if stops != op.points {
			t.Errorf("%s stopped at %d points, want %d", op.name, stops, op.points)
		}
	}
}

// TestLoadWithoutIntent: an image written after its flush with no
// operation cut short loads as it is.
func TestLoadWithoutIntent(t *testing.T) {
	f := mustNew(t, Options{Capacity: 50})
	f.boot = 7
	newOpGen(1, 0.2).apply(t, f, 300)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	l, err := load(bytes.Clone(f.mem), 7)
	if err != nil || l.state != (OpenState{State: Clean, Seq: 300, Flushed: 300}) {
		t.Fatalf("flushed: %s, %v", l.state, err)
	}
	g := newOpGen(1, 0.2)
	g.apply(t, mustNew(t, Options{Capacity: 50}), 300)
	g.apply(t, f, 340)
	l, err = load(bytes.Clone(f.mem), 7)
	if err != nil || l.state != (OpenState{State: Consistent, Seq: 340, Flushed: 300}) {
		t.Fatalf("dirty: %s, %v", l.state, err)
	}
	for _, boot := range []uint64{8, 0} {
		img := bytes.Clone(f.mem)
		l, err = load(img, boot)
		if err != nil || l.state != (OpenState{State: Rebuild, Seq: 300, Flushed: 300, BootChanged: boot != 0}) {
			t.Fatalf("boot %d: %s, %v", boot, l.state, err)
		}
		if !bytes.Equal(img, f.mem) {
			t.Fatal("a load that found a file to rebuild changed it")
		}
	}
}
