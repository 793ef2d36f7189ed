//go:build linux

package capture

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of f read-only.
func mapFile(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
}

func unmap(b []byte) { _ = unix.Munmap(b) }

// adviseSequential has the kernel read the file ahead of the reader more
// eagerly than for random access.
func adviseSequential(b []byte) { _ = unix.Madvise(b, unix.MADV_SEQUENTIAL) }

// willNeed starts reading b's pages into the page cache, so the reader
// does not wait on the disk when it gets there.
func willNeed(b []byte) { _ = unix.Madvise(b, unix.MADV_WILLNEED) }

// dropPages takes b's pages out of the process: they stay in the page
// cache, and a touch reads them back in, so a slice into them that is kept
// by mistake reads the file's bytes instead of faulting.
func dropPages(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }

// fileSize is f's size now, without allocating.
func fileSize(f *os.File) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}
