//go:build pcap

package capture

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcap"
)

// Live capture through libpcap (gopacket/pcap, cgo), built with -tags
// pcap: for platforms without AF_PACKET, and to compile tcpdump filter
// expressions (CompileBPF) for the AF_PACKET source.

// Bounds of OpenPcapLive's settings.
const (
	pcapBufferSize = 64 << 20 // libpcap's buffer (its ring on Linux); libpcap's own default is 2 MiB
)

// PcapLive is a live libpcap capture on one interface, a Source. Next
// decodes each packet in libpcap's buffer (ZeroCopyReadPacketData):
// Payload is valid until the next call. libpcap puts back the VLAN tag
// the Linux kernel takes out, as AFPacket does.
//
// libpcap goes on through a down interface as through a quiet one, and
// fails every read once it is deleted: IfaceState asks the interface by
// name, Next's error then wraps ErrIfaceDown, and Reopen opens a new
// handle on the interface made again with the name.
//
// Next, Stats, IfaceState and Reopen are for the goroutine that reads;
// KernelStats and Close may be called from any goroutine. Close from another goroutine wakes a
// Next waiting for packets within the read timeout; libpcap's buffer is
// freed by it, so the reader must not use the last Payload after Close.
type PcapLive struct {
	h       *pcap.Handle
	iface   string
	link    uint16
	dec     *DecodeOptions // never nil
	stats   Stats
	defrag  Defragmenter // nil: fragments are handed on as Decode made them
	ifindex int
	w       *ifaceWatch
	open    func() (*pcap.Handle, error) // a new handle, as the first was opened
	downErr error

	mu     sync.Mutex // KernelStats and Close
	closed bool
	ks     KernelStats // the totals so far
	last   [3]uint32   // libpcap's 32-bit counts at the last read, which wrap
}

var (
	_ Source       = (*PcapLive)(nil)
	_ IfaceSource  = (*PcapLive)(nil)
	_ DefragSource = (*PcapLive)(nil)
)

// OpenPcapLive opens iface with libpcap: snaplen bytes kept of each
// packet (0: 262144; else 96 to 262144), promiscuous or not, filter a
// tcpdump expression ("" keeps everything), and timeout libpcap's read
// timeout (0: 10 ms; else 1 ms to 10 s), after which Next returns
// ErrNoPacket when nothing came. libpcap's buffer is 64 MiB.
func OpenPcapLive(iface string, snaplen int, promisc bool, filter string, timeout time.Duration) (*PcapLive, error) {
	if snaplen == 0 {
		snaplen = MaxSnaplen
	}
	if timeout == 0 {
		timeout = 10 * time.Millisecond
	}
	var errs []error
	if iface == "" {
		errs = append(errs, errors.New("iface: no interface named"))
	}
	if snaplen < MinSnaplen || snaplen > MaxSnaplen {
		errs = append(errs, fmt.Errorf("snaplen %d must be from %d to %d (0: %d)", snaplen, MinSnaplen, MaxSnaplen, MaxSnaplen))
	}
	if timeout < MinReadTimeout || timeout > MaxReadTimeout {
		errs = append(errs, fmt.Errorf("timeout %v must be from %v to %v (0: 10ms)", timeout, MinReadTimeout, MaxReadTimeout))
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
	w, err := newIfaceWatch(iface)
	if err != nil {
		return nil, fmt.Errorf("open pcap on %s: %w", iface, err)
	}
	index, _, err := w.lookup()
	if err != nil { // libpcap's own devices ("any"): nothing to watch
		w.close()
		w = nil
	}
	h, err := open()
	if err != nil {
		if w != nil {
			w.close()
		}
		return nil, fmt.Errorf("open pcap on %s: %w", iface, err)
	}
	return &PcapLive{h: h, iface: iface, link: uint16(h.LinkType()), dec: defaultDecodeOptions, ifindex: index, w: w, open: open,
		downErr: fmt.Errorf("read from %s: %w", iface, ErrIfaceDown)}, nil
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
func (s *PcapLive) SetDecodeOptions(o DecodeOptions) { s.dec = o.compiled() }

// Next decodes the next packet into p, in place. Frames that do not
// decode are counted in Stats and skipped. It returns ErrNoPacket when no
// packet came within the read timeout, and io.EOF after Close.
func (s *PcapLive) Next(p *Packet) error {
	for {
		data, ci, err := s.h.ZeroCopyReadPacketData()
		switch {
		case err == nil:
		case errors.Is(err, pcap.NextErrorTimeoutExpired):
			return ErrNoPacket
		case err == io.EOF:
			return io.EOF
		case s.IfaceState() != IfaceUp:
			return s.downErr
		default:
			return fmt.Errorf("read from %s: %w", s.iface, err)
		}
		r := s.dec.Decode(p, s.link, data, ci.Length, ci.Timestamp)
		if p.Fragment != NotFragment && s.defrag != nil && defragments(r) {
			if defragFrame(p, data, r, &s.stats, s.defrag) {
				return nil
			}
			continue
		}
		s.stats.Count(p, r)
		if r == ReasonNone {
			return nil
		}
	}
}

// SetDefragmenter has the handle hand its fragments to d (DefragSource).
func (s *PcapLive) SetDefragmenter(d Defragmenter) { s.defrag = d }

// Stats returns the counts of the packets read. They change as Next is
// called.
func (s *PcapLive) Stats() *Stats { return &s.stats }

// LinkType returns the link type (pcap LINKTYPE_) the packets decode as.
func (s *PcapLive) LinkType() uint16 { return s.link }

// KernelStats returns libpcap's counts since the handle was opened
// (pcap_stats): packets received (on Linux, drops included), dropped for
// want of buffer space, and dropped by the interface; libpcap's 32-bit
// counters are widened, so the totals survive their wrap as long as they
// are read at least once a wrap. After Close, the counts read at Close.
func (s *PcapLive) KernelStats() (KernelStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.ks, nil
	}
	err := s.readKernelStats()
	return s.ks, err
}

func (s *PcapLive) readKernelStats() error {
	st, err := s.h.Stats()
	if err != nil {
		return fmt.Errorf("read libpcap's statistics of %s: %w", s.iface, err)
	}
	// libpcap keeps totals in 32-bit counters: add what each moved
	// since the last read, so the totals outlive a wrap.
	now := [3]uint32{uint32(st.PacketsReceived), uint32(st.PacketsDropped), uint32(st.PacketsIfDropped)}
	s.ks.Add(KernelStats{Packets: uint64(now[0] - s.last[0]), Drops: uint64(now[1] - s.last[1]), IfDrops: uint64(now[2] - s.last[2])})
	s.last = now
	return nil
}

// Close closes the handle, after reading its final counts; a Next
// waiting for packets returns io.EOF within the read timeout. Closing
// twice does nothing.
func (s *PcapLive) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	err := s.readKernelStats()
	s.h.Close()
	if s.w != nil {
		s.w.close()
	}
	s.closed = true
	return err
}

// Iface returns the interface's name.
func (s *PcapLive) Iface() string { return s.iface }

// IfaceState says whether the interface the handle was opened on is up,
// down, or gone (deleted, or another of its name in its place).
// A device libpcap has but the kernel does not (any) is always up.
func (s *PcapLive) IfaceState() IfaceState {
	if s.w == nil {
		return IfaceUp
	}
	return s.w.state(s.ifindex)
}

// Reopen opens a new handle on the interface now named Iface, with the
// settings of the first, after the old one's last counts are kept.
func (s *PcapLive) Reopen() error {
	if s.w == nil {
		return fmt.Errorf("reopen pcap on %s: not an interface of the kernel's", s.iface)
	}
	index, _, err := s.w.lookup()
	if err != nil {
		return fmt.Errorf("reopen pcap: %w", err)
	}
	var h *pcap.Handle
	if err := s.w.do(func() error {
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
	s.readKernelStats()
	s.h.Close()
	s.h, s.link, s.ifindex, s.last = h, uint16(h.LinkType()), index, [3]uint32{}
	return nil
}

// CompileBPF compiles a tcpdump filter expression with libpcap for
// frames of linkType (a pcap LINKTYPE_ value: 1 Ethernet, 101 raw IP)
// cut to snaplen bytes, as a program for AFPacketConfig.Filter. The
// program is compiled for a capture file, where VLAN tags are in the
// frame: on an AF_PACKET socket the kernel has taken the outer tag out
// before the filter runs, so an expression that names "vlan" does not
// match there as written.
func CompileBPF(expr string, linkType int, snaplen int) ([]SockFilter, error) {
	if linkType < 0 || linkType > 0xFFFF {
		return nil, fmt.Errorf("compile filter %q: link type %d out of range: %w", expr, linkType, ErrBPF)
	}
	if snaplen < 1 || snaplen > MaxSnaplen {
		return nil, fmt.Errorf("compile filter %q: snaplen %d must be from 1 to %d: %w", expr, snaplen, MaxSnaplen, ErrBPF)
	}
	ins, err := pcap.CompileBPFFilter(layers.LinkType(linkType), snaplen, expr)
	if err != nil {
		return nil, fmt.Errorf("compile filter %q: %w: %w", expr, err, ErrBPF)
	}
	prog := make([]SockFilter, len(ins))
	for i, in := range ins {
		prog[i] = SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return prog, nil
}
