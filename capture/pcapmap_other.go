//go:build !linux

package capture

import (
	"fmt"
	"os"
)

// mapFile fails: files are read with read(2) on this platform.
func mapFile(*os.File, int) ([]byte, error) {
	return nil, fmt.Errorf("map capture file: %w", ErrNotSupported)
}

func unmap([]byte)            {}
func adviseSequential([]byte) {}
func willNeed([]byte)         {}
func dropPages([]byte)        {}

func fileSize(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
