package cascade

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/snapshot"
)

// built returns a closed directory with several levels and the keys in it.
func built(t testing.TB) (string, []uint64) {
	dir := t.TempDir()
	f := mustOpen(t, dir, small)
	var keys []uint64
	for k := range uint64(2700) {
		if err := f.Insert(k * 31); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k*31)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, keys
}

func levelPath(t testing.TB, dir string, level int) string {
	m, _ := filepath.Glob(filepath.Join(dir, levelName(level, 0)[:9]+"*"+levelExt))
	if len(m) != 1 {
		t.Fatalf("level %d files: %v", level, m)
	}
	return m[0]
}

func patch(t testing.TB, path string, off int64, fn func(b []byte)) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fn(b[off:])
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedLevelRefused damages level files in the ways a disk or an
// operator does: every one is refused at Open with a LevelError naming
// the level and saying what is wrong.
func TestDamagedLevelRefused(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		damage    func(t testing.TB, path string)
	}{
		{"flipped data bit", "data page 0: checksum", func(t testing.TB, p string) {
			patch(t, p, PageSize+100, func(b []byte) { b[0] ^= 4 })
		}},
		{"flipped padding bit", "checksum table", func(t testing.TB, p string) {
			st, _ := os.Stat(p)
			patch(t, p, st.Size()-1, func(b []byte) { b[0] ^= 4 })
		}},
		{"header page padding", "past the header", func(t testing.TB, p string) {
			patch(t, p, 1000, func(b []byte) { b[0] = 1 })
		}},
		{"truncated", "cut short", func(t testing.TB, p string) {
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-PageSize)
		}},
		{"torn tail (zeroed checksum page)", "checksum table", func(t testing.TB, p string) {
			st, _ := os.Stat(p)
			patch(t, p, st.Size()-PageSize, func(b []byte) { clear(b) })
		}},
		{"header", "header checksum", func(t testing.TB, p string) {
			patch(t, p, 30, func(b []byte) { b[0]++ })
		}},
		{"header resealed", "disagrees with the manifest", func(t testing.TB, p string) {
			patch(t, p, 0, func(b []byte) {
				b[32]++ // entries
				binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
			})
		}},
		{"missing", "no such file", func(t testing.TB, p string) { os.Remove(p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := built(t)
			path := levelPath(t, dir, 3)
			tc.damage(t, path)
			_, err := Open(dir, small)
			var le *LevelError
			if !errors.As(err, &le) || le.Level != 3 || le.Path != path || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %v", err)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("not ErrCorrupt: %v", err)
			}
			t.Log(err)
			// The directory is untouched and can be opened once repaired
			// by dropping the level.
			o := small
			o.DropDamaged = true
			f, err := Open(dir, o)
			if err != nil {
				t.Fatal(err)
			}
			s := f.Stats()
			if len(s.Dropped) != 1 || s.Dropped[0].Level != 3 {
				t.Fatalf("dropped %+v", s.Dropped)
			}
			for _, l := range s.Levels {
				if l.Level == 3 {
					t.Fatal("level 3 still there")
				}
			}
			f.Close()
			if tc.name != "missing" {
				if _, err := os.Stat(path + ".damaged"); err != nil {
					t.Fatalf("damaged file not kept aside: %v", err)
				}
			}
			// The manifest no longer names it: a plain Open works.
			f = mustOpen(t, dir, small)
			f.Close()
		})
	}
}

// TestQuickOpenFindsDamageOnRead: with QuickOpen a damaged data page is
// not read at Open, but a lookup that reads it fails naming the level.
func TestQuickOpenFindsDamageOnRead(t *testing.T) {
	dir, keys := built(t)
	path := levelPath(t, dir, 3)
	patch(t, path, PageSize+8, func(b []byte) { b[0] ^= 1 })
	o := small
	o.QuickOpen = true
	f, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var le *LevelError
	for _, k := range keys {
		if _, err := f.Contains(k ^ 1); err != nil {
			if !errors.As(err, &le) || le.Level != 3 || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v", err)
			}
			return
		}
	}
	t.Fatal("no lookup read the damaged page")
}

func TestDamagedManifestRefused(t *testing.T) {
	dir, _ := built(t)
	patch(t, manifestPath(dir), 40, func(b []byte) { b[0] ^= 0x80 })
	_, err := Open(dir, small)
	var se *snapshot.Error
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &se) || !errors.Is(err, snapshot.ErrDamaged) {
		t.Fatalf("err %v", err)
	}
	t.Log(err)
	os.Remove(manifestPath(dir))
	if _, err := Open(dir, small); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "level files") {
		t.Fatalf("no manifest, levels left: %v", err)
	}
}

// FuzzManifest opens a directory whose MANIFEST is the fuzzer's: never a
// panic, an error wrapping ErrCorrupt or ErrIncompatible, or (for a
// manifest naming no level) a filter that works.
func FuzzManifest(f *testing.F) {
	dir, _ := built(f)
	good, err := os.ReadFile(manifestPath(dir))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	empty := f.TempDir()
	g := mustOpen(f, empty, small)
	g.Insert(1)
	g.Close()
	b, _ := os.ReadFile(manifestPath(empty))
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range [][]byte{data, resealManifest(data)} {
			dir := t.TempDir()
			if err := os.WriteFile(manifestPath(dir), d, 0o644); err != nil {
				t.Fatal(err)
			}
			g, err := Open(dir, small)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrIncompatible) {
					t.Fatalf("error %v", err)
				}
				continue
			}
			g.Insert(7)
			if ok, err := g.Contains(7); !ok || err != nil {
				t.Fatalf("contains after insert: %t %v", ok, err)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// resealManifest recomputes a snapshot's trailing CRC-32C so that the
// fuzzer reaches the sections behind it.
func resealManifest(b []byte) []byte {
	if len(b) < 4 {
		return b
	}
	b = bytes.Clone(b)
	body := b[:len(b)-4]
	binary.LittleEndian.PutUint32(b[len(body):], crc32.Checksum(body, castagnoli))
	return b
}

// FuzzLevelHeader: parseHeader never panics, and what it accepts writes
// back the same bytes.
func FuzzLevelHeader(f *testing.F) {
	m := levelMeta{level: 3, gen: 9, q: 11, r: 9, slots: 2050, entries: 1500, dataPages: 1, tableCRC: 7}
	f.Add(m.header()[:levelHeader])
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 60 {
			b = bytes.Clone(b)
			if len(b) >= levelHeader {
				binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
			}
		}
		got, err := parseHeader(b)
		if err != nil {
			return
		}
		if again := got.header(); !bytes.Equal(again[:levelHeader], b[:levelHeader]) {
			t.Fatalf("header %x does not write back as %x", b[:levelHeader], again[:levelHeader])
		}
	})
}
