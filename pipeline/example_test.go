package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
)

// handshakes is a capture.Source: it makes one TCP connection a
// millisecond, each a handshake, one data packet and a close, as a file
// reader or a live socket would decode them into p.
type handshakes struct {
	n, i  int
	start time.Time
	stats capture.Stats
}

func (h *handshakes) Next(p *capture.Packet) error {
	const perFlow = 7
	if h.i == h.n*perFlow {
		return io.EOF
	}
	flow, step := h.i/perFlow, h.i%perFlow
	h.i++
	client := netip.AddrFrom4([4]byte{10, 0, byte(flow >> 8), byte(flow)})
	server := netip.MustParseAddr("192.0.2.1")
	k := capture.Key{Src: client, Dst: server, SrcPort: 40000, DstPort: 80, Proto: capture.ProtoTCP}
	flags := []capture.TCPFlags{capture.SYN, capture.SYN | capture.ACK, capture.ACK, capture.ACK | capture.PSH,
		capture.FIN | capture.ACK, capture.FIN | capture.ACK, capture.ACK}[step]
	if step == 1 || step == 5 { // from the server
		k = k.Reverse()
	}
	canon, reversed := k.Canonical()
	seq := []uint32{1000, 5000, 1001, 1001, 1101, 5001, 1102}[step]
	ack := []uint32{0, 1001, 5001, 5001, 5001, 1102, 5002}[step]
	var payload uint32
	if step == 3 {
		payload = 100
	}
	*p = capture.Packet{Timestamp: h.start.Add(time.Duration(flow)*time.Millisecond + time.Duration(step)*10*time.Microsecond),
		Key: canon, Reversed: reversed, Hash: canon.Hash(), HasTCP: true, Flags: flags, TTL: 64, IPLen: uint16(40 + payload),
		PayloadLen: payload, Seq: seq, Ack: ack, Window: 64240, IPID: uint32(step)}
	h.stats.Count(p, capture.ReasonNone)
	return nil
}

func (h *handshakes) Stats() *capture.Stats { return &h.stats }
func (h *handshakes) Close() error          { return nil }

// Example_source runs the pipeline on a source of one's own: anything
// with capture.Source's Next, Stats and Close (a file reader is the
// project's).
func Example_source() {
	src := &handshakes{n: 100, start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := pipeline.DefaultConfig()
	cfg.Workers = 1
	s, err := pipeline.Run(context.Background(), src, pipeline.ReplayOptions{Config: cfg})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Packets, "packets,", s.Flows, "flows:", s.ConnStates)
	// Output: 700 packets, 100 flows: map[SF:100]
}

// liveHandshakes is a capture.LiveSource of one's own: a source on no
// interface (capture.NoIface answers for the interface, the kernel's
// counts and the eBPF program) that takes the decoder's options and, as
// it decodes nothing, leaves them. AF_PACKET (capture/afpacket), libpcap
// (capture/pcaplive) and the eBPF rings (bpf/source) are the project's.
type liveHandshakes struct {
	handshakes
	capture.NoIface
}

func (h *liveHandshakes) SetDecodeOptions(capture.DecodeOptions) {}

// Example_liveSource runs a live pipeline, one shard per live source,
// each fed on a goroutine of its own until its source ends (or the
// context is done).
func Example_liveSource() {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	srcs := []capture.LiveSource{&liveHandshakes{handshakes: handshakes{n: 100, start: start}}}
	pl, err := pipeline.NewLivePipeline(pipeline.DefaultConfig(), srcs)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := pipeline.RunLive(context.Background(), pl, pipeline.LiveOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Packets, "packets,", s.Flows, "flows:", s.ConnStates)
	// Output: 700 packets, 100 flows: map[SF:100]
}

// synCounter is a per-shard consumer: it counts the flows that opened
// with a SYN, as a rule or an exporter would see them.
type synCounter struct{ opened int }

func (c *synCounter) Packet(p *capture.Packet, ev *acsm.Event) {
	if ev.New && p.Flags&(capture.SYN|capture.ACK) == capture.SYN {
		c.opened++
	}
}

func (c *synCounter) Finish(time.Time) error { return nil }
func (c *synCounter) Idle(time.Time)         {}

// Example_consumer attaches a consumer: the pipeline builds one a shard
// and calls it on the shard's goroutine with every packet and the ACSM's
// event, so it needs no lock; it must allocate nothing per packet.
func Example_consumer() {
	var counters []*synCounter
	cfg := pipeline.DefaultConfig()
	cfg.Workers = 2
	cfg.Consumers = append(cfg.Consumers, func(shard, shards int, _ pipeline.Lookups) (pipeline.Consumer, error) {
		c := &synCounter{}
		counters = append(counters, c) // the shards are built one after another
		return c, nil
	})
	src := &handshakes{n: 100, start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := pipeline.Run(context.Background(), src, pipeline.ReplayOptions{Config: cfg}); err != nil {
		fmt.Println(err)
		return
	}
	total := 0
	for _, c := range counters {
		total += c.opened
	}
	fmt.Println(len(counters), "shards,", total, "connections opened")
	// Output: 2 shards, 100 connections opened
}

// printer is a record.Sink: it takes every ended flow, in batches.
type printer struct{ seen, bytes int }

func (p *printer) WriteFlows(flows []record.Flow) error {
	for i := range flows {
		f := &flows[i]
		if p.seen < 2 {
			fmt.Printf("%s %s:%d -> %s:%d %s %s\n", record.UIDString(f.UID), f.Orig, f.OrigPort, f.Resp, f.RespPort, f.State, f.History.String())
		}
		p.seen++
		p.bytes += int(f.OrigBytes + f.RespBytes)
	}
	return nil
}

func (p *printer) Flush() error { return nil }

// Example_sink takes the flow records: each sink gets every ended flow as
// a record.Flow (record/connlog writes them as Zeek's conn.log in JSON).
func Example_sink() {
	var sink printer
	cfg := pipeline.DefaultConfig()
	cfg.Sinks = []record.Named{{Name: "printer", Sink: &sink}}
	src := &handshakes{n: 100, start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := pipeline.Run(context.Background(), src, pipeline.ReplayOptions{Config: cfg}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sink.seen, "records,", sink.bytes, "bytes")
	// Output:
	// C0FhLrBYKwPZ2JKHgF 10.0.0.1:40000 -> 192.0.2.1:80 SF ShADFf
	// C1ZL3E7dRBqc9ZJryQ 10.0.0.2:40000 -> 192.0.2.1:80 SF ShADFf
	// 100 records, 10000 bytes
}
