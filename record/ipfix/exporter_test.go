package ipfix

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/record"
)

func flows(n int) []record.Flow {
	out := make([]record.Flow, n)
	for i := range out {
		out[i] = tcpFlow()
		out[i].OrigPort = uint16(1024 + i)
	}
	return out
}

// closedPort returns an address nothing listens on (for now).
func closedPort(t *testing.T, network string) string {
	t.Helper()
	switch network {
	case "tcp":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	default:
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().String()
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestQueueRecords: a queue holds Options.Queue records however small
// the batches that bring them, across an outage of its (TCP) collector;
// the records past it are dropped, counted and reported, without
// waiting; once the collector is back every record queued reaches it.
func TestQueueRecords(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	const queue, batch, batches = 1000, 15, 100
	x, err := New(Options{Collectors: []string{addr}, Transport: TransportTCP, Queue: queue, minBackoff: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	waitFor(t, "a failed dial", func() bool { return x.Stats()[0].DialErrors > 0 })
	start := time.Now()
	var failed uint64
	for i := range batches {
		err := x.WriteFlows(flows(batch))
		if (i+1)*batch <= queue {
			if err != nil {
				t.Fatalf("batch %d to a collector down, queued: %v, want nil", i, err)
			}
			continue
		}
		var le *record.LossError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), addr) {
			t.Fatalf("batch %d to a collector down past its queue: %v, want a LossError naming %s", i, err, addr)
		}
		failed += le.Failed
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("WriteFlows took %v", d)
	}
	s := x.Stats()[0]
	if s.DroppedQueue != batch*batches-queue || failed != s.DroppedQueue || s.QueuedRecords != queue || s.Records != 0 {
		t.Fatalf("dropped %d (reported %d), queued %d records, sent %d: want %d, %d, 0",
			s.DroppedQueue, failed, s.QueuedRecords, s.Records, batch*batches-queue, queue)
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch := make(chan []byte, 1000)
	go readMessages(conn, ch)
	got := 0
	deadline := time.After(10 * time.Second)
	for got < queue {
		select {
		case m := <-ch:
			got += countRecords(m)
		case <-deadline:
			t.Fatalf("%d records reached the collector, want the %d queued", got, queue)
		}
	}
	if err := x.WriteFlows(flows(1)); err != nil {
		t.Fatalf("a write once the collector is back: %v", err)
	}
}

// recordLen is the test flows' record length: IPv4, biflow, no
// enterprise element.
var recordLen = newTemplate(templateOptions{biflow: true}, false).fixed

// countRecords is the count of the test flows' data records in message
// m (a set's padding is shorter than a record).
func countRecords(m []byte) int {
	n := 0
	for off := HeaderLen; off+SetHeaderLen <= len(m); {
		id, l := binary.BigEndian.Uint16(m[off:]), int(binary.BigEndian.Uint16(m[off+2:]))
		if id >= 256 {
			n += (l - SetHeaderLen) / recordLen
		}
		off += l
	}
	return n
}

// readMessages reads IPFIX messages from a TCP stream into ch.
func readMessages(conn net.Conn, ch chan<- []byte) {
	defer close(ch)
	for {
		var h [HeaderLen]byte
		if _, err := io.ReadFull(conn, h[:]); err != nil {
			return
		}
		m := make([]byte, binary.BigEndian.Uint16(h[2:]))
		copy(m, h[:])
		if _, err := io.ReadFull(conn, m[HeaderLen:]); err != nil {
			return
		}
		ch <- m
	}
}

func setIDs(m []byte) []uint16 {
	var ids []uint16
	for off := HeaderLen; off+SetHeaderLen <= len(m); off += int(binary.BigEndian.Uint16(m[off+2:])) {
		ids = append(ids, binary.BigEndian.Uint16(m[off:]))
	}
	return ids
}

// TestTCPReconnect: a TCP collector that refuses connections is retried
// with backoff, logged once when it starts failing and once when it
// recovers; each connection starts with the templates, and the sequence
// numbers go on counting across connections.
func TestTCPReconnect(t *testing.T) {
	addr := closedPort(t, "tcp")
	x, err := New(Options{Collectors: []string{addr}, Transport: TransportTCP, minBackoff: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	x.WriteFlows(flows(10))
	waitFor(t, "three failed dials", func() bool { return x.Stats()[0].DialErrors >= 3 })
	if x.Stats()[0].Up {
		t.Fatal("collector up while refusing")
	}
	if err := x.cols[0].health.Err(); err == nil || x.cols[0].health.Name() != "ipfix:"+addr {
		t.Fatalf("component %s while the collector refuses: %v, want failing", x.cols[0].health.Name(), err)
	}
	if err := x.WriteFlows(flows(1)); err != nil {
		t.Fatalf("a write while the collector refuses, its records queued: %v, want nil (nothing lost)", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	session := func() (net.Conn, chan []byte) {
		conn, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan []byte, 100)
		go readMessages(conn, ch)
		return conn, ch
	}
	next := func(ch chan []byte) []byte {
		select {
		case m := <-ch:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no message")
		}
		return nil
	}
	conn, ch := session()
	if ids := setIDs(next(ch)); len(ids) != 1 || ids[0] != TemplateSetID {
		t.Fatalf("first message's sets %v, want the template set", ids)
	}
	m := next(ch)
	if seq := binary.BigEndian.Uint32(m[8:]); seq != 0 {
		t.Fatalf("first data message's sequence %d, want 0", seq)
	}
	waitFor(t, "the collector up", func() bool { return x.Stats()[0].Up })
	if err := x.WriteFlows(flows(1)); err != nil {
		t.Fatalf("a write once the collector is back: %v", err)
	}

	// The collector goes away: writes fail, and the exporter reconnects.
	conn.Close()
	for i := 0; ; i++ {
		x.WriteFlows(flows(10))
		if x.Stats()[0].SendErrors > 0 {
			break
		}
		if i > 1000 {
			t.Fatal("no send error after the collector closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	conn, ch = session()
	defer conn.Close()
	x.WriteFlows(flows(10))
	if ids := setIDs(next(ch)); len(ids) != 1 || ids[0] != TemplateSetID {
		t.Fatalf("reconnection's first message's sets %v, want the template set", ids)
	}
	m = next(ch)
	s := x.Stats()[0]
	seq := binary.BigEndian.Uint32(m[8:])
	if sent := s.Records + s.DroppedSend; uint64(seq) < 10 || uint64(seq) > sent {
		t.Fatalf("sequence %d after reconnecting: want the records counted so far (%d sent or lost)", seq, sent)
	}
}

// TestUDPUnreachable: a UDP collector whose port is closed answers
// unreachable, which fails a later write; once it listens again it gets
// the templates before data.
func TestUDPUnreachable(t *testing.T) {
	addr := closedPort(t, "udp")
	x, err := New(Options{Collectors: []string{addr}, minBackoff: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	waitFor(t, "a send error", func() bool {
		x.WriteFlows(flows(1))
		time.Sleep(time.Millisecond)
		return x.Stats()[0].SendErrors > 0
	})
	if x.Stats()[0].Up {
		t.Fatal("collector up while unreachable")
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	waitFor(t, "the collector up", func() bool {
		x.WriteFlows(flows(1))
		time.Sleep(time.Millisecond)
		return x.Stats()[0].Up
	})
	buf := make([]byte, MaxMessage)
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if ids := setIDs(buf[:n]); len(ids) != 1 || ids[0] != TemplateSetID {
		t.Fatalf("first message after the failure has sets %v, want the template set", ids)
	}
}

// TestFlush: Flush returns once every queued record is sent to a
// collector that takes them, and gives up after FlushWait on one that is
// down.
func TestFlush(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, MaxMessage)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	down := closedPort(t, "tcp")
	x, err := New(Options{Collectors: []string{pc.LocalAddr().String()}, Mode: ModeCompat, FlushWait: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x.WriteFlows(flows(1000))
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if s := x.Stats()[0]; s.Records != 2000 || s.DroppedQueue+s.DroppedSend != 0 {
		t.Fatalf("sent %d records, dropped %d+%d: want 2000 (two a flow in compat mode)", s.Records, s.DroppedQueue, s.DroppedSend)
	}
	x.Close()

	x, err = New(Options{Collectors: []string{down}, Transport: TransportTCP, FlushWait: 100 * time.Millisecond, minBackoff: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x.WriteFlows(flows(10))
	if err := x.Flush(); !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("Flush to a collector down: %v, want ErrFlushTimeout", err)
	}
	x.Close()
}

// TestMetrics: every metric collected is described (a pedantic registry
// checks), named flowmon_ipfix_*, one sample a collector (and label).
func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	x, err := New(Options{Collectors: []string{closedPort(t, "tcp"), "127.0.0.1:9"}, Transport: TransportTCP, minBackoff: time.Hour}, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "flowmon_ipfix_") {
			t.Errorf("metric %s", mf.GetName())
		}
		n += len(mf.GetMetric())
	}
	if len(mfs) != 6 || n != 2*10 {
		t.Fatalf("%d metrics, %d samples: want 6, 20", len(mfs), n)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if c := m.GetLabel()[0]; c.GetName() != "collector" || !strings.HasPrefix(c.GetValue(), "127.0.0.1:") {
				t.Errorf("%s labelled %s=%q, want the collector's address", mf.GetName(), c.GetName(), c.GetValue())
			}
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "no collector"},
		{Options{Collectors: []string{"nohost"}}, "must be HOST:PORT"},
		{Options{Collectors: []string{"h:0"}}, "port \"0\""},
		{Options{Collectors: []string{"h:1"}, Transport: "sctp"}, "transport \"sctp\""},
		{Options{Collectors: []string{"h:1"}, Mode: "x"}, "mode \"x\""},
		{Options{Collectors: []string{"h:1"}, MTU: 100}, "mtu 100 must be between 576 and 65535"},
		{Options{Collectors: []string{"h:1"}, TemplateRefresh: time.Millisecond}, "template refresh 1ms"},
	} {
		err := tc.o.Validate()
		if err == nil || !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if err := (Options{Collectors: []string{"[::1]:4739", "collector.example:4739"}}).Validate(); err != nil {
		t.Fatal(err)
	}
}
