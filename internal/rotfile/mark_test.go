package rotfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func mustMark(t *testing.T, w *File) Mark {
	t.Helper()
	if !identified {
		t.Skip("files have no identity on this platform")
	}
	m, err := w.Mark()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMarkRewind: a mark taken after 0, 1 or several rotations cuts the
// log back to it, the marked file path again and the older ones
// numbered from path.1; the bytes dropped are counted.
func TestMarkRewind(t *testing.T) {
	o := Options{MaxSize: 4, MaxFiles: 5}
	for _, c := range []struct {
		name  string
		after []string // written after the mark
		want  []string
		drop  int64
	}{
		{"nothing after", nil, []string{"c\n", "a\nb\n"}, 0},
		{"same file", []string{"d\n"}, []string{"c\n", "a\nb\n"}, 2},
		{"one rotation", []string{"d\n", "e\nf\n"}, []string{"c\n", "a\nb\n"}, 6},
		{"several rotations", []string{"d\ne\nf\ng\nh\ni\nj\n"}, []string{"c\n", "a\nb\n"}, 14},
	} {
		path := filepath.Join(t.TempDir(), "log")
		w := mustOpen(t, path, o)
		mustWrite(t, w, "a\nb\nc\n") // c starts path.0
		m := mustMark(t, w)
		for _, s := range c.after {
			mustWrite(t, w, s)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		dropped, err := Rewind(path, o, m)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := files(t, path, o.MaxFiles); !equal(got, c.want) || dropped != c.drop {
			t.Errorf("%s: files %q, dropped %d; want %q, %d", c.name, got, dropped, c.want, c.drop)
		}
		// The log goes on from the mark.
		w = mustOpen(t, path, o)
		mustWrite(t, w, "z\n")
		if got, want := files(t, path, o.MaxFiles), append([]string{"c\nz\n"}, c.want[1:]...); !equal(got, want) {
			t.Errorf("%s: after a write, files %q, want %q", c.name, got, want)
		}
	}
}

// TestRewindMarkInRotatedFile: a mark in a file rotated since keeps the
// files older than it, renumbered without a gap.
func TestRewindMarkInRotatedFile(t *testing.T) {
	o := Options{MaxSize: 2, MaxFiles: 6}
	path := filepath.Join(t.TempDir(), "log")
	w := mustOpen(t, path, o)
	mustWrite(t, w, "a\nb\nc\n") // c in path, b path.1, a path.2
	m := mustMark(t, w)
	mustWrite(t, w, "d\ne\n") // c now path.2
	w.Close()
	if _, err := Rewind(path, o, m); err != nil {
		t.Fatal(err)
	}
	if got, want := files(t, path, o.MaxFiles), []string{"c\n", "b\n", "a\n"}; !equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

// TestRewindMarkGone: a mark whose file was rotated away is ErrMarkGone,
// and the files are left as they were; so is one past its file's end.
func TestRewindMarkGone(t *testing.T) {
	o := Options{MaxSize: 2, MaxFiles: 2}
	path := filepath.Join(t.TempDir(), "log")
	w := mustOpen(t, path, o)
	mustWrite(t, w, "a\n")
	m := mustMark(t, w)
	mustWrite(t, w, "b\nc\nd\n") // a's file goes
	w.Close()
	before := files(t, path, o.MaxFiles)
	if _, err := Rewind(path, o, m); !errors.Is(err, ErrMarkGone) {
		t.Errorf("rewind to a file rotated away: %v, want ErrMarkGone", err)
	}
	if got := files(t, path, o.MaxFiles); !equal(got, before) {
		t.Errorf("files %q after a failed rewind, want %q", got, before)
	}
	w = mustOpen(t, path, o)
	m = mustMark(t, w)
	m.Offset++
	w.Close()
	if _, err := Rewind(path, o, m); err == nil || errors.Is(err, ErrMarkGone) {
		t.Errorf("rewind past the file's end: %v", err)
	}
	if got := files(t, path, o.MaxFiles); !equal(got, before) {
		t.Errorf("files %q after a failed rewind, want %q", got, before)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Rewind(path, o, m); !errors.Is(err, ErrMarkGone) {
		t.Errorf("rewind with the log removed: %v, want ErrMarkGone", err)
	}
}

// TestMarkAfterFailedWrite: a mark taken after a failed write (the file
// closed) reopens the file and says where its whole lines end.
func TestMarkAfterFailedWrite(t *testing.T) {
	o := Options{MaxSize: 2, MaxFiles: 1}
	path := filepath.Join(t.TempDir(), "log")
	w := mustOpen(t, path, o)
	mustWrite(t, w, "a\n")
	if err := os.Mkdir(path+".1", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path+".1", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("b\n")); err == nil {
		t.Fatal("a rotation onto a directory worked")
	}
	m := mustMark(t, w)
	st, err := statPath(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.id != (fileID{m.Dev, m.Ino, m.Born}) || m.Offset != 2 {
		t.Errorf("mark %+v, want %+v at 2", m, st.id)
	}
}

// TestMarkBinary: a mark's binary form reads back; what is not one is
// ErrBadMark and leaves the receiver.
func TestMarkBinary(t *testing.T) {
	m := Mark{Dev: 0x0102030405060708, Ino: 42, Born: -5, Offset: 1 << 40}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != markLen || b[0] != 'R' || b[1] != 1 {
		t.Errorf("binary form %x", b)
	}
	var got Mark
	if err := got.UnmarshalBinary(b); err != nil || got != m {
		t.Errorf("read back %+v, %v", got, err)
	}
	if _, err := (Mark{Offset: -1}).MarshalBinary(); !errors.Is(err, ErrBadMark) {
		t.Errorf("negative offset: %v", err)
	}
	for _, bad := range [][]byte{nil, b[:33], append(bytes.Clone(b), 0), {'X', 1}, append([]byte{'R', 2}, b[2:]...),
		append(append([]byte{}, b[:26]...), 0x80, 0, 0, 0, 0, 0, 0, 0)} {
		keep := got
		if err := got.UnmarshalBinary(bad); !errors.Is(err, ErrBadMark) || got != keep {
			t.Errorf("%x: %v, mark %+v", bad, err, got)
		}
	}
}

func FuzzMarkBinary(f *testing.F) {
	b, _ := Mark{Dev: 1, Ino: 2, Born: 3, Offset: 4}.MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := Mark{Dev: 7, Ino: 7, Offset: 7}
		if err := m.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrBadMark) || m != (Mark{Dev: 7, Ino: 7, Offset: 7}) {
				t.Fatalf("%v, mark %+v", err, m)
			}
			return
		}
		again, err := m.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("round trip %x -> %+v -> %x, %v", b, m, again, err)
		}
	})
}
