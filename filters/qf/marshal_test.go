package qf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

func TestMarshalRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		q, r uint
		n    int
	}{{1, 1, 1}, {3, 2, 7}, {6, 10, 40}, {10, 20, 900}, {4, 60, 15}, {3, 61, 5}} {
		f := mustShape(t, tc.q, tc.r)
		m := fill(t, f, tc.n, 3)
		b, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var g Filter
		if err := g.UnmarshalBinary(b); err != nil {
			t.Fatalf("q=%d r=%d: %v", tc.q, tc.r, err)
		}
		agree(t, &g, m, "unmarshalled")
		b2, _ := g.MarshalBinary()
		if !bytes.Equal(b, b2) {
			t.Fatal("round trip differs")
		}
	}
}

// TestMarshalPinned pins the encoding of a small filter, and so the
// fingerprints hashmix gives: a change here changes every stored filter.
func TestMarshalPinned(t *testing.T) {
	f := mustShape(t, 3, 5)
	for _, h := range []uint64{1, 2, 3, 0xdeadbeef} {
		if err := f.Insert(h); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := f.MarshalBinary()
	const want = "464d5146010305000400000000000000f10071b60000d9002cbb382d"
	if got := bytesHex(b); got != want {
		t.Fatalf("encoding changed:\n got %s\nwant %s", got, want)
	}
	if got := Fingerprint(0xdeadbeef, 64); got != 0x4e062702ec929eea {
		t.Fatalf("Fingerprint(0xdeadbeef, 64) = %#x", got)
	}
}

func bytesHex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// reseal recomputes the checksum of an encoding changed on purpose, so
// that the structural checks behind it are reached.
func reseal(b []byte) []byte {
	b = bytes.Clone(b)
	body := b[:len(b)-crcSize]
	binary.LittleEndian.PutUint32(b[len(body):], crc32.Checksum(body, castagnoli))
	return b
}

func TestUnmarshalRejects(t *testing.T) {
	f := mustShape(t, 5, 6)
	fill(t, f, 20, 4)
	good, _ := f.MarshalBinary()
	recv := mustShape(t, 2, 2)
	fill(t, recv, 2, 5)
	before, _ := recv.MarshalBinary()
	flip := func(i int, bit byte) []byte { b := bytes.Clone(good); b[i] ^= bit; return b }
	setN := func(n uint64) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint64(b[8:], n)
		return reseal(b)
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short":          good[:10],
		"truncated":      good[:len(good)-1],
		"magic":          flip(0, 1),
		"version":        reseal(flip(4, 3)),
		"reserved":       reseal(flip(7, 1)),
		"q zero":         reseal(flip(5, 5)),
		"q+r too long":   reseal(append([]byte("FMQF\x01\x28\x3d\x00"), good[8:]...)),
		"checksum":       flip(20, 0x10),
		"slot bit":       reseal(flip(20, 0x10)),
		"count too high": setN(21),
		"count too low":  setN(19),
		"count full":     setN(32),
	} {
		err := recv.UnmarshalBinary(b)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v", name, err)
			continue
		}
		after, _ := recv.MarshalBinary()
		if !bytes.Equal(before, after) {
			t.Errorf("%s: receiver changed", name)
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	for _, tc := range []struct {
		q, r uint
		n    int
	}{{2, 2, 3}, {3, 4, 7}, {4, 3, 12}, {5, 6, 20}} {
		g := mustShape(f, tc.q, tc.r)
		fill(f, g, tc.n, 6)
		b, _ := g.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The checksum would stop the fuzzer at the first byte it
		// changes: also try the input resealed.
		fuzzOne(t, data)
		if len(data) >= headerSize+crcSize {
			fuzzOne(t, reseal(data))
		}
	})
}

func fuzzOne(t *testing.T, data []byte) {
	recv := mustShape(t, 2, 3)
	recv.InsertFingerprint(9)
	before, _ := recv.MarshalBinary()
	if err := recv.UnmarshalBinary(data); err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v is not ErrCorrupt", err)
		}
		after, _ := recv.MarshalBinary()
		if !bytes.Equal(before, after) {
			t.Fatal("receiver changed on error")
		}
		return
	}
	out, _ := recv.MarshalBinary()
	if !bytes.Equal(out, data) {
		t.Fatal("accepted input does not round trip")
	}
	// An accepted filter works: its fingerprints read back, delete and
	// insert keep it valid.
	var fps []uint64
	for fp := range recv.All() {
		fps = append(fps, fp)
	}
	if uint64(len(fps)) != recv.Len() {
		t.Fatalf("%d fingerprints, Len %d", len(fps), recv.Len())
	}
	for _, fp := range fps {
		if !recv.ContainsFingerprint(fp) {
			t.Fatalf("%#x missing", fp)
		}
	}
	if len(fps) > 0 {
		recv.DeleteFingerprint(fps[0])
	}
	recv.InsertFingerprint(fps0(fps))
	if err := recv.check(); err != nil {
		t.Fatal(err)
	}
}

func fps0(fps []uint64) uint64 {
	if len(fps) == 0 {
		return 1
	}
	return fps[len(fps)-1]
}
