package cascadeeval

import (
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens path for reads and writes that bypass the page cache
// (O_DIRECT), creating it.
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_DIRECT, 0o644)
}

// alignedBuf returns n bytes aligned to the page (an anonymous mapping),
// as O_DIRECT wants.
func alignedBuf(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

func freeBuf(b []byte) { _ = unix.Munmap(b) }

// openDirectRead opens path read-only with O_DIRECT.
func openDirectRead(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
}
