//go:build linux

package ifacewatch

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Watch is what a live source keeps to ask after its interface by name
// and to open itself again, from whichever thread its goroutine runs on:
// a socket in the network namespace the source was opened in (the ioctls
// answer for the socket's namespace, not the thread's) and that
// namespace, entered for a reopen when the thread is in another one.
type Watch struct {
	Name string // the interface's
	ctl  int    // an AF_UNIX datagram socket: ioctls only, no privilege needed
	ns   int    // the namespace's file (/proc/thread-self/ns/net at open)
}

// Open opens the watch of name in the calling thread's network
// namespace.
func Open(name string) (*Watch, error) {
	ctl, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open a socket to watch %s: %w", name, err)
	}
	ns, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(ctl)
		return nil, fmt.Errorf("open this thread's network namespace: %w", err)
	}
	return &Watch{Name: name, ctl: ctl, ns: ns}, nil
}

// Close releases the watch; closing twice does nothing.
func (w *Watch) Close() {
	if w.ctl >= 0 {
		unix.Close(w.ctl)
		unix.Close(w.ns)
		w.ctl, w.ns = -1, -1
	}
}

// On says how the interface named w.Name is for a source on index: there
// is false if there is none or it has another index (deleted, or made
// again), up whether it is up.
func (w *Watch) On(index int) (there, up bool) {
	now, up, err := w.Lookup()
	return err == nil && now == index, up
}

// Lookup returns the index of the interface named w.Name and whether it
// is up (IFF_UP); an error wrapping ENODEV when there is none.
func (w *Watch) Lookup() (index int, up bool, err error) {
	ifr, err := unix.NewIfreq(w.Name)
	if err != nil {
		return 0, false, err
	}
	if err := unix.IoctlIfreq(w.ctl, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, false, fmt.Errorf("interface %q: %w", w.Name, err)
	}
	index = int(ifr.Uint32())
	ifr, _ = unix.NewIfreq(w.Name)
	if err := unix.IoctlIfreq(w.ctl, unix.SIOCGIFFLAGS, ifr); err != nil {
		return 0, false, fmt.Errorf("interface %q: %w", w.Name, err)
	}
	return index, ifr.Uint16()&unix.IFF_UP != 0, nil
}

// Do runs f in the source's network namespace: on this thread if it is
// there already (the usual case: one namespace for the whole process), or
// on it locked and switched there and back, which needs CAP_SYS_ADMIN.
func (w *Watch) Do(f func() error) error {
	var here, there unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &here); err != nil {
		return fmt.Errorf("read this thread's network namespace: %w", err)
	}
	if err := unix.Fstat(w.ns, &there); err != nil {
		return fmt.Errorf("read the source's network namespace: %w", err)
	}
	if here.Ino == there.Ino && here.Dev == there.Dev {
		return f()
	}
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open this thread's network namespace: %w", err)
	}
	defer unix.Close(orig)
	if err := unix.Setns(w.ns, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter the source's network namespace: %w", err)
	}
	ferr := f()
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, so it ends with the goroutine instead
		// of serving another in the wrong namespace.
		return errors.Join(ferr, fmt.Errorf("leave the source's network namespace: %w", err))
	}
	runtime.UnlockOSThread()
	return ferr
}
