package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// FormatVersion is the file format this package writes and reads.
const FormatVersion = 1

const (
	magic = "FLOWMONS"
	// fixedSize is the header before the params, and minSize the
	// smallest file: header, no params, a zero section count, checksum.
	fixedSize = 32
	minSize   = fixedSize + 4 + 4
	// noTime stands for the zero time.Time (no packet seen yet): Unix ns
	// 0 is a real time in a pcap.
	noTime = math.MinInt64
	// MaxNameLen bounds a section's name.
	MaxNameLen = 255
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Section is one named part of a snapshot: a structure's state.
type Section struct {
	Name string
	Data []byte
}

// Header describes a snapshot.
type Header struct {
	// Version is the file's format version (Write writes FormatVersion
	// whatever is given).
	Version uint32
	// Saved is the wall time the snapshot was written: Read refuses it
	// when it is older than the caller's maxAge.
	Saved time.Time
	// PacketTime is the timestamp of the last packet the structures saw
	// (zero: none): the restored structures' clock.
	PacketTime time.Time
	// Params is the caller's canonical description of the structures'
	// configuration (JoinParams); Read refuses a snapshot whose params are
	// not byte for byte the configured ones.
	Params string
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == noTime {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// tempPrefix is the name a snapshot's temporary file starts with: the
// target's base name, so that leftovers are recognized and removed.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// Write writes a snapshot of sections to path atomically: a temporary
// file in path's directory is written, synced, renamed over path, and the
// directory synced. If the process dies on the way, path still holds the
// previous snapshot (or nothing), never a mixture. Temporary files left
// by an earlier crash are removed after a successful write. Concurrent
// Writes to one path are not supported.
func Write(path string, h Header, sections []Section) (err error) {
	if uint64(len(h.Params)) > math.MaxUint32 || uint64(len(sections)) > math.MaxUint32 {
		return fmt.Errorf("write snapshot %s: too many params or sections", path)
	}
	for _, s := range sections {
		if len(s.Name) == 0 || len(s.Name) > MaxNameLen {
			return fmt.Errorf("write snapshot %s: section name %q must be 1 to %d bytes", path, s.Name, MaxNameLen)
		}
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = writeTo(f, h, sections); err != nil {
		return fmt.Errorf("write snapshot %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("write snapshot %s: %w", path, err)
	}
	removeLeftovers(path)
	return nil
}

// writeTo streams the encoding through a buffer, computing the checksum
// on the way: the sections are not copied into one big buffer.
func writeTo(f io.Writer, h Header, sections []Section) error {
	crc := crc32.New(castagnoli)
	w := bufio.NewWriterSize(f, 1<<16)
	out := func(b []byte) {
		crc.Write(b)
		_, _ = w.Write(b) // a bufio.Writer keeps its first error for Flush
	}
	var b [fixedSize]byte
	copy(b[:], magic)
	binary.LittleEndian.PutUint32(b[8:], FormatVersion)
	binary.LittleEndian.PutUint64(b[12:], uint64(unixNano(h.Saved)))
	binary.LittleEndian.PutUint64(b[20:], uint64(unixNano(h.PacketTime)))
	binary.LittleEndian.PutUint32(b[28:], uint32(len(h.Params)))
	out(b[:])
	out([]byte(h.Params))
	out(binary.LittleEndian.AppendUint32(b[:0], uint32(len(sections))))
	for _, s := range sections {
		out(append(b[:0], byte(len(s.Name))))
		out([]byte(s.Name))
		out(binary.LittleEndian.AppendUint64(b[:0], uint64(len(s.Data))))
		out(s.Data)
	}
	// As in out: Flush returns the error.
	_, _ = w.Write(binary.LittleEndian.AppendUint32(b[:0], crc.Sum32()))
	return w.Flush()
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot sync a directory (EINVAL): the rename is
	// then as durable as they make it.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// removeLeftovers removes the temporary files of earlier Writes to path
// that died before their rename: a crash loop must not fill the disk.
func removeLeftovers(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Read reads the snapshot at path and returns its header and sections
// (slices of one buffer the size of the file). It refuses the snapshot
// with an *Error when the file is missing, damaged, of another format
// version, taken with params other than params, or, when maxAge > 0,
// saved more than maxAge before now. A snapshot saved after now (the
// clock was set back) is not refused.
func Read(path, params string, maxAge time.Duration, now time.Time) (Header, []Section, error) {
	data, e := readFile(path)
	if e != nil {
		return Header{}, nil, e
	}
	h, secs, e := decode(data)
	if e != nil {
		e.Path = path
		return Header{}, nil, e
	}
	if age := now.Sub(h.Saved); maxAge > 0 && age > maxAge {
		return Header{}, nil, refuse(path, Stale, nil, "too old to restore: saved %s, %s ago, more than the %s allowed",
			h.Saved.Format(time.RFC3339), age.Round(time.Second), maxAge)
	}
	if d := DiffParams(h.Params, params); d != "" {
		return Header{}, nil, refuse(path, Incompatible, nil, "taken with other settings: %s", d)
	}
	return h, secs, nil
}

// readFile reads the file whole, after checking that it starts like a
// snapshot: a path pointing at some large other file is refused without
// reading it.
func readFile(path string) ([]byte, *Error) {
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, refuse(path, Missing, err, "no snapshot (the file does not exist)")
	case err != nil:
		return nil, refuse(path, Damaged, err, "cannot be read: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, refuse(path, Damaged, err, "cannot be read: %v", err)
	}
	if !st.Mode().IsRegular() {
		return nil, refuse(path, Damaged, nil, "not a regular file (%s)", st.Mode().Type())
	}
	size := st.Size()
	head := make([]byte, min(size, int64(len(magic))))
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, refuse(path, Damaged, err, "cannot be read: %v", err)
	}
	if string(head) != magic {
		_, _, e := decode(head)
		e.Path = path
		return nil, e
	}
	data := make([]byte, size)
	copy(data, head)
	if _, err := io.ReadFull(f, data[len(head):]); err != nil {
		return nil, refuse(path, Damaged, err, "cut short while reading: %v", err)
	}
	return data, nil
}

// decode parses a whole file. Its errors have no Path yet.
func decode(data []byte) (Header, []Section, *Error) {
	damaged := func(format string, a ...any) *Error {
		return refuse("", Damaged, nil, "damaged: "+format, a...)
	}
	if len(data) == 0 {
		return Header{}, nil, damaged("the file is empty")
	}
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		n := min(len(data), len(magic))
		return Header{}, nil, damaged("not a flowmon snapshot (it starts with %q, not %q)", data[:n], magic)
	}
	if len(data) < minSize {
		return Header{}, nil, damaged("cut short: %d bytes, a snapshot has at least %d", len(data), minSize)
	}
	// The checksum first: a version field is believed only in a file that
	// is whole, or damage to it would read as a version from the future.
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[len(body):]); got != want {
		return Header{}, nil, damaged("checksum mismatch (stored %08x, computed %08x): the file was changed or cut short after it was written", want, got)
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != FormatVersion {
		return Header{}, nil, refuse("", Version, nil, "written in snapshot format version %d; this flowmon reads version %d", v, FormatVersion)
	}
	h := Header{
		Version:    FormatVersion,
		Saved:      fromUnixNano(int64(binary.LittleEndian.Uint64(data[12:]))),
		PacketTime: fromUnixNano(int64(binary.LittleEndian.Uint64(data[20:]))),
	}
	off := uint64(fixedSize)
	rest := func() uint64 { return uint64(len(body)) - off }
	p := uint64(binary.LittleEndian.Uint32(data[28:]))
	if p+4 > rest() {
		return Header{}, nil, damaged("params of %d bytes run past the end", p)
	}
	h.Params = string(body[off : off+p])
	off += p
	n := uint64(binary.LittleEndian.Uint32(body[off:]))
	off += 4
	const minSection = 1 + 1 + 8
	if n > rest()/minSection {
		return Header{}, nil, damaged("%d sections cannot fit in %d bytes", n, rest())
	}
	secs := make([]Section, 0, n)
	for i := range n {
		if rest() < 1 {
			return Header{}, nil, damaged("section %d cut short", i+1)
		}
		nl := uint64(body[off])
		off++
		if nl == 0 || nl+8 > rest() {
			return Header{}, nil, damaged("section %d: name of %d bytes", i+1, nl)
		}
		name := string(body[off : off+nl])
		off += nl
		l := binary.LittleEndian.Uint64(body[off:])
		off += 8
		if l > rest() {
			return Header{}, nil, damaged("section %q claims %d bytes, %d are left", name, l, rest())
		}
		secs = append(secs, Section{Name: name, Data: body[off : off+l : off+l]})
		off += l
	}
	if off != uint64(len(body)) {
		return Header{}, nil, damaged("%d bytes after the last section", rest())
	}
	return h, secs, nil
}

// RejectedSuffix is added to a refused snapshot's name by Reject.
const RejectedSuffix = ".rejected"

// Reject renames the snapshot at path, which a start refused, to
// path+RejectedSuffix, replacing an older rejected one, and returns the
// new name: the next Write to path would otherwise erase the file an
// operator needs to see why. Only a regular file is moved.
func Reject(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return "", fmt.Errorf("keep the refused snapshot aside: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("keep the refused snapshot aside: %s is not a regular file", path)
	}
	to := path + RejectedSuffix
	if err := os.Rename(path, to); err != nil {
		return "", fmt.Errorf("keep the refused snapshot aside: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("keep the refused snapshot aside: %w", err)
	}
	return to, nil
}

// Find returns the data of the section named name.
func Find(sections []Section, name string) ([]byte, bool) {
	for _, s := range sections {
		if s.Name == name {
			return s.Data, true
		}
	}
	return nil, false
}
