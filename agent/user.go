package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os/user"
	"strconv"
	"syscall"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/internal/caps"
)

// reopenCaps are the capabilities the agent keeps once its sockets are
// open: what a source needs to open its capture again when its interface
// comes back. Every other one (reading and writing any file, changing
// users, loading modules, ...) goes.
func reopenCaps(source string) []int {
	switch source {
	case config.SourceXDP, config.SourceTC:
		return []int{caps.BPF, caps.NetAdmin, caps.Perfmon, caps.NetRaw}
	}
	return []int{caps.NetRaw}
}

// dropPrivileges narrows the process, once the capture sockets are open,
// to the capabilities keep; with name, it also makes it run as that user
// (its primary group, no supplementary groups). The sockets stay usable,
// and nothing after, a bug in a decoder included, runs with more. Go
// applies the set*id calls, and package caps the capability calls, to
// every thread of the process. A cgo build (-tags pcap) cannot change
// every thread's capabilities: it says so on log and keeps them, and
// with name it keeps none (setuid drops them all).
func dropPrivileges(name string, keep []int, log *slog.Logger) error {
	err := caps.Limit(keep...)
	if err == nil && name != "" {
		err = caps.KeepOnSetuid()
	}
	if errors.Is(err, caps.ErrAllThreads) {
		log.Warn("keeping the process's capabilities", "err", err)
		keep = nil
	} else if err != nil {
		return fmt.Errorf("drop privileges: %w", err)
	}
	if name != "" {
		if err := setUser(name); err != nil {
			return err
		}
	}
	if keep == nil {
		return nil
	}
	if err := caps.Drop(keep...); err != nil {
		return fmt.Errorf("drop privileges: %w", err)
	}
	return nil
}

// setUser makes the process run as the named user.
func setUser(name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("drop privileges: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return fmt.Errorf("drop privileges: user %s has uid %q", name, u.Uid)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return fmt.Errorf("drop privileges: user %s has gid %q", name, u.Gid)
	}
	if err := syscall.Setgroups([]int{gid}); err != nil {
		return fmt.Errorf("drop privileges to %s: setgroups: %w", name, err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("drop privileges to %s: setgid: %w", name, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("drop privileges to %s: setuid: %w", name, err)
	}
	return nil
}
