//go:build unix

package cascade

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive flock on dir/LOCK, so that two Filters
// (two processes, or one process twice) never merge into one directory.
// The lock goes with the file's descriptor: closing it, or the process
// dying, releases it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked by another open Filter: %w", dir, ErrLocked)
		}
		return nil, err
	}
	return f, nil
}
