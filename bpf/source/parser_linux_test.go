//go:build linux

package source_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/bpf/source"
	. "github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// progRunner runs frames through the loaded program with
// BPF_PROG_TEST_RUN and reads back the record each writes.
type progRunner struct {
	objs *bpf.Objects
	rd   *ringbuf.Reader
	rec  ringbuf.Record
}

func newProgRunner(t *testing.T) *progRunner {
	t.Helper()
	bpftest.Require(t)
	objs, err := bpf.Load(bpf.Options{Rings: 1, RingSize: 1 << 20})
	if err != nil {
		t.Fatalf("%+v", err)
	}
	dec := DefaultDecodeOptions()
	if err := objs.SetTunnels(bpf.Tunnels{Ports: dec.UDPTunnelPorts(), Teredo: dec.DetectTeredo, AYIYA: dec.DetectAYIYA}); err != nil {
		objs.Close()
		t.Fatal(err)
	}
	rd, err := objs.NewReader(0)
	if err != nil {
		objs.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close(); objs.Close() })
	return &progRunner{objs: objs, rd: rd}
}

// errNotRun is a frame BPF_PROG_TEST_RUN refuses: shorter than an
// Ethernet header or longer than a page holds.
var errNotRun = errors.New("test run refused the frame")

// run runs frame through prog and returns its record, nil if it wrote
// none, and the whole sample (a record and, handed up whole, the frame's
// bytes), valid until the next run.
func (r *progRunner) run(prog *ebpf.Program, frame []byte) (*bpf.Record, []byte, error) {
	ret, err := prog.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNotRun, err)
	}
	if want := passVerdict(prog); ret != want {
		return nil, nil, fmt.Errorf("program returned %d, want %d (pass)", int32(ret), int32(want))
	}
	r.rd.SetDeadline(time.Now())
	if err := r.rd.ReadInto(&r.rec); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if len(r.rec.RawSample) < bpf.RecordSize {
		return nil, nil, fmt.Errorf("record of %d bytes, want %d", len(r.rec.RawSample), bpf.RecordSize)
	}
	rec := *(*bpf.Record)(unsafe.Pointer(&r.rec.RawSample[0]))
	return &rec, r.rec.RawSample, nil
}

// passVerdict is what prog returns when it passes a packet on.
func passVerdict(prog *ebpf.Program) uint32 {
	if prog.Type() == ebpf.XDP {
		return 2 // XDP_PASS
	}
	return 0xFFFFFFFF // TC_ACT_UNSPEC
}

// equivalence counts one comparison of the program against Decode.
type equivalence struct {
	frames, compared, decoded, notRun, cut, tooLarge, raw, detected int
	diffs                                                           []string
}

// detectedOffPort reports whether Decode finds Teredo or AYIYA in data on
// neither of their ports, by DetectTeredo and DetectAYIYA.
func detectedOffPort(data []byte) bool {
	var p Packet
	d := DefaultDecodeOptions()
	if d.Decode(&p, LinkEthernet, data, len(data), time.Time{}); p.Tunnels == 0 ||
		(p.Tunnel != TunnelTeredo && p.Tunnel != TunnelAYIYA) {
		return false
	}
	for _, port := range d.UDPTunnelPorts() {
		if k := &p.Carriers.Outer.Key; k.SrcPort == port || k.DstPort == port {
			return false
		}
	}
	return true
}

// check runs one Ethernet frame through the XDP program and compares the
// record's packet with what Decode makes of the same bytes.
func (e *equivalence) check(t *testing.T, r *progRunner, prog *ebpf.Program, where string, data []byte) {
	e.frames++
	if detectedOffPort(data) {
		// Teredo or AYIYA found by Zeek's header tests on a port not
		// theirs: the program looks for tunnels on their ports only.
		e.detected++
		return
	}
	rec, sample, err := r.run(prog, data)
	if errors.Is(err, errNotRun) {
		if len(data) > os.Getpagesize()-512 {
			// A TC test run makes its skb of one page: the frames
			// that do not fit are left out, and counted.
			e.tooLarge++
			return
		}
		e.notRun++
		// A test run refuses frames shorter than an Ethernet header, and
		// for TC those that end inside the IP header the kernel pulls
		// into the skb it makes; Decode calls them truncated.
		var want Packet
		switch wr := Decode(&want, LinkEthernet, data, len(data), time.Time{}); {
		case wr == ReasonLinkTruncated, prog.Type() == ebpf.SchedCLS && wr == ReasonIPTruncated:
		default:
			e.diffs = append(e.diffs, fmt.Sprintf("%s: %d-byte frame refused (%v); Decode says %v", where, len(data), err, wr))
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	e.compared++
	if rec != nil && int(rec.WireLen) < len(data) {
		// An XDP test run puts what passes a page (3520 bytes) in
		// fragments the program does not see, as a driver gives an XDP
		// program without multi-buffer support no larger frame: the
		// program saw the frame's first WireLen bytes, so Decode gets
		// those.
		e.cut++
		data = data[:rec.WireLen]
	}
	wire := len(data)
	if rec != nil && rec.Reason == bpf.ReasonRaw {
		// Handed up whole: its first bpf.RawMax bytes, which Decode
		// reads in user space as it reads a captured frame.
		e.raw++
		data = data[:min(len(data), bpf.RawMax)]
	}
	var want, got Packet
	wr := Decode(&want, LinkEthernet, data, wire, time.Time{})
	if rec == nil {
		e.diffs = append(e.diffs, fmt.Sprintf("%s: no record; Decode: %v", where, wr))
		return
	}
	gr, ok := source.FromSample(&got, sample, 0)
	if !ok {
		e.diffs = append(e.diffs, fmt.Sprintf("%s: a sample of %d bytes that is no record", where, len(sample)))
		return
	}
	if wr == ReasonNone {
		e.decoded++
	}
	if d := packetDiff(&want, wr, &got, gr); d != "" {
		e.diffs = append(e.diffs, fmt.Sprintf("%s (%d bytes): %s", where, len(data), d))
	}
}

// packetDiff names each field in which the program's packet differs from
// Decode's: for a frame that does not decode, the reason alone (Decode
// leaves the rest unspecified); the payload in its first bpf.PayloadMax
// bytes, all a record carries.
func packetDiff(want *Packet, wr Reason, got *Packet, gr Reason) string {
	if wr != gr {
		return fmt.Sprintf("reason %v, Decode %v", gr, wr)
	}
	if wr != ReasonNone {
		return ""
	}
	var d []string
	f := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s %v (Decode %v)", name, g, w))
		}
	}
	f("key", got.Key, want.Key)
	f("reversed", got.Reversed, want.Reversed)
	f("hash", got.Hash, want.Hash)
	f("ethertype", got.EtherType, want.EtherType)
	f("vlans", got.VLANs, want.VLANs)
	f("ttl", got.TTL, want.TTL)
	f("ipid", got.IPID, want.IPID)
	f("iplen", got.IPLen, want.IPLen)
	f("fragment", got.Fragment, want.Fragment)
	f("hastcp", got.HasTCP, want.HasTCP)
	f("flags", got.Flags, want.Flags)
	f("seq", got.Seq, want.Seq)
	f("ack", got.Ack, want.Ack)
	f("window", got.Window, want.Window)
	f("payloadlen", got.PayloadLen, want.PayloadLen)
	f("wirelen", got.WireLen, want.WireLen)
	f("caplen", got.CapLen, want.CapLen)
	wp := want.Payload[:min(len(want.Payload), bpf.PayloadMax)]
	if gp := got.Payload[:min(len(got.Payload), bpf.PayloadMax)]; !bytes.Equal(gp, wp) {
		d = append(d, fmt.Sprintf("payload %x (Decode %x)", got.Payload, wp))
	}
	return strings.Join(d, ", ")
}

// equivalenceTraces are the gen traces the program is compared on:
// IPv4 and IPv6, TCP, UDP and ICMP, SPAN duplicates, and frames cut at
// a snaplen that leaves headers short.
var equivalenceTraces = []struct {
	name string
	opt  gen.Options
}{
	{"default", gen.Options{Flows: 3000, Seed: 1}},
	{"ipv6-dups", gen.Options{Flows: 2000, Seed: 2, IPv6Share: 0.5, DupRate: 0.05, UDPShare: 0.3, ICMPShare: 0.1}},
	{"snaplen-60", gen.Options{Flows: 1000, Seed: 3, IPv6Share: 0.5, Snaplen: 60}},
	{"snaplen-40", gen.Options{Flows: 500, Seed: 4, IPv6Share: 0.5, Snaplen: 40}},
}

// TestEBPFParserMatchesDecode runs every frame of several gen traces and
// of every Ethernet capture in the shared folder through the XDP program
// and the TC ingress program (BPF_PROG_TEST_RUN) and compares each record
// with what Decode yields for the same bytes, field by field.
func TestEBPFParserMatchesDecode(t *testing.T) {
	r := newProgRunner(t)
	for _, hook := range []struct {
		name string
		prog *ebpf.Program
	}{{"xdp", r.objs.XDPProgram()}, {"tc", r.objs.TCIngressProgram()}} {
		t.Run(hook.name, func(t *testing.T) {
			var e equivalence
			for _, tr := range equivalenceTraces {
				o := tr.opt
				o.Duration = 10 * time.Second
				g, err := gen.New(o)
				if err != nil {
					t.Fatal(err)
				}
				var gp gen.Packet
				for i := 0; g.Next(&gp); i++ {
					e.check(t, r, hook.prog, fmt.Sprintf("gen %s #%d", tr.name, i), gp.Data)
				}
			}
			t.Logf("gen: %d traces, %d frames, %d compared (%d decoded), %d not run, %d differences",
				len(equivalenceTraces), e.frames, e.compared, e.decoded, e.notRun, len(e.diffs))
			genFrames := e.frames
			captures := 0
			if os.Getenv("FLOWMON_BPF_NO_SHARED") == "" {
				for _, row := range sharedpcapsRows(t) {
					n := 0
					err := source.EachFrame(row.Path, func(link uint16, data []byte) {
						if link != LinkEthernet {
							return
						}
						e.check(t, r, hook.prog, fmt.Sprintf("%s #%d", row.Name, n), data)
						n++
					})
					if n > 0 {
						captures++
					}
					if err != nil && n == 0 {
						continue // a damaged or unreadable file: the reader's tests cover it
					}
				}
			}
			t.Logf("all: %d gen traces and %d Ethernet captures; %d frames (%d from captures), %d compared (%d decoded; %d cut at a page; %d handed up whole), %d refused by the test run as truncated, %d over a page left out, %d Teredo or AYIYA off their ports left out, %d differences",
				len(equivalenceTraces), captures, e.frames, e.frames-genFrames, e.compared, e.decoded, e.cut, e.raw, e.notRun, e.tooLarge, e.detected, len(e.diffs))
			for _, d := range e.diffs {
				t.Error(d)
			}
		})
	}
}

// sharedpcapsRows lists the shared captures, or none when the folder is
// not beside the checkout (sharedpcaps skips a test then; this one also
// has the gen traces to compare).
func sharedpcapsRows(t *testing.T) []sharedpcaps.Capture {
	var rows []sharedpcaps.Capture
	t.Run("shared", func(t *testing.T) { rows = sharedpcaps.Captures(t) })
	return rows
}
