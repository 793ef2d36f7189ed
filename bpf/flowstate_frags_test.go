//go:build linux

package bpf_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/pipeline/flowtable"
)

// tcpFrame is an Ethernet frame of n bytes holding an IPv4 TCP segment
// with the ACK flag, whose IP total length is ipLen (0: left for the
// NIC, as TSO leaves it).
func tcpFrame(n, ipLen int) []byte {
	f := make([]byte, n)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen))
	ip[8], ip[9] = 64, 6
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	tcp := ip[20:]
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 22)
	tcp[12], tcp[13] = 5<<4, 0x10
	return f
}

// TestStateLongFrames: the replay program takes frames past the test
// run's linear part (GRO's and TSO's, up to MaxRunFrame) and takes
// their length from the IP header, or from the frame's length where the
// IP header leaves it 0, as capture.Decode does; a longer frame is
// Whole, and counted.
func TestStateLongFrames(t *testing.T) {
	bpftest.Require(t)
	s, err := bpf.LoadState(bpf.StateOptions{Cells: 16, EventRing: 1 << 16, Machine: stateMachine(acsm.MachineZeek), Linger: never})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("%+v", ve)
		}
		t.Fatal(err)
	}
	defer s.Close()
	var buf []byte
	var want uint64
	for i, c := range []struct {
		n, ipLen int
		v        bpf.Verdict
	}{
		{100, 86, bpf.Kept},
		{9000, 8986, bpf.Kept},
		{65549, 65535, bpf.Kept},
		{bpf.MaxRunFrame, 0, bpf.Kept},
		{bpf.MaxRunFrame + 1, 0, bpf.Whole},
	} {
		f := tcpFrame(c.n, c.ipLen)
		v, err := s.Run(f, int64(i+1)*1e6, &buf)
		if err != nil {
			t.Fatalf("%d-byte frame: %v", c.n, err)
		}
		if v != c.v {
			t.Errorf("%d-byte frame: verdict %d, want %d", c.n, v, c.v)
		}
		if v == bpf.Kept {
			var p capture.Packet
			if r := capture.Decode(&p, capture.LinkEthernet, f, len(f), time.Unix(0, 0)); r != capture.ReasonNone {
				t.Fatalf("%d-byte frame: %v", c.n, r)
			}
			want += uint64(p.IPLen)
		}
	}
	var got uint64
	if err := s.Cells(func(_ [40]byte, c bpf.Cell) bool {
		conn, _ := flowtable.ConnFromBytes(c.Conn[:])
		f := connRecord(&conn, 6, false)
		got = f.OrigIPBytes + f.RespIPBytes
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("IP bytes %d, want %d", got, want)
	}
	sc, err := s.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if sc.Seen != 5 || sc.Counted != 4 || sc.Whole != 1 {
		t.Errorf("counters seen %d, counted %d, whole %d: want 5, 4, 1", sc.Seen, sc.Counted, sc.Whole)
	}
}
