package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	saved   = time.Unix(1_700_000_000, 123)
	pktTime = time.Unix(1_699_999_990, 456)
	params  = JoinParams(P("capacity", 65536), P("backend", "dleft"), P("fp_rate", 0.001))
)

func testSections() []Section {
	return []Section{
		{Name: "acsm/0", Data: bytes.Repeat([]byte{1, 2, 3}, 1000)},
		{Name: "dedup/0", Data: nil},
		{Name: "flowcount/0", Data: []byte("counter")},
	}
}

func writeTest(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.snap")
	if err := Write(path, Header{Saved: saved, PacketTime: pktTime, Params: params}, testSections()); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRoundTrip(t *testing.T) {
	path := writeTest(t)
	h, secs, err := Read(path, params, time.Hour, saved.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != FormatVersion || !h.Saved.Equal(saved) || !h.PacketTime.Equal(pktTime) || h.Params != params {
		t.Errorf("header %+v", h)
	}
	want := testSections()
	if len(secs) != len(want) {
		t.Fatalf("%d sections, want %d", len(secs), len(want))
	}
	for i := range want {
		if secs[i].Name != want[i].Name || !bytes.Equal(secs[i].Data, want[i].Data) {
			t.Errorf("section %d: %q (%d bytes), want %q (%d bytes)", i, secs[i].Name, len(secs[i].Data), want[i].Name, len(want[i].Data))
		}
	}
	if d, ok := Find(secs, "flowcount/0"); !ok || string(d) != "counter" {
		t.Errorf("Find: %q %v", d, ok)
	}
	// No temporary file is left beside the snapshot.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d files, want 1", len(ents))
	}
}

func TestZeroPacketTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	if err := Write(path, Header{Saved: saved}, nil); err != nil {
		t.Fatal(err)
	}
	h, secs, err := Read(path, "", 0, saved)
	if err != nil || !h.PacketTime.IsZero() || len(secs) != 0 {
		t.Fatalf("%+v %v %v", h, secs, err)
	}
}

// rewrite applies fn to the file's bytes and, if fix, recomputes the
// checksum so that only fn's change is seen.
func rewrite(t *testing.T, path string, fix bool, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = fn(b)
	if fix && len(b) >= 4 {
		binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRefusals(t *testing.T) {
	now := saved.Add(time.Minute)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		params string
		maxAge time.Duration
		reason Reason
		msg    string
	}{
		{"missing", func(t *testing.T, p string) { os.Remove(p) }, params, 0, Missing, "does not exist"},
		{"directory", func(t *testing.T, p string) { os.Remove(p); os.Mkdir(p, 0o700) }, params, 0, Damaged, "not a regular file"},
		{"other file", func(t *testing.T, p string) {
			os.WriteFile(p, bytes.Repeat([]byte("#!/bin/sh\n"), 1000), 0o600)
		}, params, 0, Damaged, `not a flowmon snapshot (it starts with "#!/bin/s"`},
		{"empty", func(t *testing.T, p string) { rewrite(t, p, false, func(b []byte) []byte { return b[:0] }) }, params, 0, Damaged, "empty"},
		{"magic", func(t *testing.T, p string) {
			rewrite(t, p, true, func(b []byte) []byte { b[0] = 'X'; return b })
		}, params, 0, Damaged, "not a flowmon snapshot"},
		{"truncated header", func(t *testing.T, p string) {
			rewrite(t, p, false, func(b []byte) []byte { return b[:20] })
		}, params, 0, Damaged, "cut short"},
		{"truncated body", func(t *testing.T, p string) {
			rewrite(t, p, false, func(b []byte) []byte { return b[:len(b)-100] })
		}, params, 0, Damaged, "checksum"},
		{"bit flip", func(t *testing.T, p string) {
			rewrite(t, p, false, func(b []byte) []byte { b[len(b)/2] ^= 4; return b })
		}, params, 0, Damaged, "checksum mismatch"},
		{"version", func(t *testing.T, p string) {
			rewrite(t, p, true, func(b []byte) []byte { b[8] = 2; return b })
		}, params, 0, Version, "format version 2; this flowmon reads version 1"},
		{"damaged version", func(t *testing.T, p string) {
			rewrite(t, p, false, func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0x5a5a5a5b); return b })
		}, params, 0, Damaged, "damaged: checksum mismatch"},
		{"params", func(t *testing.T, p string) {}, JoinParams(P("capacity", 131072), P("backend", "dleft"), P("fp_rate", 0.001)),
			0, Incompatible, "capacity is 65536 in the snapshot, 131072 configured"},
		{"stale", func(t *testing.T, p string) {}, params, 30 * time.Second, Stale, "1m0s ago, more than the 30s allowed"},
		{"huge section", func(t *testing.T, p string) {
			rewrite(t, p, true, func(b []byte) []byte {
				off := fixedSize + len(params) + 4 + 1 + len("acsm/0")
				binary.LittleEndian.PutUint64(b[off:], 1<<40)
				return b
			})
		}, params, 0, Damaged, "claims 1099511627776 bytes"},
		{"many sections", func(t *testing.T, p string) {
			rewrite(t, p, true, func(b []byte) []byte {
				binary.LittleEndian.PutUint32(b[fixedSize+len(params):], 1<<31)
				return b
			})
		}, params, 0, Damaged, "sections cannot fit"},
		{"trailing", func(t *testing.T, p string) {
			rewrite(t, p, true, func(b []byte) []byte {
				binary.LittleEndian.PutUint32(b[fixedSize+len(params):], 2)
				return b
			})
		}, params, 0, Damaged, "after the last section"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTest(t)
			tc.change(t, path)
			_, _, err := Read(path, tc.params, tc.maxAge, now)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if e.Reason != tc.reason || !errors.Is(err, sentinels[tc.reason]) {
				t.Errorf("reason %s, want %s (%v)", e.Reason, tc.reason, err)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), path) {
				t.Errorf("message %q lacks %q or the path", err, tc.msg)
			}
		})
	}
}

// TestCrashBeforeRename: a write that dies after writing its temporary
// file and before the rename leaves the previous snapshot readable, and
// the next Write removes the leftover.
func TestCrashBeforeRename(t *testing.T) {
	path := writeTest(t)
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix(path)+"*")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTo(f, Header{Saved: saved.Add(time.Hour), Params: "other"}, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// ... the process dies here: no rename.
	h, secs, err := Read(path, params, 0, saved)
	if err != nil || h.Params != params || len(secs) != 3 {
		t.Fatalf("after the crash: %+v, %d sections, %v", h, len(secs), err)
	}
	if err := Write(path, Header{Saved: saved, Params: params}, nil); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("%d files after the next write, want the snapshot alone", len(ents))
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "s"), Header{}, []Section{{Name: ""}}); err == nil {
		t.Error("empty section name accepted")
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir"), Header{}, nil); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("failed writes left %d files", len(ents))
	}
}

func TestDiffParams(t *testing.T) {
	a := JoinParams(P("x", 1), P("y", "b"))
	for _, tc := range []struct{ got, want, msg string }{
		{a, a, ""},
		{a, JoinParams(P("x", 1), P("y", "c")), "y is b in the snapshot, c configured"},
		{a, JoinParams(P("x", 1)), "the snapshot has y=b, not configured"},
		{JoinParams(P("x", 1)), a, "the snapshot lacks y=b (configured)"},
		{"free form", "other", `line 1 is "free form" in the snapshot, "other" configured`},
		{"acsm={Backend:4 Capacity:65536 Timeouts:{New:1m0s Closed:2m0s} Labels:map[a:b]}\n",
			"acsm={Backend:4 Capacity:65536 Timeouts:{New:1m0s Closed:3m0s} Labels:map[a:b]}\n",
			"acsm.Timeouts.Closed is 2m0s in the snapshot, 3m0s configured"},
		{"acsm={Backend:4 Capacity:65536}\n", "acsm={Backend:4 Capacity:131072}\n", "acsm.Capacity is 65536 in the snapshot, 131072 configured"},
		{"x={A:1 B:2}\n", "x={A:1}\n", "x is {A:1 B:2} in the snapshot, {A:1} configured"},
	} {
		if got := DiffParams(tc.got, tc.want); got != tc.msg {
			t.Errorf("DiffParams(%q, %q) = %q, want %q", tc.got, tc.want, got, tc.msg)
		}
	}
}

// FuzzRead: no input makes Read's decoder panic or return more bytes
// than it was given; every change to a valid file is refused as damaged,
// or as another version when the version field changed and the checksum
// holds.
func FuzzRead(f *testing.F) {
	valid := encodeTest(f)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte(magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, secs, e := decode(b)
		if e == nil {
			checkDecoded(t, b, h, secs)
			return
		}
		switch {
		case e.Reason == Version && len(b) >= minSize && binary.LittleEndian.Uint32(b[8:]) != FormatVersion &&
			crc32.Checksum(b[:len(b)-4], castagnoli) == binary.LittleEndian.Uint32(b[len(b)-4:]):
		case e.Reason == Damaged:
		default:
			t.Fatalf("refused as %s: %v", e.Reason, e)
		}
	})
}

// FuzzReadChecksummed fuzzes the layout behind the checksum: the input
// gets a valid checksum, so the decoder's length checks are what stands
// between a forged header and a panic or a huge allocation.
func FuzzReadChecksummed(f *testing.F) {
	valid := encodeTest(f)
	f.Add(valid[:len(valid)-4])
	f.Add(valid[:fixedSize])
	f.Fuzz(func(t *testing.T, body []byte) {
		b := binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, castagnoli))
		h, secs, e := decode(b)
		if e == nil {
			checkDecoded(t, b, h, secs)
			return
		}
		if e.Reason != Damaged && e.Reason != Version {
			t.Fatalf("refused as %s: %v", e.Reason, e)
		}
	})
}

func encodeTest(f *testing.F) []byte {
	path := filepath.Join(f.TempDir(), "seed")
	if err := Write(path, Header{Saved: saved, PacketTime: pktTime, Params: params}, testSections()); err != nil {
		f.Fatal(err)
	}
	valid, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return valid
}

// checkDecoded: what decoded fits in the input and encodes back to it.
func checkDecoded(t *testing.T, b []byte, h Header, secs []Section) {
	total := len(h.Params)
	for _, s := range secs {
		total += len(s.Name) + len(s.Data)
	}
	if total > len(b) {
		t.Fatalf("decoded %d bytes from %d", total, len(b))
	}
	var re bytes.Buffer
	if err := writeTo(&re, h, secs); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(re.Bytes(), b) {
		t.Fatalf("decoded input does not encode back to itself")
	}
}
