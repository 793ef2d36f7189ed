// Package lockfile keeps two processes from writing one file: a second
// agent restoring a running agent's snapshot and cutting its flow log,
// or two replays truncating one output, each lose records that nothing
// can bring back. The locks are flock(2) locks, which the kernel drops
// when the process ends however it ends, so a crash never leaves a stale
// lock behind, and the holder's PID is read from /proc/locks rather than
// trusted from a file.
package lockfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrHeld is what a HeldError wraps.
var ErrHeld = errors.New("held by another process")

// HeldError says that another process holds the lock on Path.
type HeldError struct {
	// Path is the file the caller meant to write.
	Path string
	// PID is the holder's process ID, 0 when the kernel did not say.
	PID int
}

func (e *HeldError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s is in use by another process (PID %d)", e.Path, e.PID)
	}
	return fmt.Sprintf("%s is in use by another process", e.Path)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// Lock takes an exclusive lock on the open file f without waiting,
// or returns a HeldError naming name (the file the caller writes) and the
// holder. The lock lasts as long as f is open.
func Lock(f *os.File, name string) error {
	held, err := flock(f)
	if err != nil {
		return fmt.Errorf("lock %s: %w", name, err)
	}
	if held {
		return &HeldError{Path: name, PID: holder(f)}
	}
	return nil
}

// Held is a lock on a file that is replaced or renamed while it is
// written (a snapshot written atomically, a rotated log), taken on a
// file of its own beside it, PATH.lock, whose inode stays put.
type Held struct {
	f    *os.File
	path string
}

// Take locks path through PATH.lock, made if missing, without waiting:
// a HeldError names path and the holder. The lock file holds the
// holder's PID for people to read; it is removed at Release.
func Take(path string) (*Held, error) {
	name := path + ".lock"
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if err := Lock(f, path); err != nil {
			f.Close()
			return nil, err
		}
		// A holder that released its lock removed the file it locked:
		// a lock taken on that file, opened before the removal, locks
		// nothing that the next process can see. Only a lock on the file
		// the name still holds counts.
		if same, err := sameFile(f, name); err != nil || !same {
			f.Close()
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("lock %s: %w", path, err)
			}
			continue
		}
		if err := f.Truncate(0); err == nil {
			// The PID in the file is for people; the lock is held either way.
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &Held{f: f, path: name}, nil
	}
}

// Release removes the lock file and drops the lock: removed first, so
// that a process waiting on the old file finds it gone (Take).
func (h *Held) Release() error {
	if h == nil || h.f == nil {
		return nil
	}
	os.Remove(h.path)
	err := h.f.Close()
	h.f = nil
	return err
}

// holder finds the process that holds a flock lock on f in /proc/locks,
// whose lines read "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
// (the device in hex, the inode in decimal); 0 when none is found.
func holder(f *os.File) int {
	id, err := fileID(f)
	if err != nil {
		return 0
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	return holderIn(b, id)
}

// holderIn finds the holder of the flock on the file id names, as
// /proc/locks spells it ("08:01:5678"), in locks.
func holderIn(locks []byte, id string) int {
	sc := bufio.NewScanner(bytes.NewReader(locks))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		// "->" marks a waiter, which holds nothing.
		if len(fs) < 6 || fs[1] != "FLOCK" || fs[2] == "->" {
			continue
		}
		if fs[5] != id {
			continue
		}
		if pid, err := strconv.Atoi(fs[4]); err == nil {
			return pid
		}
	}
	return 0
}
