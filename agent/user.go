package agent

import (
	"fmt"
	"os/user"
	"strconv"
	"syscall"
)

// dropPrivileges makes the process run as the named user (its primary
// group, no supplementary groups) once the capture sockets are open: they
// stay usable, and nothing after, a bug in a decoder included, runs as
// root. Go applies the set*id calls to every thread of the process.
func dropPrivileges(name string) error {
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
