package rotfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Errors of the package.
var (
	// ErrMarkGone: no file of the log has the mark's identity any more
	// (rotated away, or the log was removed).
	ErrMarkGone = errors.New("the marked file is no longer in the log")
	// ErrBadMark: bytes that are not a Mark's binary form.
	ErrBadMark = errors.New("bad mark")
	// ErrNotSupported: the platform gives files no device and inode.
	ErrNotSupported = errors.New("not supported on this platform")
)

// A Mark is where a log ended when it was taken: the current file, by its
// device, inode and birth time, and its size.
type Mark struct {
	Dev, Ino uint64
	// Born is the file's birth time in ns since the epoch, 0 where the
	// filesystem keeps none: an inode a deleted file freed is soon given
	// to a new file, which only its birth time tells apart.
	Born   int64
	Offset int64
}

// Mark syncs the log (Sync) and returns where it ends. The mark stays
// good while its file is path or a rotated file kept.
func (w *File) Mark() (Mark, error) {
	if !identified {
		return Mark{}, fmt.Errorf("mark %s: %w", w.path, ErrNotSupported)
	}
	if err := w.Sync(); err != nil {
		return Mark{}, err
	}
	return Mark{Dev: w.id.dev, Ino: w.id.ino, Born: w.id.born, Offset: w.size}, nil
}

// markLen is the length of a Mark's binary form.
const markLen = 34

const (
	markMagic   = 'R'
	markVersion = 1
)

// AppendBinary appends m's binary form to b, 34 bytes:
//
//	0     'R', the magic
//	1     1, the version
//	2:10  Dev, big endian
//	10:18 Ino, big endian
//	18:26 Born, big endian (two's complement)
//	26:34 Offset, big endian, not negative
func (m Mark) AppendBinary(b []byte) ([]byte, error) {
	if m.Offset < 0 {
		return b, fmt.Errorf("offset %d: %w", m.Offset, ErrBadMark)
	}
	b = append(b, markMagic, markVersion)
	b = binary.BigEndian.AppendUint64(b, m.Dev)
	b = binary.BigEndian.AppendUint64(b, m.Ino)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Born))
	return binary.BigEndian.AppendUint64(b, uint64(m.Offset)), nil
}

// MarshalBinary is AppendBinary(nil).
func (m Mark) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// UnmarshalBinary reads AppendBinary's form; on an error, which wraps
// ErrBadMark, m is unchanged.
func (m *Mark) UnmarshalBinary(b []byte) error {
	switch {
	case len(b) != markLen:
		return fmt.Errorf("%d bytes, want %d: %w", len(b), markLen, ErrBadMark)
	case b[0] != markMagic:
		return fmt.Errorf("magic %#x: %w", b[0], ErrBadMark)
	case b[1] != markVersion:
		return fmt.Errorf("version %d: %w", b[1], ErrBadMark)
	}
	off := binary.BigEndian.Uint64(b[26:])
	if int64(off) < 0 {
		return fmt.Errorf("offset %d: %w", off, ErrBadMark)
	}
	*m = Mark{Dev: binary.BigEndian.Uint64(b[2:]), Ino: binary.BigEndian.Uint64(b[10:]),
		Born: int64(binary.BigEndian.Uint64(b[18:])), Offset: int64(off)}
	return nil
}

// Rewind cuts the log at path back to m, before an Open, when the state
// a restart restores is the one m was taken with: the file of m's
// identity among path, path.1 ... path.MaxFiles is truncated to
// m.Offset, the files written after it (lower numbers) are deleted, and
// it becomes path again, the older files renumbered from path.1 with no
// gap. dropped is the bytes removed. A mark whose file is not there, or
// whose offset ends no line of it, is ErrMarkGone, and one past its
// file's end an error: nothing changes. A Rewind stopped half way (a
// crash) can be run again. A mark is good until the log is rewound to an
// earlier one: then the marks taken after that one name a log that is no
// more, which Rewind cannot always tell.
func Rewind(path string, o Options, m Mark) (dropped int64, err error) {
	if !identified {
		return 0, fmt.Errorf("rewind %s: %w", path, ErrNotSupported)
	}
	o = o.withDefaults()
	want := fileID{dev: m.Dev, ino: m.Ino, born: m.Born}
	at := -1 // the marked file's number
	var sizes []int64
	for i := 0; i <= o.MaxFiles; i++ {
		st, err := statPath(numbered(path, i))
		if errors.Is(err, fs.ErrNotExist) {
			sizes = append(sizes, 0)
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("rewind %s: %w", path, err)
		}
		sizes = append(sizes, st.size)
		if st.regular && st.id == want {
			at = i
			break
		}
	}
	if at < 0 {
		return 0, fmt.Errorf("rewind %s to %d bytes of inode %d: %w", path, m.Offset, m.Ino, ErrMarkGone)
	}
	if m.Offset > sizes[at] {
		return 0, fmt.Errorf("rewind %s: %s has %d bytes, the mark is at %d", path, numbered(path, at), sizes[at], m.Offset)
	}
	if ok, err := lineEnd(numbered(path, at), m.Offset); err != nil {
		return 0, fmt.Errorf("rewind %s: %w", path, err)
	} else if !ok {
		return 0, fmt.Errorf("rewind %s: byte %d of %s ends no line: %w", path, m.Offset, numbered(path, at), ErrMarkGone)
	}
	if err := truncateSync(numbered(path, at), m.Offset); err != nil {
		return 0, fmt.Errorf("rewind %s: %w", path, err)
	}
	dropped = sizes[at] - m.Offset
	for i := at - 1; i >= 0; i-- {
		err := os.Remove(numbered(path, i))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return dropped, fmt.Errorf("rewind %s: %w", path, err)
		}
		if err == nil {
			dropped += sizes[i]
		}
	}
	if at > 0 {
		if err := os.Rename(numbered(path, at), path); err != nil {
			return dropped, fmt.Errorf("rewind %s: %w", path, err)
		}
	}
	if err := compact(path, o.MaxFiles); err != nil {
		return dropped, fmt.Errorf("rewind %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return dropped, fmt.Errorf("rewind %s: %w", path, err)
	}
	return dropped, nil
}

// compact renumbers the rotated files path.1 ... path.max that exist as
// path.1, path.2, ..., in their order.
func compact(path string, max int) error {
	next := 1
	for i := 1; i <= max; i++ {
		_, err := os.Lstat(numbered(path, i))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if i != next {
			if err := os.Rename(numbered(path, i), numbered(path, next)); err != nil {
				return err
			}
		}
		next++
	}
	return nil
}

// lineEnd says whether off is where a line of the file ends (or 0).
func lineEnd(name string, off int64) (bool, error) {
	if off == 0 {
		return true, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off-1); err != nil {
		return false, err
	}
	return b[0] == '\n', nil
}

func truncateSync(name string, size int64) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
