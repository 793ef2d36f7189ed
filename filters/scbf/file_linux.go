//go:build linux

package scbf

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// bootID is this boot's id (the kernel's random boot_id, hashed, never 0),
// or 0 if the system has none. Tests replace it.
var bootID = sync.OnceValue(func() uint64 {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return 0
	}
	return xxh3.Hash(bytes.TrimSpace(b)) | 1
})

// Create creates (or replaces) the file at path with an empty filter and
// holds it locked until Close. The file is clean, and synced, on return.
func Create(path string, o Options) (*Filter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	o = o.withDefaults()
	k, cpf := o.shape(0)
	size := uint64(headerSize+subHeader) + counterBytes(k, cpf)
	if size > math.MaxInt {
		return nil, fmt.Errorf("create %s: %w: capacity %d needs %d bytes, more than this platform maps", path, ErrInvalidOptions, o.Capacity, size)
	}
	file, err := openLocked(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("create scaling counting bloom filter: %w", err)
	}
	fd := int(file.Fd())
	if err := errors.Join(unix.Ftruncate(fd, 0), unix.Ftruncate(fd, int64(size))); err != nil {
		file.Close()
		return nil, fmt.Errorf("create %s: size to %d bytes: %w", path, size, err)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("create %s: map: %w", path, err)
	}
	f := &Filter{opts: o, mem: mem, file: file, boot: bootID()}
	f.initImage()
	if err := f.syncAll(); err != nil {
		// The error being returned is the one that matters.
		_ = f.release()
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return f, nil
}

// Open maps the filter file at path, checks it and says how it was left
// (see OpenState). A Clean or Consistent file opens; one that must be
// rebuilt returns its OpenState and an error wrapping ErrRebuild; a
// damaged one, or one of another format version, is refused (ErrCorrupt,
// ErrVersion). The file is locked until Close (ErrLocked if it is held).
func Open(path string) (*Filter, OpenState, error) {
	file, err := openLocked(path, os.O_RDWR)
	if err != nil {
		return nil, OpenState{}, fmt.Errorf("open scaling counting bloom filter: %w", err)
	}
	fail := func(st OpenState, err error) (*Filter, OpenState, error) {
		file.Close()
		return nil, st, fmt.Errorf("open %s: %w", path, err)
	}
	fi, err := file.Stat()
	if err != nil {
		return fail(OpenState{}, err)
	}
	if fi.Size() < headerSize {
		return fail(OpenState{}, corrupt("%d bytes is shorter than the %d-byte header", fi.Size(), headerSize))
	}
	if fi.Size() > math.MaxInt {
		return fail(OpenState{}, corrupt("%d bytes: more than this platform maps", fi.Size()))
	}
	mem, err := unix.Mmap(int(file.Fd()), 0, int(fi.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail(OpenState{}, fmt.Errorf("map: %w", err))
	}
	l, err := load(mem, bootID())
	if err == nil && l.state.State == Rebuild {
		err = fmt.Errorf("%w: %s", ErrRebuild, l.state)
	}
	if err != nil {
		// The error being returned is the one that matters.
		_ = unix.Munmap(mem)
		return fail(l.state, err)
	}
	f := fromLoaded(l, mem, bootID())
	f.file = file
	if l.end < len(mem) {
		// A growth cut short, undone: drop the sub-filter it began.
		if err := f.resizeFile(l.end); err != nil {
			// The error being returned is the one that matters.
			_ = f.release()
			return nil, l.state, fmt.Errorf("open %s: %w", path, err)
		}
	}
	return f, l.state, nil
}

func openLocked(path string, flag int) (*os.File, error) {
	file, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(file.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		file.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w: another filter holds it", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return file, nil
}

// resizeFile sets the file's size and the mapping's: ftruncate then
// mremap to grow, mremap then ftruncate to shrink, so no mapped page is
// ever past the end of the file.
func (f *Filter) resizeFile(size int) error {
	fd, old := int(f.file.Fd()), len(f.mem)
	if size > old {
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			return fmt.Errorf("extend %s to %d bytes: %w", f.file.Name(), size, err)
		}
	}
	mem, err := unix.Mremap(f.mem, size, unix.MREMAP_MAYMOVE)
	if err != nil {
		if size > old {
			_ = unix.Ftruncate(fd, int64(old)) // leave the file as it was
		}
		return fmt.Errorf("remap %s to %d bytes: %w", f.file.Name(), size, err)
	}
	f.mem = mem
	if size < old {
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			return fmt.Errorf("truncate %s to %d bytes: %w", f.file.Name(), size, err)
		}
	}
	return nil
}

func (f *Filter) syncAll() error {
	if err := unix.Msync(f.mem, unix.MS_SYNC); err != nil {
		return fmt.Errorf("msync: %w", err)
	}
	return nil
}

// syncHeader msyncs the page holding the header.
func (f *Filter) syncHeader() error {
	if err := unix.Msync(f.mem[:min(len(f.mem), os.Getpagesize())], unix.MS_SYNC); err != nil {
		return fmt.Errorf("msync header: %w", err)
	}
	return nil
}

// release unmaps and closes the file, which drops the lock.
func (f *Filter) release() error {
	err := unix.Munmap(f.mem)
	if err != nil {
		err = fmt.Errorf("unmap %s: %w", f.file.Name(), err)
	}
	return errors.Join(err, f.file.Close())
}
