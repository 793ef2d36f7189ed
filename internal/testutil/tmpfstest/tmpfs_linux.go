package tmpfstest

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// New mounts a tmpfs of size bytes (mode 0700, root's) on a new directory
// and returns it. The mount is made in the test's mount namespace before
// anything else starts, so a process the test starts after sees it.
func New(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs takes root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// Resize makes the tmpfs at dir size bytes, its files kept: room again
// for a test that filled it.
func Resize(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatal(err)
	}
}
