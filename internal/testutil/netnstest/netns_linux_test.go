//go:build linux

package netnstest

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// trace is a small real Ethernet capture (pcaps/README.md): 136 whole
// frames of HTTP, DNS, ARP and IPv6.
const trace = "../../../pcaps/zeek-wikipedia.pcap"

func TestNew(t *testing.T) {
	var name string
	t.Run("make", func(t *testing.T) {
		n := New(t)
		name = n.Name
		if len(n.A) > 15 || len(n.B) > 15 || n.A == n.B {
			t.Fatalf("names %q %q", n.A, n.B)
		}
		out, err := n.Cmd("ip", "-o", "link", "show").CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, pair := range [][2]string{{n.A, n.B}, {n.B, n.A}} {
			line := ""
			for l := range strings.SplitSeq(string(out), "\n") {
				if strings.Contains(l, " "+pair[0]+"@"+pair[1]+":") {
					line = l
				}
			}
			if !strings.Contains(line, ",UP,") && !strings.Contains(line, ",UP>") {
				t.Errorf("link %s missing or down:\n%s", pair[0], out)
			}
		}
		err = n.Do(func() error {
			for _, l := range []string{n.A, n.B} {
				b, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + l + "/disable_ipv6")
				if err != nil {
					return err
				}
				if strings.TrimSpace(string(b)) != "1" {
					t.Errorf("%s: disable_ipv6 = %q", l, b)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Outside Do the thread is back in the first namespace: no such link.
		if _, err := interfaceIndex(n.A); err == nil {
			t.Errorf("link %s seen outside the namespace", n.A)
		}
		// Two Nets do not share names.
		m := New(t)
		if m.Name == n.Name || m.A == n.A {
			t.Errorf("names repeat: %+v %+v", n, m)
		}
	})
	if name == "" {
		return
	}
	if _, err := os.Stat(runDir + "/" + name); !os.IsNotExist(err) {
		t.Errorf("namespace %s left behind by the cleanup: %v", name, err)
	}
}

func TestSend(t *testing.T) {
	n := New(t)
	path := trace
	frames, err := readFrames(path)
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	if err := n.Do(func() error {
		ifi, err := interfaceIndex(n.B)
		if err != nil {
			return err
		}
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 64<<20)
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi})
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	st, err := n.Send(n.A, path, SendOptions{Rate: 100000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %v", st)
	if st.Packets != uint64(len(frames)) {
		t.Fatalf("sent %d of %d frames", st.Packets, len(frames))
	}
	buf := make([]byte, 1<<16)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 200000})
	var got int
	for {
		nr, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			break
		}
		if got < len(frames) && string(buf[:nr]) != string(frames[got]) {
			t.Fatalf("frame %d differs", got)
		}
		got++
	}
	if got != len(frames) {
		t.Errorf("received %d of %d frames", got, len(frames))
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func TestParseTcpreplay(t *testing.T) {
	st, err := parseTcpreplay("Actual: 3000 packets (1234567 bytes) sent in 0.5 seconds\nRated: 2469134.0 Bps, 19.75 Mbps, 6000.00 pps\n")
	if err != nil || st.Packets != 3000 || st.Bytes != 1234567 || st.Elapsed != 500*time.Millisecond || st.Rate != 6000 {
		t.Fatalf("%+v %v", st, err)
	}
	if _, err := parseTcpreplay("nothing"); err == nil {
		t.Fatal("no error")
	}
}

func TestTcpreplay(t *testing.T) {
	n := New(t)
	path := trace
	frames, err := readFrames(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := n.Tcpreplay(t, n.A, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tcpreplay sent %v", st)
	if st.Packets != uint64(len(frames)) {
		t.Errorf("tcpreplay sent %d of %d frames", st.Packets, len(frames))
	}
}
