//go:build linux

package netnstest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/sys/unix"
)

// SendOptions pace a Send.
type SendOptions struct {
	// Rate is the packets per second to send at; 0 sends at full speed.
	// Pacing sleeps until each millisecond's packets are due, so packets
	// leave in bursts of at most a millisecond's worth.
	Rate float64
	// Loops is how many times the file is sent (0: once).
	Loops int
}

// SendStats is what a Send or Tcpreplay sent.
type SendStats struct {
	Packets uint64
	Bytes   uint64 // the frames' bytes as sent
	Elapsed time.Duration
	Rate    float64 // packets per second achieved
}

func (s SendStats) String() string {
	return fmt.Sprintf("%d packets, %d bytes in %v: %.0f packets/s", s.Packets, s.Bytes, s.Elapsed.Round(time.Microsecond), s.Rate)
}

// Frames are the frames of a capture file, in memory, ready to send.
type Frames [][]byte

// LoadFrames reads every frame of the classic pcap file at path, whose
// link type must be Ethernet, into memory. A frame the file holds cut
// short (caplen below its length) is kept as captured.
func LoadFrames(path string) (Frames, error) { return readFrames(path) }

// Send writes every frame of the pcap file at pcapPath (Ethernet link
// type) as it is, through an AF_PACKET raw socket bound to iface in the
// namespace: each frame leaves iface exactly as the file holds it. The
// file is read into memory first (LoadFrames), so reading it does not
// slow the sending.
func (n *Net) Send(iface, pcapPath string, opt SendOptions) (SendStats, error) {
	frames, err := LoadFrames(pcapPath)
	if err != nil {
		return SendStats{}, err
	}
	return n.SendFrames(iface, frames, opt)
}

// SendFrames is Send of frames already in memory.
func (n *Net) SendFrames(iface string, frames Frames, opt SendOptions) (SendStats, error) {
	var fd int
	if err := n.Do(func() error {
		var err error
		fd, err = openSender(iface)
		return err
	}); err != nil {
		return SendStats{}, err
	}
	defer unix.Close(fd)
	loops := max(opt.Loops, 1)
	var st SendStats
	start := time.Now()
	for range loops {
		for _, f := range frames {
			if opt.Rate > 0 {
				due := start.Add(time.Duration(float64(st.Packets) / opt.Rate * float64(time.Second)))
				if d := time.Until(due); d > time.Millisecond {
					time.Sleep(d)
				}
			}
			if err := write(fd, f); err != nil {
				st.finish(start)
				return st, fmt.Errorf("send frame %d (%d bytes) on %s: %w", st.Packets, len(f), iface, err)
			}
			st.Packets++
			st.Bytes += uint64(len(f))
		}
	}
	st.finish(start)
	return st, nil
}

func (s *SendStats) finish(start time.Time) {
	s.Elapsed = time.Since(start)
	if s.Elapsed > 0 {
		s.Rate = float64(s.Packets) / s.Elapsed.Seconds()
	}
}

// write sends one frame, waiting out a full socket buffer.
func write(fd int, f []byte) error {
	for {
		_, err := unix.Write(fd, f)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			time.Sleep(10 * time.Microsecond)
		default:
			return err
		}
	}
}

// openSender opens a raw AF_PACKET socket that sends on iface and
// receives nothing (protocol 0), past the queueing discipline.
func openSender(iface string) (int, error) {
	ifi, err := interfaceIndex(iface)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open AF_PACKET socket: %w", err)
	}
	// Bypassing the qdisc is a speed-up, not a need: its error is ignored.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind the sender to %s: %w", iface, err)
	}
	return fd, nil
}

// interfaceIndex returns the index of iface in the calling thread's
// network namespace.
func interfaceIndex(iface string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open a socket for ioctl: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(iface)
	if err != nil {
		return 0, fmt.Errorf("interface %q: %w", iface, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("interface %q: %w", iface, err)
	}
	return int(ifr.Uint32()), nil
}

// readFrames reads every frame of a classic pcap file with Ethernet link
// type into one buffer.
func readFrames(path string) (Frames, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open pcap: %w", err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if lt := r.LinkType(); lt != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("%s: link type %v: only Ethernet frames can be sent", path, lt)
	}
	var buf []byte
	var ends []int
	for {
		data, _, err := r.ZeroCopyReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, len(ends), err)
		}
		buf = append(buf, data...)
		ends = append(ends, len(buf))
	}
	frames := make(Frames, len(ends))
	for i, e := range ends {
		s := 0
		if i > 0 {
			s = ends[i-1]
		}
		frames[i] = buf[s:e:e]
	}
	return frames, nil
}

// Tcpreplay sends the pcap file at pcapPath out of iface with tcpreplay,
// run in the namespace: at full speed (--topspeed) unless args give
// another pace (e.g. "--pps=50000"). It skips t when tcpreplay is not
// installed, and returns what tcpreplay says it sent.
func (n *Net) Tcpreplay(t testing.TB, iface, pcapPath string, args ...string) (SendStats, error) {
	t.Helper()
	if _, err := exec.LookPath("tcpreplay"); err != nil {
		t.Skip("netnstest: no tcpreplay on PATH (apt-get install tcpreplay)")
	}
	if len(args) == 0 {
		args = []string{"--topspeed"}
	}
	args = append(append([]string{"-q", "-i", iface}, args...), pcapPath)
	out, err := n.Cmd("tcpreplay", args...).CombinedOutput()
	if err != nil {
		return SendStats{}, fmt.Errorf("tcpreplay %v: %w: %s", args, err, out)
	}
	return parseTcpreplay(string(out))
}

var (
	tcpreplayActual = regexp.MustCompile(`Actual: (\d+) packets \((\d+) bytes\) sent in ([0-9.]+) seconds`)
	tcpreplayRated  = regexp.MustCompile(`Rated: [0-9.]+ Bps, [0-9.]+ Mbps, ([0-9.]+) pps`)
)

// parseTcpreplay reads tcpreplay's summary:
//
//	Actual: 3000 packets (1234567 bytes) sent in 0.123456 seconds
//	Rated: 10000000.0 Bps, 80.00 Mbps, 24300.00 pps
func parseTcpreplay(out string) (SendStats, error) {
	m := tcpreplayActual.FindStringSubmatch(out)
	if m == nil {
		return SendStats{}, fmt.Errorf("tcpreplay printed no \"Actual:\" line: %s", out)
	}
	var st SendStats
	st.Packets, _ = strconv.ParseUint(m[1], 10, 64)
	st.Bytes, _ = strconv.ParseUint(m[2], 10, 64)
	secs, _ := strconv.ParseFloat(m[3], 64)
	st.Elapsed = time.Duration(secs * float64(time.Second))
	if r := tcpreplayRated.FindStringSubmatch(out); r != nil {
		st.Rate, _ = strconv.ParseFloat(r[1], 64)
	} else if secs > 0 {
		st.Rate = float64(st.Packets) / secs
	}
	return st, nil
}
