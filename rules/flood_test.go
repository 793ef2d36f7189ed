package rules

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// TestRandomSourcesKeepHeapFlat floods 10 million connection attempts from
// random sources through per-source threshold rules, with one real
// scanner among them: the heap does not grow with the keys (the counters
// are sketches sized by the rules' error), and the scanner is detected,
// once per rule, and nobody else.
func TestRandomSourcesKeepHeapFlat(t *testing.T) {
	n := 10_000_000
	if testing.Short() {
		n = 1_000_000
	}
	set, err := Compile(mustParse(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: Scan
        kind: threshold
        track: by_src
        match: {flags: [SYN, "!ACK"]}
        threshold: {event: distinct_dst_ports, above: 300}
      - alert: Attempts
        kind: threshold
        track: by_src
        threshold: {event: attempt, above: 400}
`))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	eng := NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, rec))
	sh, err := eng.NewShard(Lookups{})
	if err != nil {
		t.Fatal(err)
	}
	scanner := netip.AddrFrom4([4]byte{203, 0, 113, 66})
	dst := netip.AddrFrom4([4]byte{198, 18, 0, 1})
	var p capture.Packet
	var ev acsm.Event
	p.HasTCP, p.Flags, p.Key.Proto = true, capture.SYN, capture.ProtoTCP
	ev.New, ev.State = true, acsm.S0
	send := func(i int, src netip.Addr, port uint16) {
		// Ten million packets over 9 s: one window.
		p.Timestamp = t0.Add(time.Duration(i) * 900 * time.Nanosecond)
		p.Key.Src, p.Key.Dst, p.Key.SrcPort, p.Key.DstPort = src, dst, 40000, port
		ev.Key, ev.Hash = p.Key, hashmix.Mix(uint64(i))
		sh.Packet(&p, &ev)
	}
	var before, after runtime.MemStats
	heapAfter := func(m *runtime.MemStats) {
		runtime.GC()
		runtime.ReadMemStats(m)
	}
	for i := range 1000 { // warm up: every structure touched once
		send(i, netip.AddrFrom4([4]byte{100, 64, byte(i >> 8), byte(i)}), 80)
	}
	heapAfter(&before)
	for i := 1000; i < n; i++ {
		if i%(n/600) == 0 { // 600 probes of distinct ports, spread over the flood
			send(i, scanner, uint16(i/(n/600)))
			continue
		}
		x := uint32(hashmix.Mix(uint64(i)))
		send(i, netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)}), 80)
	}
	heapAfter(&after)
	if err := sh.Finish(p.Timestamp); err != nil {
		t.Fatal(err)
	}
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d packets from random sources: heap %d -> %d bytes (%+d); sketches %v bytes", n, before.HeapAlloc, after.HeapAlloc, grew, eng.Stats().SketchBytes)
	if grew > 1<<20 {
		t.Errorf("heap grew by %d bytes over %d random source keys", grew, n)
	}
	for _, name := range []string{"Scan", "Attempts"} {
		got := rec.firing(name)
		if len(got) != 1 || got[0].Labels.Get("src") != "203.0.113.66" {
			t.Errorf("%s: %d alerts %v, want one for the scanner", name, len(got), got)
		}
	}
}

func mustParse(t *testing.T, text string) *File {
	t.Helper()
	f, err := Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
