package ipfix

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/record"
)

// slowCollector is a UDP collector with a small receive buffer that
// stops for gap after every 8 messages it reads: the shape of nfcapd or
// goflow2 at their default buffers, slower. It counts the data records it reads and
// checks that each message's sequence number follows the last one's.
type slowCollector struct {
	pc      *net.UDPConn
	records chan int
	gaps    chan string
}

func listenSlow(t *testing.T, addr string, gap time.Duration) *slowCollector {
	t.Helper()
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.SetReadBuffer(64 << 10); err != nil { // the kernel doubles it
		t.Fatal(err)
	}
	s := &slowCollector{pc: pc, records: make(chan int, 1<<16), gaps: make(chan string, 16)}
	go func() {
		buf := make([]byte, MaxMessage)
		var next uint32
		seen := false
		for i := 1; ; i++ {
			n, err := pc.Read(buf)
			if err != nil {
				close(s.records)
				return
			}
			m := buf[:n]
			seq, recs := binary.BigEndian.Uint32(m[8:]), countRecords(m)
			if recs > 0 {
				if seen && seq != next {
					select {
					case s.gaps <- "sequence gap":
					default:
					}
				}
				seen, next = true, seq+uint32(recs)
				s.records <- recs
			}
			if i%8 == 0 {
				time.Sleep(gap)
			}
		}
	}()
	return s
}

// count sums the records read until none came for quiet.
func (s *slowCollector) count(quiet time.Duration) int {
	total := 0
	for {
		select {
		case n, ok := <-s.records:
			if !ok {
				return total
			}
			total += n
		case <-time.After(quiet):
			return total
		}
	}
}

// TestPace: a UDP collector is sent no more than Options.Rate records a
// second, and Flush waits for a paced queue beyond FlushWait.
func TestPace(t *testing.T) {
	addr := freeUDP(t)
	col := listenSlow(t, addr, 0)
	defer col.pc.Close()
	const rate, n = 4000, 2000
	x, err := New(Options{Collectors: []string{addr}, Rate: rate, FlushWait: 50 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	start := time.Now()
	x.WriteFlows(flows(n))
	if err := x.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	took := time.Since(start)
	// The first paceBurst's worth goes at once.
	if min := time.Duration(float64(n)/rate*float64(time.Second)) - 2*paceBurst; took < min {
		t.Fatalf("%d records sent in %v: faster than %d a second", n, took, rate)
	}
	if s := x.Stats()[0]; s.Records != n {
		t.Fatalf("%d records sent, want %d", s.Records, n)
	}
}

func freeUDP(t *testing.T) string { return closedPort(t, "udp") }

// outage is how long TestOutage's collector is down: the 20 s an
// operator saw under FLOWMON_LONG=1, 3 s otherwise.
func outage() time.Duration {
	if os.Getenv("FLOWMON_LONG") != "" {
		return 20 * time.Second
	}
	return 3 * time.Second
}

// TestOutage: a UDP collector that reads slowly from a small buffer goes
// away under traffic and comes back: meanwhile its component fails; its
// records wait in the queue and go out at
// the rate once it is back, and every record not counted as dropped
// reaches it, with no gap in the sequence numbers.
func TestOutage(t *testing.T) {
	addr := freeUDP(t)
	col := listenSlow(t, addr, 2*time.Millisecond)
	const rate, perTick = 10000, 50 // 50 records every 10 ms: 5,000 a second
	x, err := New(Options{Collectors: []string{addr}, Rate: rate, minBackoff: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	traffic := func(d time.Duration, check func(error)) int {
		sent := 0
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			check(x.WriteFlows(flows(perTick)))
			sent += perTick
		}
		return sent
	}
	var failing bool
	total := traffic(time.Second, func(error) {})
	got := col.count(time.Second)
	col.pc.Close()
	time.Sleep(2 * probeAfter) // the exporter idle when the collector goes
	total += traffic(outage(), func(err error) {
		var le *record.LossError
		if errors.As(err, &le) && !strings.Contains(err.Error(), addr) {
			t.Errorf("a LossError not naming %s: %v", addr, err)
		}
		failing = failing || x.cols[0].health.Failing()
	})
	if !failing {
		t.Fatalf("collector %s never failing while down", addr)
	}
	col = listenSlow(t, addr, 2*time.Millisecond)
	defer col.pc.Close()
	total += traffic(time.Second, func(error) {})
	got += col.count(2 * time.Second)
	s := x.Stats()[0]
	dropped := s.DroppedQueue + s.DroppedSend + s.DroppedUnsent + s.DroppedRefused
	if uint64(got) != uint64(total)-dropped || s.Records != uint64(total)-dropped {
		t.Fatalf("%d records written, %d dropped, %d sent, %d read by the collector: want every record not dropped read", total, dropped, s.Records, got)
	}
	select {
	case g := <-col.gaps:
		t.Fatalf("the collector saw a %s", g)
	default:
	}
	t.Logf("%d records over a %v outage: %d dropped, %d read", total, outage(), dropped, got)
}
