//go:build linux

package netnstest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Net is a network namespace with one veth pair in it.
type Net struct {
	Name string // the namespace, as ip netns lists it
	A, B string // the two ends of the veth pair, both in the namespace
}

// runDir is where ip netns keeps its namespaces' bind mounts.
const runDir = "/run/netns"

var counter atomic.Uint32

// New makes a namespace and a veth pair in it with names unique to this
// process and call (ends fm<pid><n>a and fm<pid><n>b, pid and n in base
// 36, within the 15 bytes of an interface name), both ends up, IPv6
// disabled and no addresses. A cleanup deletes the links and the
// namespace when t ends, failed or not. New skips t, naming what is
// missing, when the process cannot make them.
func New(t testing.TB) *Net {
	t.Helper()
	if reason := missing(); reason != "" {
		t.Skip("netnstest: " + reason)
	}
	id := strconv.FormatInt(int64(os.Getpid()), 36) + strconv.FormatUint(uint64(counter.Add(1)), 36)
	n := &Net{Name: "flowmon-test-" + id, A: "fm" + id + "a", B: "fm" + id + "b"}
	if len(n.A) > 15 {
		t.Fatalf("netnstest: interface name %q is longer than 15 bytes", n.A)
	}
	if out, err := ip("netns", "add", n.Name); err != nil {
		t.Fatalf("netnstest: ip netns add %s: %v: %s", n.Name, err, out)
	}
	t.Cleanup(func() {
		// The links go first: a socket a test leaked keeps the namespace
		// alive after ip netns del, but not the links.
		// A link already gone is no failure: the namespace's deletion below is checked.
		_, _ = ip("-n", n.Name, "link", "del", n.A)
		if out, err := ip("netns", "del", n.Name); err != nil {
			t.Errorf("netnstest: ip netns del %s: %v: %s", n.Name, err, out)
		}
	})
	// IPv6 off for the links made from now on, so they never send a
	// router solicitation or an MLD report.
	if err := n.Do(func() error {
		return sysctlIPv6Off("all", "default")
	}); err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	if out, err := ip("-n", n.Name, "link", "add", n.A, "type", "veth", "peer", "name", n.B); err != nil {
		if s := string(out); strings.Contains(s, "Unknown device type") || strings.Contains(s, "not supported") {
			t.Skipf("netnstest: no veth support in this kernel (modprobe veth): ip link add type veth: %s", strings.TrimSpace(s))
		}
		t.Fatalf("netnstest: ip link add %s type veth peer name %s: %v: %s", n.A, n.B, err, out)
	}
	if err := n.Do(func() error { return sysctlIPv6Off(n.A, n.B) }); err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	for _, l := range []string{n.A, n.B} {
		if out, err := ip("-n", n.Name, "link", "set", l, "up"); err != nil {
			t.Fatalf("netnstest: ip link set %s up: %v: %s", l, err, out)
		}
	}
	return n
}

// missing names what the process lacks to make a namespace and links, or
// returns "".
func missing() string {
	if _, err := exec.LookPath("ip"); err != nil {
		return "no ip command (iproute2) on PATH"
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Sprintf("cannot read this process's capabilities: %v", err)
	}
	var lack []string
	for _, c := range []struct {
		bit  uint
		name string
	}{{unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"}, {unix.CAP_NET_ADMIN, "CAP_NET_ADMIN"}, {unix.CAP_NET_RAW, "CAP_NET_RAW"}} {
		if data[c.bit/32].Effective&(1<<(c.bit%32)) == 0 {
			lack = append(lack, c.name)
		}
	}
	if len(lack) == 0 {
		return ""
	}
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Sprintf("not root (euid %d): needs %s", uid, strings.Join(lack, ", "))
	}
	return "running as root without " + strings.Join(lack, ", ")
}

// ip runs the ip command and returns its combined output.
func ip(args ...string) ([]byte, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return bytes.TrimSpace(out), err
}

// sysctlIPv6Off sets net.ipv6.conf.<name>.disable_ipv6 for each name, in
// the network namespace of the calling thread; a kernel without IPv6 has
// nothing to turn off.
func sysctlIPv6Off(names ...string) error {
	for _, name := range names {
		p := "/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6"
		if err := os.WriteFile(p, []byte("1\n"), 0); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return fmt.Errorf("disable IPv6 on %s: %w", name, err)
		}
	}
	return nil
}

// Do runs f on a locked OS thread switched into the namespace, and
// switches back. Sockets f opens stay in the namespace after Do returns;
// goroutines f starts do not run in it. If the thread cannot switch back
// it stays locked, so it ends with the goroutine instead of serving
// another one in the wrong namespace.
func (n *Net) Do(f func() error) error {
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open this thread's network namespace: %w", err)
	}
	defer unix.Close(orig)
	ns, err := unix.Open(runDir+"/"+n.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open network namespace %s: %w", n.Name, err)
	}
	defer unix.Close(ns)
	if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace %s: %w", n.Name, err)
	}
	ferr := f()
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		return errors.Join(ferr, fmt.Errorf("leave network namespace %s: %w", n.Name, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// Cmd returns the command name args run in the namespace, through
// ip netns exec.
func (n *Net) Cmd(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}
