package scbf

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// abandon drops f as a killed process would: unmapped and closed with
// no flush. Its writes stay in the page cache.
func abandon(t testing.TB, f *Filter) {
	t.Helper()
	if err := f.release(); err != nil {
		t.Fatal(err)
	}
	f.mem, f.subs, f.file = nil, nil, nil
}

func mustOpen(t testing.TB, path string, want State) (*Filter, OpenState) {
	t.Helper()
	f, st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != want {
		t.Fatalf("open: %s, want %s", st, want)
	}
	return f, st
}

func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.scbf")
	o := Options{Capacity: 200, ErrorRate: 0.02, Ratio: 0.8, Seed: 3}
	f := mustCreate(t, path, o)
	ref := mustNew(t, o)
	g, gref := newOpGen(1, 0.3), newOpGen(1, 0.3)
	g.apply(t, f, 3000)
	gref.apply(t, ref, 3000)
	if len(f.subs) < 5 {
		t.Fatalf("%d sub-filters: the test should scale the filter", len(f.subs))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if err := f.Add(1, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("add after close: %v", err)
	}
	if f.Check(g.live[0].key) || f.Len() != 0 || f.Seq() != 0 {
		t.Error("a closed filter answers")
	}
	f, st := mustOpen(t, path, Clean)
	if st.Seq != 3000 || st.String() != "clean as of operation 3000" {
		t.Errorf("state %+v: %s", st, st)
	}
	if f.Options() != ref.Options() {
		t.Errorf("options %+v, created with %+v", f.Options(), ref.Options())
	}
	sameImage(t, f, ref)
	if fi, _ := os.Stat(path); fi.Size() != int64(f.MemoryBytes()) || f.MemoryBytes() != ref.MemoryBytes() {
		t.Errorf("file %d bytes, filter %d, reference %d", fi.Size(), f.MemoryBytes(), ref.MemoryBytes())
	}
	for _, e := range g.live {
		if !f.Check(e.key) {
			t.Fatalf("reopened: %v lost", e)
		}
	}
	g.apply(t, f, 3500)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, st = mustOpen(t, path, Clean)
	defer f.Close()
	if st.Seq != 3500 || f.Len() != uint64(len(g.live)) {
		t.Errorf("after more: %s, len %d, want %d", st, f.Len(), len(g.live))
	}
}

// TestDirtyStates: a file its writer dropped without a flush opens as
// consistent on this boot, and must be rebuilt on another; Rebuild
// leaves the file alone.
func TestDirtyStates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.scbf")
	o := Options{Capacity: 100}
	f := mustCreate(t, path, o)
	ref := mustNew(t, o)
	g, gref := newOpGen(2, 0.3), newOpGen(2, 0.3)
	g.apply(t, f, 500)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	g.apply(t, f, 700)
	gref.apply(t, ref, 700)
	abandon(t, f)

	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func(b func() uint64) { bootID = b }(bootID)
	for _, c := range []struct {
		boot    uint64
		changed bool
		msg     string
	}{
		{bootID() ^ 2, true, "its boot id changed"},
		{0, false, "no boot id"},
	} {
		b := bootID
		bootID = func() uint64 { return c.boot }
		f, st, err := Open(path)
		bootID = b
		if f != nil || !errors.Is(err, ErrRebuild) || st != (OpenState{State: Rebuild, Seq: 500, Flushed: 500, BootChanged: c.changed}) {
			t.Fatalf("boot %#x: %v, %+v, %v", c.boot, f, st, err)
		}
		if !strings.Contains(err.Error(), "must be rebuilt: written after its last flush (operation 500)") || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("boot %#x: %v", c.boot, err)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("Open of a file to rebuild changed it")
	}

	f, st := mustOpen(t, path, Consistent)
	if st != (OpenState{State: Consistent, Seq: 700, Flushed: 500}) {
		t.Fatalf("state %+v", st)
	}
	sameImage(t, f, ref)
	// It stays dirty until flushed: dropped again, it is consistent again.
	g.apply(t, f, 710)
	abandon(t, f)
	f, st = mustOpen(t, path, Consistent)
	if st.Seq != 710 || st.Flushed != 500 {
		t.Fatalf("state %s", st)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ = mustOpen(t, path, Clean)
	f.Close()
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.scbf")
	f := mustCreate(t, path, Options{Capacity: 10})
	if _, _, err := Open(path); !errors.Is(err, ErrLocked) {
		t.Errorf("second open: %v", err)
	}
	if _, err := Create(path, Options{Capacity: 10}); !errors.Is(err, ErrLocked) {
		t.Errorf("create over an open filter: %v", err)
	}
	f.Close()
	f, _ = mustOpen(t, path, Clean)
	f.Close()
	if _, _, err := Open(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open of no file: %v", err)
	}
	if _, err := Create(path, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("create with no capacity: %v", err)
	}
}

// TestGrowthCutShort stops an add that scales a file-backed filter after
// the file grew, before and after the new sub-filter was counted: Open
// undoes the add and shrinks the file back, and the filter scales again.
func TestGrowthCutShort(t *testing.T) {
	for _, p := range []point{pointResized, pointSubInit, pointGrown} {
		path := filepath.Join(t.TempDir(), "w.scbf")
		o := Options{Capacity: 50, Ratio: 0.5}
		f := mustCreate(t, path, o)
		ref := mustNew(t, o)
		for i := range uint64(50) {
			mustAdd(t, f, 2*i+1, i)
			mustAdd(t, ref, 2*i+1, i)
		}
		size := f.MemoryBytes()
		if !crashAt(p, func() { _ = f.Add(999, 50) }) {
			t.Fatalf("point %d not reached", p)
		}
		if fi, _ := os.Stat(path); fi.Size() <= int64(size) {
			t.Fatalf("point %d: the file did not grow", p)
		}
		abandon(t, f)
		f, st := mustOpen(t, path, Consistent)
		if st.Seq != 50 || st.Undone != "add" {
			t.Fatalf("point %d: %s", p, st)
		}
		if fi, _ := os.Stat(path); fi.Size() != int64(size) || f.MemoryBytes() != size {
			t.Fatalf("point %d: file %d bytes, filter %d, want %d", p, fi.Size(), f.MemoryBytes(), size)
		}
		sameImage(t, f, ref)
		for _, h := range []*Filter{f, ref} {
			mustAdd(t, h, 999, 50)
		}
		sameImage(t, f, ref)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		f, _ = mustOpen(t, path, Clean)
		f.Close()
	}
}

// damage edits a copy of a clean file's bytes.
type damage struct {
	name string
	edit func(b []byte) []byte
	want error
	msg  string
}

// dirtyNow marks b dirty on this boot, with operation seq+1 in flight.
func dirtyNow(b []byte, op, sub, filters uint64) []byte {
	put(b, offDirty, 1)
	put(b, offBoot, bootID())
	put(b, offIntentSeq, get(b, offSeq)+1)
	put(b, offIntentOp, op)
	put(b, offIntentSub, sub)
	put(b, offIntentFilters, filters)
	put(b, offIntentMaxID, get(b, offMaxID))
	return b
}

// subOff is the offset of sub-filter i in a file of 20-element
// sub-filters at r = 0.5.
func subOff(b []byte, i int) int {
	off := headerSize
	for range i {
		off += subHeader + int(counterBytes(int(get(b, off+subK)), get(b, off+subCPF)))
	}
	return off
}

var damages = []damage{
	{"empty", func(b []byte) []byte { return b[:0] }, ErrCorrupt, "0 bytes is shorter than the 512-byte header"},
	{"short", func(b []byte) []byte { return b[:100] }, ErrCorrupt, "100 bytes is shorter than the 512-byte header"},
	{"magic", func(b []byte) []byte { copy(b, "GIF8"); return b }, ErrCorrupt, `not a scaling counting bloom filter: magic "GIF8", want "FSCB"`},
	{"version", func(b []byte) []byte { b[4] = 2; return b }, ErrVersion, "format version 2, this build reads version 1"},
	{"parameters", func(b []byte) []byte { b[8]++; return b }, ErrCorrupt, "the parameters are damaged"},
	{"counter bits", func(b []byte) []byte { b[5] = 8; return fixParams(b) }, ErrCorrupt, "8-bit counters (reserved 0, 0): this format has 4-bit counters"},
	{"zero rate", func(b []byte) []byte { put(b, offRate, 0); return fixParams(b) }, ErrCorrupt, "error rate 0, ratio 0.5: a file states both"},
	{"ratio", func(b []byte) []byte { put(b, offRatio, math.Float64bits(1.5)); return fixParams(b) }, ErrCorrupt, "tightening ratio 1.5 must be in (0, 1)"},
	{"dirty marker", func(b []byte) []byte { put(b, offDirty, 7); return b }, ErrCorrupt, "dirty marker 7 is neither 0 nor 1"},
	{"flush ahead", func(b []byte) []byte { put(b, offCleanSeq, get(b, offSeq)+1); return b }, ErrCorrupt, "last flush at operation 61, after the last operation 60"},
	{"no sub-filters", func(b []byte) []byte { put(b, offFilters, 0); return fixClean(b) }, ErrCorrupt, "0 sub-filters, want 1 to 4096"},
	{"many sub-filters", func(b []byte) []byte { put(b, offFilters, 5000); return fixClean(b) }, ErrCorrupt, "5000 sub-filters, want 1 to 4096"},
	{"sub-filters that cannot fit", func(b []byte) []byte { put(b, offFilters, 4000); return fixClean(b) }, ErrCorrupt, "4000 sub-filters cannot fit"},
	{"sub-filter past the end", func(b []byte) []byte { put(b, offFilters, 4); return fixClean(b) }, ErrCorrupt, "sub-filter 3 at byte"},
	{"no hashes", func(b []byte) []byte { put(b, subOff(b, 1)+subK, 0); return fixClean(b) }, ErrCorrupt, "sub-filter 1 has 0 hashes, want 1 to 256"},
	{"many hashes", func(b []byte) []byte { put(b, subOff(b, 1)+subK, 300); return fixClean(b) }, ErrCorrupt, "sub-filter 1 has 300 hashes"},
	{"no counters", func(b []byte) []byte { put(b, subOff(b, 2)+subCPF, 0); return fixClean(b) }, ErrCorrupt, "sub-filter 2 has 0 counters per hash"},
	{"truncated", func(b []byte) []byte { return b[:len(b)-8] }, ErrCorrupt, "sub-filter 2 needs"},
	{"trailing bytes", func(b []byte) []byte { return append(b, make([]byte, 8)...) }, ErrCorrupt, "the sub-filters take"},
	{"first id", func(b []byte) []byte { put(b, headerSize+subID, 5); return fixClean(b) }, ErrCorrupt, "sub-filter 0 starts at id 5, not 0"},
	{"ids out of order", func(b []byte) []byte { put(b, subOff(b, 2)+subID, 3); return fixClean(b) }, ErrCorrupt, "sub-filter 2 starts at id 3, not after sub-filter 1's 20"},
	{"max id", func(b []byte) []byte { put(b, offMaxID, 1); return fixClean(b) }, ErrCorrupt, "largest id 1 is below the newest sub-filter's first id 40"},
	{"seq", func(b []byte) []byte { put(b, offSeq, get(b, offSeq)+1); return fixClean(b) }, ErrCorrupt, "clean file at operation 61, flushed at 60"},
	{"counter", func(b []byte) []byte { b[len(b)-100] ^= 0x10; return b }, ErrCorrupt, "the counters or the state are damaged"},
	{"state", func(b []byte) []byte { b[offSats]++; return b }, ErrCorrupt, "the counters or the state are damaged"},
	{"intent kind", func(b []byte) []byte { return dirtyNow(b, 9, 0, 3) }, ErrCorrupt, "operation 61 in flight is of kind 9, neither add nor remove"},
	{"intent sub-filters", func(b []byte) []byte { return dirtyNow(b, opAdd, 0, 7) }, ErrCorrupt, "operation 61 in flight began with 7 sub-filters, the file has 3"},
	{"intent sub-filter", func(b []byte) []byte { return dirtyNow(b, opRemove, 3, 3) }, ErrCorrupt, "operation 61 in flight names sub-filter 3 of 3"},
	{"intent max id", func(b []byte) []byte { b = dirtyNow(b, opAdd, 1, 3); put(b, offIntentMaxID, 2); return b }, ErrCorrupt, "began with largest id 2, below sub-filter 2's first id"},
}

// cleanFile returns the bytes of a clean file: 3 sub-filters of 20
// elements, ids 0..59.
func cleanFile(t testing.TB) []byte {
	path := filepath.Join(t.TempDir(), "clean.scbf")
	f := mustCreate(t, path, Options{Capacity: 20, Ratio: 0.5})
	for i := range uint64(60) {
		mustAdd(t, f, 2*i+1, i)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRefusals opens a damaged copy of a clean file for each kind of
// damage: refused with its sentinel and its message, the file unchanged.
func TestRefusals(t *testing.T) {
	clean := cleanFile(t)
	dir := t.TempDir()
	for _, d := range damages {
		b := d.edit(append([]byte(nil), clean...))
		path := filepath.Join(dir, strings.ReplaceAll(d.name, " ", "-"))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		f, _, err := Open(path)
		if f != nil || !errors.Is(err, d.want) || !strings.Contains(err.Error(), d.msg) {
			t.Errorf("%s: %v, want %v with %q", d.name, err, d.want, d.msg)
			continue
		}
		if !strings.Contains(err.Error(), "open "+path+": ") {
			t.Errorf("%s: %v does not name the file", d.name, err)
		}
		if after, _ := os.ReadFile(path); string(after) != string(b) {
			t.Errorf("%s: a refused file was changed", d.name)
		}
	}
	path := filepath.Join(dir, "ok")
	if err := os.WriteFile(path, clean, 0o600); err != nil {
		t.Fatal(err)
	}
	f, _ := mustOpen(t, path, Clean)
	f.Close()
}

// TestPageCacheSurvivesUnmap checks the premise of Consistent: writes to
// a shared mapping are in the file once the mapping is gone, with no
// msync (the kernel's page cache holds them).
func TestPageCacheSurvivesUnmap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m")
	if err := os.WriteFile(path, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	copy(m[100:], "written")
	unix.Munmap(m)
	unix.Close(fd)
	if b, _ := os.ReadFile(path); string(b[100:107]) != "written" {
		t.Fatal("a shared mapping's write is not in the file")
	}
}
