//go:build linux

package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLockNamesTheHolder(t *testing.T) {
	name := filepath.Join(t.TempDir(), "flows.jsonl")
	a, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := Lock(a, name); err != nil {
		t.Fatal(err)
	}
	// flock locks belong to open file descriptions: a second open in the
	// same process conflicts as another process's would.
	b, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = Lock(b, name)
	var he *HeldError
	if !errors.As(err, &he) || !errors.Is(err, ErrHeld) {
		t.Fatalf("second lock: %v, want a HeldError", err)
	}
	if he.Path != name || he.PID != os.Getpid() {
		t.Errorf("held error %+v, want path %s and PID %d", he, name, os.Getpid())
	}
	if !strings.Contains(err.Error(), "PID "+strconv.Itoa(os.Getpid())) {
		t.Errorf("error %q does not name the PID", err)
	}
	a.Close()
	if err := Lock(b, name); err != nil {
		t.Errorf("lock after the holder closed: %v", err)
	}
}

func TestTake(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.snap")
	h, err := Take(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path + ".lock")
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q (%v), want the PID", b, err)
	}
	_, err = Take(path)
	var he *HeldError
	if !errors.As(err, &he) || he.Path != path || he.PID != os.Getpid() {
		t.Fatalf("second take: %v, want a HeldError naming %s and PID %d", err, path, os.Getpid())
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Errorf("lock file left after release: %v", err)
	}
	h2, err := Take(path)
	if err != nil {
		t.Fatalf("take after release: %v", err)
	}
	h2.Release()
}

// TestTakeAfterRemoval: a lock on a file that its holder removed at
// release, opened before the removal, must not count, or two takers
// could each hold a lock, one on the removed file and one on the new.
func TestTakeAfterRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.snap")
	h, err := Take(path)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := os.OpenFile(path+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	h.Release()
	if err := Lock(stale, path); err != nil {
		t.Fatal(err) // the removed file, free now
	}
	h2, err := Take(path) // locks the new file, as it must
	if err != nil {
		t.Fatalf("take while only a removed file is locked: %v", err)
	}
	defer h2.Release()
	if _, err := Take(path); !errors.Is(err, ErrHeld) {
		t.Errorf("third take: %v, want ErrHeld", err)
	}
}

func TestHolderIn(t *testing.T) {
	locks := "1: POSIX  ADVISORY  WRITE 11 08:01:77 0 EOF\n" +
		"2: FLOCK  ADVISORY  WRITE 4321 fd:00:77 0 EOF\n" +
		"2: -> FLOCK  ADVISORY  WRITE 99 fd:00:77 0 EOF\n" +
		"3: FLOCK  ADVISORY  WRITE 55 fd:01:77 0 EOF\n"
	for id, want := range map[string]int{"fd:00:77": 4321, "fd:01:77": 55, "08:01:77": 0, "fd:00:78": 0} {
		if got := holderIn([]byte(locks), id); got != want {
			t.Errorf("holder of %s: %d, want %d", id, got, want)
		}
	}
}
