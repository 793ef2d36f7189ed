//go:build pcap

package pcaplive

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcap"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/ifacewatch"
)

// pcapBufferSize is libpcap's buffer (its ring on Linux); libpcap's own
// default is 2 MiB.
const pcapBufferSize = 64 << 20

// Handle is a live libpcap capture on one interface, a
// capture.LiveSource. Next decodes each packet in libpcap's buffer
// (ZeroCopyReadPacketData): Payload is valid until the next call. libpcap
// puts back the VLAN tag the Linux kernel takes out, as the AF_PACKET
// source does.
//
// libpcap goes on through a down interface as through a quiet one, and
// fails every read once it is deleted: IfaceState asks the interface by
// name, Next's error then wraps capture.ErrIfaceDown, and Reopen opens a new
// handle on the interface made again with the name.
//
// Next, Stats, IfaceState and Reopen are for the goroutine that reads;
// KernelStats and Close may be called from any goroutine. Close from
// another goroutine wakes a Next waiting for packets within the read
// timeout; libpcap's buffer is freed by it, so the reader must not use
// the last Payload after Close.
type Handle struct {
	h       *pcap.Handle
	iface   string
	link    uint16
	dec     *capture.DecodeOptions // never nil
	stats   capture.Stats
	defrag  capture.Defragmenter // nil: fragments are handed on as Decode made them
	ifindex int
	w       *ifacewatch.Watch
	open    func() (*pcap.Handle, error) // a new handle, as the first was opened
	downErr error

	mu     sync.Mutex // KernelStats and Close
	closed bool
	ks     capture.KernelStats // the totals so far
	last   [3]uint32           // libpcap's 32-bit counts at the last read, which wrap
}

var (
	_ capture.LiveSource   = (*Handle)(nil)
	_ capture.DefragSource = (*Handle)(nil)
)

// defaultDecode decodes until SetDecodeOptions gives other options.
var defaultDecode = func() *capture.DecodeOptions {
	o := capture.DefaultDecodeOptions()
	return o.Compiled()
}()

// Open opens iface with libpcap: snaplen bytes kept of each
// packet (0: 262144; else 96 to 262144), promiscuous or not, filter a
// tcpdump expression ("" keeps everything), and timeout libpcap's read
// timeout (0: 10 ms; else 1 ms to 10 s), after which Next returns
// capture.ErrNoPacket when nothing came. libpcap's buffer is 64 MiB.
func Open(iface string, snaplen int, promisc bool, filter string, timeout time.Duration) (*Handle, error) {
	if snaplen == 0 {
		snaplen = capture.MaxSnaplen
	}
	if timeout == 0 {
		timeout = 10 * time.Millisecond
	}
	var errs []error
	if iface == "" {
		errs = append(errs, errors.New("iface: no interface named"))
	}
	if snaplen < capture.MinSnaplen || snaplen > capture.MaxSnaplen {
		errs = append(errs, fmt.Errorf("snaplen %d must be from %d to %d (0: %d)", snaplen, capture.MinSnaplen, capture.MaxSnaplen, capture.MaxSnaplen))
	}
	if timeout < capture.MinReadTimeout || timeout > capture.MaxReadTimeout {
		errs = append(errs, fmt.Errorf("timeout %v must be from %v to %v (0: 10ms)", timeout, capture.MinReadTimeout, capture.MaxReadTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("open pcap: %w", err)
	}
	open := func() (*pcap.Handle, error) {
		h, err := activate(iface, snaplen, promisc, timeout)
		if err != nil {
			return nil, err
		}
		if filter != "" {
			if err := h.SetBPFFilter(filter); err != nil {
				h.Close()
				return nil, fmt.Errorf("filter %q: %w", filter, err)
			}
		}
		return h, nil
	}
	w, err := ifacewatch.Open(iface)
	if err != nil {
		return nil, fmt.Errorf("open pcap on %s: %w", iface, err)
	}
	index, _, err := w.Lookup()
	if err != nil { // libpcap's own devices ("any"): nothing to watch
		w.Close()
		w = nil
	}
	h, err := open()
	if err != nil {
		if w != nil {
			w.Close()
		}
		return nil, fmt.Errorf("open pcap on %s: %w", iface, err)
	}
	return &Handle{h: h, iface: iface, link: uint16(h.LinkType()), dec: defaultDecode, ifindex: index, w: w, open: open,
		downErr: fmt.Errorf("read from %s: %w", iface, capture.ErrIfaceDown)}, nil
}

func activate(iface string, snaplen int, promisc bool, timeout time.Duration) (*pcap.Handle, error) {
	in, err := pcap.NewInactiveHandle(iface)
	if err != nil {
		return nil, err
	}
	defer in.CleanUp()
	for _, set := range []func() error{
		func() error { return in.SetSnapLen(snaplen) },
		func() error { return in.SetPromisc(promisc) },
		func() error { return in.SetTimeout(timeout) },
		func() error { return in.SetBufferSize(pcapBufferSize) },
	} {
		if err := set(); err != nil {
			return nil, err
		}
	}
	return in.Activate()
}

// SetDecodeOptions has the packets from now on decoded with o.
func (s *Handle) SetDecodeOptions(o capture.DecodeOptions) { s.dec = o.Compiled() }

// Next decodes the next packet into p, in place. Frames that do not
// decode are counted in Stats and skipped. It returns capture.ErrNoPacket
// when no packet came within the read timeout, and io.EOF after Close.
func (s *Handle) Next(p *capture.Packet) error {
	for {
		data, ci, err := s.h.ZeroCopyReadPacketData()
		switch {
		case err == nil:
		case errors.Is(err, pcap.NextErrorTimeoutExpired):
			return capture.ErrNoPacket
		case err == io.EOF:
			return io.EOF
		case s.IfaceState() != capture.IfaceUp:
			return s.downErr
		default:
			return fmt.Errorf("read from %s: %w", s.iface, err)
		}
		r := s.dec.Decode(p, s.link, data, ci.Length, ci.Timestamp)
		if p.Fragment != capture.NotFragment && s.defrag != nil && capture.Defragments(r) {
			if capture.DefragFrame(p, data, r, &s.stats, s.defrag) {
				return nil
			}
			continue
		}
		s.stats.Count(p, r)
		if r == capture.ReasonNone {
			return nil
		}
	}
}

// SetDefragmenter has the handle hand its fragments to d
// (capture.DefragSource).
func (s *Handle) SetDefragmenter(d capture.Defragmenter) { s.defrag = d }

// Stats returns the counts of the packets read. They change as Next is
// called.
func (s *Handle) Stats() *capture.Stats { return &s.stats }

// LinkType returns the link type (pcap LINKTYPE_) the packets decode as.
func (s *Handle) LinkType() uint16 { return s.link }

// KernelStats returns libpcap's counts since the handle was opened
// (pcap_stats): packets received (on Linux, drops included), dropped for
// want of buffer space, and dropped by the interface; libpcap's 32-bit
// counters are widened, so the totals survive their wrap as long as they
// are read at least once a wrap. After Close, the counts read at Close.
func (s *Handle) KernelStats() (capture.KernelStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.ks, nil
	}
	err := s.readKernelStats()
	return s.ks, err
}

func (s *Handle) readKernelStats() error {
	st, err := s.h.Stats()
	if err != nil {
		return fmt.Errorf("read libpcap's statistics of %s: %w", s.iface, err)
	}
	// libpcap keeps totals in 32-bit counters: add what each moved
	// since the last read, so the totals outlive a wrap.
	now := [3]uint32{uint32(st.PacketsReceived), uint32(st.PacketsDropped), uint32(st.PacketsIfDropped)}
	s.ks.Add(capture.KernelStats{Packets: uint64(now[0] - s.last[0]), Drops: uint64(now[1] - s.last[1]), IfDrops: uint64(now[2] - s.last[2])})
	s.last = now
	return nil
}

// Close closes the handle, after reading its final counts; a Next
// waiting for packets returns io.EOF within the read timeout. Closing
// twice does nothing.
func (s *Handle) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	err := s.readKernelStats()
	s.h.Close()
	if s.w != nil {
		s.w.Close()
	}
	s.closed = true
	return err
}

// EBPFStats says no eBPF program feeds the handle.
func (s *Handle) EBPFStats() (capture.EBPFStats, bool) { return capture.EBPFStats{}, false }

// Iface returns the interface's name.
func (s *Handle) Iface() string { return s.iface }

// IfaceState says whether the interface the handle was opened on is up,
// down, or gone (deleted, or another of its name in its place).
// A device libpcap has but the kernel does not (any) is always up.
func (s *Handle) IfaceState() capture.IfaceState {
	if s.w == nil {
		return capture.IfaceUp
	}
	return capture.IfaceStateOf(s.w.On(s.ifindex))
}

// Reopen opens a new handle on the interface now named Iface, with the
// settings of the first, after the old one's last counts are kept.
func (s *Handle) Reopen() error {
	if s.w == nil {
		return fmt.Errorf("reopen pcap on %s: not an interface of the kernel's", s.iface)
	}
	index, _, err := s.w.Lookup()
	if err != nil {
		return fmt.Errorf("reopen pcap: %w", err)
	}
	var h *pcap.Handle
	if err := s.w.Do(func() error {
		var err error
		h, err = s.open()
		return err
	}); err != nil {
		return fmt.Errorf("reopen pcap on %s: %w", s.iface, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		h.Close()
		return fmt.Errorf("reopen pcap on %s: closed", s.iface)
	}
	// The counters are best effort: the old handle goes either way.
	_ = s.readKernelStats()
	s.h.Close()
	s.h, s.link, s.ifindex, s.last = h, uint16(h.LinkType()), index, [3]uint32{}
	return nil
}

// CompileBPF compiles a tcpdump filter expression with libpcap for
// frames of linkType (a pcap LINKTYPE_ value: 1 Ethernet, 101 raw IP)
// cut to snaplen bytes, as a program for afpacket.Config.Filter (or capture.NewFilter). The
// program is compiled for a capture file, where VLAN tags are in the
// frame: on an AF_PACKET socket the kernel has taken the outer tag out
// before the filter runs, so an expression that names "vlan" does not
// match there as written.
func CompileBPF(expr string, linkType int, snaplen int) ([]capture.SockFilter, error) {
	if linkType < 0 || linkType > 0xFFFF {
		return nil, fmt.Errorf("compile filter %q: link type %d out of range: %w", expr, linkType, capture.ErrBPF)
	}
	if snaplen < 1 || snaplen > capture.MaxSnaplen {
		return nil, fmt.Errorf("compile filter %q: snaplen %d must be from 1 to %d: %w", expr, snaplen, capture.MaxSnaplen, capture.ErrBPF)
	}
	ins, err := pcap.CompileBPFFilter(layers.LinkType(linkType), snaplen, expr)
	if err != nil {
		return nil, fmt.Errorf("compile filter %q: %w: %w", expr, err, capture.ErrBPF)
	}
	prog := make([]capture.SockFilter, len(ins))
	for i, in := range ins {
		prog[i] = capture.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return prog, nil
}
