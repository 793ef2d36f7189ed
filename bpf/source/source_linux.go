//go:build linux

package source

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/ifacewatch"
)

// Ring is one worker's ring buffer of the eBPF capture program, a
// capture.LiveSource.
// The program (package bpf) parses each frame at XDP or TC and writes a
// record into the ring its flow hash picks; Next turns the record into a
// Packet by copying fields (the key, the header fields, up to
// bpf.PayloadMax payload bytes, which Payload points to until the next
// call). Frames the program could not parse come as records of their
// reason and are counted in Stats, as a file reader counts them.
//
// Timestamps are the kernel's monotonic clock at the record's writing,
// moved to the wall clock by an offset measured when the source opens and
// again at each poll that times out. The wire and captured lengths are the
// frame's length as the hook sees it (at TC with the outer VLAN tag the
// kernel took out put back, as the AF_PACKET source does). The link type
// is Ethernet: the program reads Ethernet frames only.
//
// The program sees nothing while the interface is down, and nothing
// errs; when the interface is deleted the kernel detaches the program.
// IfaceState asks the interface's index and flags by name, and Reopen
// attaches the program to the interface made again with the name (the
// first ring's Reopen does, the others find it done): the rings, the
// maps and their counts stay.
//
// Next, Stats, IfaceState and Reopen are for the one goroutine that reads
// the source; KernelStats, EBPFStats, Counters, Attached and Close may be
// called from any goroutine.
type Ring struct {
	sh      *shared
	ring    int
	rd      *ringbuf.Reader
	rec     ringbuf.Record
	timeout time.Duration
	rearm   bool  // set a new poll deadline before the next read
	monoOff int64 // wall clock minus monotonic clock, ns
	stats   capture.Stats
	closed  atomic.Bool
	dec     *capture.DecodeOptions // decodes the frames the program hands up whole; never nil
	defrag  capture.Defragmenter   // nil: fragments go on as decoded
	dtaker  capture.DatagramTaker  // nil: reassembled datagrams go on
}

var _ capture.LiveSource = (*Ring)(nil)

// defaultDecode decodes the frames the program hands up whole until
// SetDecodeOptions gives other options.
var defaultDecode = func() *capture.DecodeOptions {
	o := capture.DefaultDecodeOptions()
	return o.Compiled()
}()

// SetDecodeOptions has the frames the program hands up whole decoded with
// o, and the program hand up o's UDP tunnels (TunnelsOf; the program's
// map is its sources', which all set the same).
func (s *Ring) SetDecodeOptions(o capture.DecodeOptions) {
	s.dec = o.Compiled()
	// SetDecodeOptions has no error to return, and a Put to key 0 of the
	// program's own array map fails only once the program is gone.
	_ = s.sh.objs.SetTunnels(TunnelsOf(&o))
}

// TunnelsOf is the UDP tunnels o decodes: its tunnel ports, and Teredo
// and AYIYA on any port where it detects them.
func TunnelsOf(o *capture.DecodeOptions) bpf.Tunnels {
	return bpf.Tunnels{Ports: o.UDPTunnelPorts(), Teredo: o.DetectTeredo, AYIYA: o.DetectAYIYA}
}

// program is what a source attaches and reads the counts of: the capture
// program (bpf.Objects), or the flow state's live programs (stateProgram).
type program interface {
	AttachXDP(ifindex int, mode string) (string, error)
	AttachTC(ifindex int, mode string) (string, error)
	Detach() error
	SetTunnels(t bpf.Tunnels) error
	Counters(ring int) (bpf.Counters, error)
	// Close releases what the sources own: the capture program, or the
	// flow state's attach (the state is its table's).
	Close() error
}

// shared is what the sources of one Open share: the program, its
// maps and links, released when the last source closes.
type shared struct {
	objs   program
	sample uint32 // 1 flow kept in sample (1: every flow)
	c      Config
	w      *ifacewatch.Watch // nil for a source attached nowhere (tests)

	mu       sync.Mutex
	open     int
	ifindex  int    // where the program is attached
	attached string // how
}

func (sh *shared) release() error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.open--; sh.open > 0 {
		return nil
	}
	if sh.w != nil {
		sh.w.Close()
	}
	return sh.objs.Close()
}

// attach attaches the program to ifindex at the configured hook; sh.mu
// is held, or not yet needed.
func (sh *shared) attach(ifindex int) error {
	var at string
	var err error
	if sh.c.Hook == HookXDP {
		at, err = sh.objs.AttachXDP(ifindex, sh.c.XDPMode)
		at = "xdp " + at
	} else {
		at, err = sh.objs.AttachTC(ifindex, sh.c.TCMode)
	}
	if err != nil {
		return err
	}
	sh.ifindex, sh.attached = ifindex, at
	return nil
}

// Open loads the capture program with one ring buffer per worker,
// sets its sampling and pre-filter, attaches it to c.Iface at c.Hook (XDP
// in c.XDPMode; TC at ingress and egress in c.TCMode) and returns
// one source per ring. A flow's packets, both directions, reach one ring:
// the program picks it by a symmetric hash of the flow key. IPv4
// fragments are not reassembled (the AF_PACKET source's fanout does):
// a non-first fragment goes with the flow of its addresses and protocol.
//
// Loading needs CAP_BPF and CAP_NET_ADMIN (or root), and the error says
// so. The program is detached when the last source closes, and by the
// kernel when the process ends, however it ends: its links are the
// process's file descriptors and nothing is pinned; clsact filters
// (TC on kernels without TCX) stay after a SIGKILL, and the next start
// on the interface replaces them. workers is from 1 to 256.
func Open(c Config, workers int) ([]*Ring, error) {
	c = c.WithDefaults()
	if err := errors.Join(c.Validate(), validWorkers(workers)); err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Hook, err)
	}
	fail := func(err error) ([]*Ring, error) {
		return nil, fmt.Errorf("open %s on %s: %w", c.Hook, c.Iface, err)
	}
	ifc, err := net.InterfaceByName(c.Iface)
	if err != nil {
		return fail(fmt.Errorf("no interface %q in this network namespace: %w", c.Iface, err))
	}
	objs, err := bpf.Load(bpf.Options{Rings: workers, RingSize: c.RingSize})
	if err != nil {
		return fail(err)
	}
	sh := &shared{objs: objs, open: workers, sample: max(c.Sample, 1), c: c}
	if err := errors.Join(objs.SetSampling(c.Sample), objs.SetFilter(c.Prefixes, c.Ports), objs.SetTunnels(TunnelsOf(defaultDecode))); err != nil {
		objs.Close()
		return fail(err)
	}
	if sh.w, err = ifacewatch.Open(c.Iface); err != nil {
		objs.Close()
		return fail(err)
	}
	srcs := make([]*Ring, 0, workers)
	for i := range workers {
		rd, err := objs.NewReader(i)
		if err != nil {
			for _, s := range srcs {
				s.rd.Close()
			}
			objs.Close()
			return fail(err)
		}
		srcs = append(srcs, newRing(sh, i, rd, c.PollTimeout))
	}
	// Attach last: no record is written before every ring has a reader.
	if err := sh.attach(ifc.Index); err != nil {
		for _, s := range srcs {
			s.rd.Close()
		}
		sh.w.Close()
		objs.Close()
		return fail(err)
	}
	return srcs, nil
}

func newRing(sh *shared, ring int, rd *ringbuf.Reader, timeout time.Duration) *Ring {
	s := &Ring{sh: sh, ring: ring, rd: rd, timeout: timeout, rearm: true, dec: defaultDecode}
	s.rec.RawSample = make([]byte, 0, bpf.RecordSize+bpf.RawMax)
	s.setClock()
	return s
}

// setClock measures the offset of the wall clock from the monotonic
// clock the program's timestamps are on.
func (s *Ring) setClock() {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return
	}
	s.monoOff = time.Now().UnixNano() - ts.Nano()
}

// EBPFStats returns the program's counts for this source's ring
// (Counters), its sampling and where it is attached; ok is false once
// every source of the capture has closed.
func (s *Ring) EBPFStats() (capture.EBPFStats, bool) {
	c, err := s.Counters()
	if err != nil {
		return capture.EBPFStats{}, false
	}
	return capture.EBPFStats{Counters: c, SampleOneIn: s.Sampling(), Attached: s.Attached()}, true
}

// Sampling returns the sampling rate: the program keeps 1 flow in this
// many (1: every flow).
func (s *Ring) Sampling() uint32 { return s.sh.sample }

// Attached says where the program is attached: "xdp driver", "xdp
// generic", "tcx" (TC ingress and egress through TCX links) or "clsact"
// (TC ingress and egress through a clsact qdisc's filters).
func (s *Ring) Attached() string {
	s.sh.mu.Lock()
	defer s.sh.mu.Unlock()
	return s.sh.attached
}

// Iface returns the interface's name.
func (s *Ring) Iface() string { return s.sh.c.Iface }

// IfaceState says whether the interface the program is attached to is
// up, down, or gone (deleted, or another of its name in its place).
func (s *Ring) IfaceState() capture.IfaceState {
	if s.sh.w == nil {
		return capture.IfaceUp
	}
	s.sh.mu.Lock()
	defer s.sh.mu.Unlock()
	return capture.IfaceStateOf(s.sh.w.On(s.sh.ifindex))
}

// Reopen attaches the program to the interface now named Iface, unless
// another ring's Reopen already has: what it had attached goes first.
func (s *Ring) Reopen() error {
	sh := s.sh
	if sh.w == nil {
		return nil
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.open == 0 || s.closed.Load() {
		return fmt.Errorf("reopen %s on %s: closed", sh.c.Hook, sh.c.Iface)
	}
	index, _, err := sh.w.Lookup()
	if err != nil {
		return fmt.Errorf("reopen %s: %w", sh.c.Hook, err)
	}
	if index == sh.ifindex {
		return nil
	}
	err = sh.w.Do(func() error {
		if err := sh.objs.Detach(); err != nil {
			return err
		}
		return sh.attach(index)
	})
	if err != nil {
		return fmt.Errorf("reopen %s on %s: %w", sh.c.Hook, sh.c.Iface, err)
	}
	return nil
}

// Next reads the next record into p: no decode, no allocation. Records of
// frames the program could not parse are counted in Stats and skipped.
// When no record comes within the poll timeout it returns
// capture.ErrNoPacket; after Close, io.EOF.
func (s *Ring) Next(p *capture.Packet) error {
	for {
		if s.rearm {
			s.rd.SetDeadline(time.Now().Add(s.timeout))
			s.rearm = false
		}
		if err := s.rd.ReadInto(&s.rec); err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				s.rearm = true
				s.setClock()
				return capture.ErrNoPacket
			case s.closed.Load() || errors.Is(err, os.ErrClosed) || errors.Is(err, ringbuf.ErrClosed):
				return io.EOF
			}
			return fmt.Errorf("read ring %d: %w", s.ring, err)
		}
		reason, ok := fromSample(p, s.rec.RawSample, s.monoOff, s.dec)
		if !ok {
			continue // not a record of this program: nothing writes one
		}
		if p.Fragment != capture.NotFragment && s.defrag != nil && capture.Defragments(reason) {
			if frame := rawFrame(s.rec.RawSample); frame != nil {
				ok, err := capture.DefragTake(p, frame, reason, &s.stats, s.defrag, s.dtaker)
				if err != nil {
					return err
				}
				if ok {
					return nil
				}
				continue
			}
		}
		s.stats.Count(p, reason)
		if reason == capture.ReasonNone {
			return nil
		}
	}
}

// fromSample fills p from one sample of the program's ring: a record
// (fromRecord), or a record of reason bpf.ReasonRaw and the first bytes
// of a frame the program handed up whole, which dec decodes as it decodes
// a frame AF_PACKET captured: tunnels, the link layers the program does
// not parse. The frame's outer VLAN tag, which TC sees taken out, is
// counted in VLANs. ok is false for a sample too short to be either.
func fromSample(p *capture.Packet, sample []byte, monoOff int64, dec *capture.DecodeOptions) (reason capture.Reason, ok bool) {
	if len(sample) < bpf.RecordSize {
		return 0, false
	}
	r := (*bpf.Record)(unsafe.Pointer(&sample[0]))
	if r.Reason != bpf.ReasonRaw {
		return fromRecord(p, r, monoOff), true
	}
	n := int(r.PayloadLen)
	if n > len(sample)-bpf.RecordSize {
		return 0, false
	}
	data := sample[bpf.RecordSize : bpf.RecordSize+n]
	reason = dec.Decode(p, capture.LinkEthernet, data, max(int(r.WireLen), n), time.Unix(0, int64(r.Ts)+monoOff))
	p.VLANs += r.Vlans
	return reason, true
}

// rawFrame is the frame a sample of reason bpf.ReasonRaw carries, nil
// for a record.
func rawFrame(sample []byte) []byte {
	r := (*bpf.Record)(unsafe.Pointer(&sample[0]))
	if r.Reason != bpf.ReasonRaw {
		return nil
	}
	return sample[bpf.RecordSize : bpf.RecordSize+int(r.PayloadLen)]
}

// SetDefragmenter has the source hand d the fragments that come up
// whole (capture.DefragSource): the kernel flow state's, every one
// through one ring (OpenState). The capture program's records of
// fragments carry no bytes to reassemble, and go on as they are.
func (s *Ring) SetDefragmenter(d capture.Defragmenter) { s.defrag = d }

// SetDatagramTaker has the source offer d the datagrams it reassembles
// from fragments that came in no tunnel: the kernel flow state's table,
// so that a flow whose packets are in part fragments is kept in its
// cell.
func (s *Ring) SetDatagramTaker(d capture.DatagramTaker) { s.dtaker = d }

// fromRecord fills p from the program's record, as capture.Decode fills it from
// the frame the record was made of, and returns the record's reason.
func fromRecord(p *capture.Packet, r *bpf.Record, monoOff int64) capture.Reason {
	wire := r.WireLen
	*p = capture.Packet{Timestamp: time.Unix(0, int64(r.Ts)+monoOff), LinkType: capture.LinkEthernet,
		WireLen: wire, CapLen: wire, VLANs: r.Vlans, EtherType: r.EtherType}
	if r.Reason != uint8(capture.ReasonNone) {
		if int(r.Reason) >= capture.NumReasons {
			return capture.ReasonLinkUnsupported
		}
		return capture.Reason(r.Reason)
	}
	p.TTL, p.IPID, p.IPLen, p.Fragment = r.Ttl, r.IpId, r.IpLen, capture.FragKind(r.Fragment)
	p.HasTCP = r.Flags&bpf.FlagHasTCP != 0
	p.Flags, p.Seq, p.Ack, p.Window = capture.TCPFlags(r.TcpFlags), r.Seq, r.Ack, r.Window
	p.PayloadLen = r.PayloadLen
	if n := int(r.PayloadCap); n > 0 {
		p.Payload = r.Payload[:min(n, len(r.Payload)):min(n, len(r.Payload))]
	}
	p.Reversed = r.Flags&bpf.FlagReversed != 0
	k := &r.Key
	if k[37] == 4 {
		p.Key.Src, p.Key.Dst = netip.AddrFrom4([4]byte(k[12:16])), netip.AddrFrom4([4]byte(k[28:32]))
	} else {
		p.Key.Src, p.Key.Dst = netip.AddrFrom16([16]byte(k[0:16])), netip.AddrFrom16([16]byte(k[16:32]))
	}
	p.Key.SrcPort, p.Key.DstPort = binary.BigEndian.Uint16(k[32:]), binary.BigEndian.Uint16(k[34:])
	p.Key.Proto = k[36]
	p.Hash = capture.HashBytes(k[:]) // Key.Hash: the record's key is in its layout
	return capture.ReasonNone
}

// Stats returns the counts of the records read. They change as Next is
// called.
func (s *Ring) Stats() *capture.Stats { return &s.stats }

// Counters returns the program's counts for this source's ring. Safe to
// call from any goroutine; once every source of the capture has closed,
// an error.
func (s *Ring) Counters() (capture.EBPFCounters, error) {
	s.sh.mu.Lock()
	defer s.sh.mu.Unlock()
	if s.sh.open == 0 {
		return capture.EBPFCounters{}, errors.New("read the eBPF counters: closed")
	}
	c, err := s.sh.objs.Counters(s.ring)
	if err != nil {
		return capture.EBPFCounters{}, err
	}
	out := capture.EBPFCounters{Seen: c.Seen, Emitted: c.Emitted, Raw: c.Raw, Lost: c.Lost, SampledOut: c.SampledOut, FilteredOut: c.FilteredOut}
	copy(out.Failures[:], c.Reasons[:]) // the program counts the reasons it meets, the first 16
	return out, nil
}

// KernelStats returns the program's counts for this source's ring as
// KernelStats: Packets are the packets it kept for the ring (not left out
// by sampling or the pre-filter), Drops the records lost to a full ring.
// Once every source of the capture has closed, an error: the program is
// gone.
func (s *Ring) KernelStats() (capture.KernelStats, error) {
	c, err := s.Counters()
	if err != nil {
		return capture.KernelStats{}, err
	}
	return capture.KernelStats{Packets: c.Seen - c.SampledOut - c.FilteredOut, Drops: c.Lost}, nil
}

// Close closes the source's ring reader, waking a Next that waits, which
// returns io.EOF; the last source to close detaches the program and frees
// it. Closing twice does nothing.
func (s *Ring) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return errors.Join(s.rd.Close(), s.sh.release())
}
