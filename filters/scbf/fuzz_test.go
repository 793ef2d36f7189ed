package scbf

import (
	"bytes"
	"errors"
	"testing"
)

const fuzzBoot = 42

// fuzzSeeds are images in each state: clean, dirty with no operation in
// flight, dirty with an add that scales cut short, and one to rebuild.
func fuzzSeeds(t testing.TB) [][]byte {
	f := mustNew(t, Options{Capacity: 8, Ratio: 0.5, Seed: 5})
	f.boot = fuzzBoot
	for i := range uint64(20) {
		mustAdd(t, f, 2*i+1, i)
	}
	if _, err := f.Remove(3, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	clean := bytes.Clone(f.mem)
	for i := range uint64(4) {
		mustAdd(t, f, 2*i+100, 20)
	}
	dirty := bytes.Clone(f.mem)
	crashAt(pointHalf, func() { _ = f.Add(77, 40) })
	cut := bytes.Clone(f.mem)
	rebuild := bytes.Clone(dirty)
	put(rebuild, offBoot, 1)
	return [][]byte{clean, dirty, cut, rebuild}
}

// FuzzLoad feeds damaged images to load, as Open does after mapping a
// file: it never panics, refuses with ErrCorrupt or ErrVersion and
// changes nothing on error (or for a file to rebuild), and an image it
// accepts works as a filter. The checksums would stop the fuzzer at the
// first byte it changes, so each input is also tried with them fixed.
func FuzzLoad(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOne(t, data)
		if len(data) >= headerSize {
			fixed := fixParams(bytes.Clone(data))
			fuzzOne(t, fixed)
			if get(fixed, offDirty) == 0 {
				fuzzOne(t, fixClean(fixed))
			}
		}
	})
}

func fuzzOne(t *testing.T, data []byte) {
	img := bytes.Clone(data)
	l, err := load(img, fuzzBoot)
	if err != nil || l.state.State == Rebuild {
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Fatalf("error %v is neither ErrCorrupt nor ErrVersion", err)
		}
		if !bytes.Equal(img, data) {
			t.Fatal("load changed an image it refused")
		}
		return
	}
	if l.end > len(img) || (l.state.State == Clean && l.end != len(img)) {
		t.Fatalf("%s: end %d of %d bytes", l.state, l.end, len(img))
	}
	g := fromLoaded(l, img[:l.end:l.end], fuzzBoot)
	_ = g.Check(7)
	maxID := get(g.mem, offMaxID)
	if k, cpf := g.opts.shape(len(g.subs)); counterBytes(k, cpf) > 1<<20 {
		return // parameters that grow by gigabytes are valid, but not here
	}
	for i := range uint64(3) {
		if err := g.Add(1000+i, maxID+i); err != nil && !errors.Is(err, ErrFull) {
			t.Fatal(err)
		}
	}
	if !g.Check(1000) {
		t.Fatal("false negative on a loaded image")
	}
	if _, err := g.Remove(1000, maxID); err != nil {
		t.Fatal(err)
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	// What a flush leaves loads clean.
	if l2, err := load(bytes.Clone(g.mem), fuzzBoot); err != nil || l2.state.State != Clean {
		t.Fatalf("after a flush: %s, %v", l2.state, err)
	}
}
