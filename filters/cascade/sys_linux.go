package cascade

import (
	"os"

	"golang.org/x/sys/unix"
)

// directSupported reports whether Options.Uncached can be honoured.
func directSupported() error { return nil }

// openDirect opens path for reads that bypass the page cache (O_DIRECT:
// offsets, lengths and buffers aligned to the page).
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
}

// dropCache asks the kernel to drop f's pages from the page cache (they
// are clean: f was synced).
func dropCache(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// alignedBuf returns n bytes aligned to the page, as O_DIRECT wants: an
// anonymous mapping, released by freeBuf.
func alignedBuf(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n) // only O_DIRECT needs the alignment, and it then fails loudly
	}
	return b
}

// freeBuf releases a buffer from alignedBuf (a Go slice, if the mapping
// failed, is left to the collector).
func freeBuf(b []byte) { _ = unix.Munmap(b) }
