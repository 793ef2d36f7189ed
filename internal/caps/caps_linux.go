package caps

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The capabilities a live source needs to open its capture again (an
// interface that comes back): AF_PACKET and libpcap sockets need
// CAP_NET_RAW; the eBPF program's attach needs CAP_BPF, CAP_NET_ADMIN and
// CAP_PERFMON (kernels before 5.8, which lack CAP_BPF, want CAP_SYS_ADMIN,
// which the agent does not keep).
const (
	NetAdmin = unix.CAP_NET_ADMIN
	NetRaw   = unix.CAP_NET_RAW
	Perfmon  = unix.CAP_PERFMON
	BPF      = unix.CAP_BPF
)

// ErrAllThreads is returned where the process's threads cannot all be
// changed: a cgo build.
var ErrAllThreads = errors.New("capabilities: cannot change every thread's in a cgo build")

// Limit drops from every thread's bounding set each capability not in
// keep, so that nothing the process runs can regain them, when the
// process may (CAP_SETPCAP; without it, as under a systemd unit that set
// the bounding set itself, it leaves the set as it is).
func Limit(keep ...int) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	have, err := get()
	if err != nil {
		return err
	}
	if !has(have.effective, unix.CAP_SETPCAP) {
		return nil
	}
	for c := 0; c <= last; c++ {
		if slices.Contains(keep, c) {
			continue
		}
		if err := allThreads(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); err != nil {
			return fmt.Errorf("capabilities: drop %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// KeepOnSetuid has every thread keep its permitted capabilities across a
// change of user from root (PR_SET_KEEPCAPS), so that Drop can then
// raise those to keep.
func KeepOnSetuid() error {
	if err := allThreads(unix.SYS_PRCTL, unix.PR_SET_KEEPCAPS, 1, 0); err != nil {
		return fmt.Errorf("capabilities: keep them across setuid: %w", err)
	}
	return nil
}

// Drop makes keep, less what the process does not hold, every thread's
// permitted and effective capabilities, and empties the inheritable and
// ambient sets: a capability dropped cannot come back.
func Drop(keep ...int) error {
	have, err := get()
	if err != nil {
		return err
	}
	var want sets
	for _, c := range keep {
		if has(have.permitted, c) {
			want.permitted[c/32] |= 1 << (c % 32)
		}
	}
	want.effective = want.permitted
	if err := allThreads(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil &&
		!errors.Is(err, syscall.EINVAL) { // kernels before 4.3 have no ambient set
		return fmt.Errorf("capabilities: clear the ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := want.data()
	if err := allThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err != nil {
		return fmt.Errorf("capabilities: capset: %w", err)
	}
	return nil
}

type sets struct{ effective, permitted, inheritable [2]uint32 }

func (s sets) data() [2]unix.CapUserData {
	var d [2]unix.CapUserData
	for i := range d {
		d[i] = unix.CapUserData{Effective: s.effective[i], Permitted: s.permitted[i], Inheritable: s.inheritable[i]}
	}
	return d
}

func has(set [2]uint32, c int) bool { return c < 64 && set[c/32]&(1<<(c%32)) != 0 }

// get reads the calling thread's sets, which all threads share until
// this package changes them, on all at once.
func get() (sets, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var d [2]unix.CapUserData
	if err := unix.Capget(&hdr, &d[0]); err != nil {
		return sets{}, fmt.Errorf("capabilities: capget: %w", err)
	}
	var s sets
	for i := range d {
		s.effective[i], s.permitted[i], s.inheritable[i] = d[i].Effective, d[i].Permitted, d[i].Inheritable
	}
	return s, nil
}

// lastCap is the kernel's highest capability number.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("capabilities: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("capabilities: cap_last_cap %q: %w", b, err)
	}
	return n, nil
}

func allThreads(trap, a1, a2, a3 uintptr) error {
	_, _, errno := syscall.AllThreadsSyscall(trap, a1, a2, a3)
	switch errno {
	case 0:
		return nil
	case syscall.ENOTSUP:
		return ErrAllThreads
	}
	return errno
}
