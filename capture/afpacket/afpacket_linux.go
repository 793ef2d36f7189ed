//go:build linux

package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/ifacewatch"
)

// Socket is one AF_PACKET socket with a TPACKET_V3 receive ring, a
// capture.LiveSource. The kernel writes packets into the ring's blocks and hands a
// block over when it is full or its BlockTimeout has passed; Next decodes
// each frame where the kernel wrote it and gives the block back once all
// its frames were read, at the following call, so a Packet's Payload
// stays valid until then.
//
// Timestamps are the kernel's receive times (tp_sec, tp_nsec), the wire
// length is tp_len and the captured length tp_snaplen. The link type is
// Ethernet for Ethernet and loopback interfaces and raw IP for those with
// no link header (ARPHRD_NONE: tun, WireGuard; ARPHRD_RAWIP).
//
// VLAN: the kernel takes a received frame's outer 802.1Q/802.1ad tag out
// of the frame into tp_vlan_tci (TP_STATUS_VLAN_VALID). Next puts it back,
// as libpcap does: the socket reserves 4 bytes before each frame
// (PACKET_RESERVE), the two MAC addresses move 4 bytes down and the tag
// (tp_vlan_tpid, or 0x8100 when the kernel gives none) goes between them
// and the EtherType, and the wire and captured lengths grow by 4. So
// capture.Decode sees the frame as it was on the wire, and as a capture file
// holds it: same VLAN count, same lengths. A BPF filter still runs on the
// frame without its tag.
//
// The socket sees packets as the interface's receive path hands them
// over, as tcpdump does: packets the host itself sends on the interface
// too (outgoing), and on a NIC that merges segments (GRO, LRO) one frame
// larger than the MTU for several on the wire; on a monitoring port turn
// merging off (ethtool -K IFACE gro off lro off) to count the wire's
// packets.
//
// When the interface goes down the socket's poll reports ENETDOWN and
// Next returns an error wrapping capture.ErrIfaceDown; the socket stays bound and
// the kernel feeds it again once the interface is up. When the interface
// is deleted the socket is unbound for good: Reopen opens a new one on
// the interface made with that name, in the same fanout group, and the
// Socket goes on with it (capture/live.go says what each case looks like).
//
// Next, Stats, LinkType, IfaceState and Reopen are for the one goroutine
// that reads the source; KernelStats and Close may be called from any
// goroutine.
type Socket struct {
	iface   string
	fd      int // -1 once Reopen closed the socket of a deleted interface and has no new one yet
	ifindex int
	link    uint16
	dec     *capture.DecodeOptions // never nil
	cfg     Config                 // as opened, FanoutGroup the group's id: what Reopen opens again
	workers int
	w       *ifacewatch.Watch
	downErr error // Next's error at ENETDOWN, made once
	bsize   int   // bytes of one block
	nblk    int   // blocks in the ring
	pollMs  int   // poll timeout: the block timeout
	pfd     [2]unix.PollFd
	res     *ringRes // the mapping and the eventfd, freed by the reader or a cleanup
	ring    []byte   // res.ring, for the reader
	closed  atomic.Bool

	// The reader's state.
	detached bool   // Reopen closed the socket and its ring, and has no new one yet
	blk      int    // block being read, or waited for
	held     bool   // blk is the reader's (TP_STATUS_USER) until given back
	left     uint32 // frames of blk not yet read
	off      int    // ring offset of the next frame's header
	end      int    // ring offset of blk's end
	stats    capture.Stats
	defrag   capture.Defragmenter // nil: fragments are handed on as Decode made them

	mu sync.Mutex          // Close, capture.KernelStats and Reopen
	ks capture.KernelStats // the kernel's counts read so far
}

var (
	_ capture.LiveSource   = (*Socket)(nil)
	_ capture.DefragSource = (*Socket)(nil)
)

// ringRes is what outlives Close until the reader is done with the ring:
// the mapping (zero pages after Close) and the eventfd that wakes a Next
// in poll. The reader's next Next after Close frees it, or a cleanup when
// the Socket is dropped unread.
type ringRes struct {
	mu   sync.Mutex
	ring []byte
	efd  int
	done bool
}

func (r *ringRes) free() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	if r.ring != nil {
		// The mapping goes with the process if this fails; nothing to tell the caller of Close.
		_ = unix.Munmap(r.ring)
	}
	if r.efd >= 0 {
		unix.Close(r.efd)
	}
}

// Offsets in a TPACKET_V3 block and frame (linux/if_packet.h).
const (
	tp3HdrLen     = int(unsafe.Sizeof(unix.Tpacket3Hdr{})) // struct tpacket3_hdr
	vlanLen       = 4                                      // an 802.1Q tag: TPID and TCI
	macAddrs      = 12                                     // destination and source MAC
	arphrdRaw     = 0x207                                  // ARPHRD_RAWIP
	etherTypeVLAN = 0x8100                                 // 802.1Q, the tag's TPID when the kernel gives none
)

// defaultDecode decodes until SetDecodeOptions gives other options.
var defaultDecode = func() *capture.DecodeOptions {
	o := capture.DefaultDecodeOptions()
	return o.Compiled()
}()

// blockDesc is struct tpacket_block_desc with its tpacket_hdr_v1.
type blockDesc struct {
	version  uint32
	toPriv   uint32
	status   uint32
	numPkts  uint32
	firstOff uint32
	blkLen   uint32
	seq      uint64
	tsFirst  [2]uint32
	tsLast   [2]uint32
}

// Open opens workers sockets on c.Iface, each with its own
// TPACKET_V3 receive ring of c.BlockCount blocks of c.BlockSize bytes.
// With more than one worker they are joined in one PACKET_FANOUT group,
// so each packet reaches exactly one of them: with fanout "hash" by the
// kernel's flow hash, which is symmetric (the flow dissector's hash of
// the sorted addresses and ports), so both directions of a flow reach one
// socket; IPv4 fragments are reassembled first (PACKET_FANOUT_FLAG_DEFRAG)
// so they go with their flow, which means the sockets see each complete
// datagram once, not its fragments, and never an incomplete one.
//
// No socket receives a packet before every socket has joined the group:
// each starts with a filter that drops everything, which the real filter
// (or none) replaces at the end. workers is from 1 to 256. Opening needs
// CAP_NET_RAW; the sockets stay in the network namespace of the thread
// that opened them.
func Open(c Config, workers int) ([]*Socket, error) {
	c = c.WithDefaults()
	if err := errors.Join(c.Validate(), validWorkers(workers)); err != nil {
		return nil, fmt.Errorf("open afpacket: %w", err)
	}
	socks := make([]*Socket, 0, workers)
	fail := func(err error) ([]*Socket, error) {
		for _, s := range socks {
			s.Close()
		}
		return nil, fmt.Errorf("open afpacket on %s: %w", c.Iface, err)
	}
	group := c.FanoutGroup
	for i := range workers {
		s, err := openSocket(&c)
		if err != nil {
			return fail(err)
		}
		runtime.AddCleanup(s, (*ringRes).free, s.res)
		socks = append(socks, s)
		if s.w, err = ifacewatch.Open(c.Iface); err != nil {
			return fail(err)
		}
		if workers == 1 {
			break
		}
		if err := s.joinFanout(group, c.Fanout, i == 0 && group == 0); err != nil {
			return fail(err)
		}
		if i == 0 && group == 0 {
			v, err := unix.GetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_FANOUT)
			if err != nil {
				return fail(fmt.Errorf("read the fanout group id: %w", err))
			}
			group = uint16(v)
		}
	}
	c.FanoutGroup = group
	for _, s := range socks {
		if err := s.setFilter(c.Filter); err != nil {
			return fail(err)
		}
		s.cfg, s.workers = c, workers
	}
	return socks, nil
}

// joinFanout joins the socket to fanout group id (with unique, to a new
// group whose id the kernel picks).
func (s *Socket) joinFanout(id uint16, fanout string, unique bool) error {
	mode := fanoutMode(fanout)
	if unique {
		mode |= unix.PACKET_FANOUT_FLAG_UNIQUEID
	}
	if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_FANOUT, int(id)|mode<<16); err != nil {
		return fmt.Errorf("join fanout group %d (%s): %w", id, fanout, err)
	}
	return nil
}

// fanoutMode is the PACKET_FANOUT type and flags of a fanout setting.
func fanoutMode(fanout string) int {
	switch fanout {
	case FanoutCPU:
		return unix.PACKET_FANOUT_CPU
	case FanoutLB:
		return unix.PACKET_FANOUT_LB
	}
	return unix.PACKET_FANOUT_HASH | unix.PACKET_FANOUT_FLAG_DEFRAG
}

// dropAll is the filter a socket starts with: return 0, keep nothing.
var dropAll = []capture.SockFilter{{Code: 0x06}}

// openSocket opens one socket, its ring bound to c.Iface and receiving
// nothing yet (the dropAll filter). The caller adds the cleanup that
// frees the ring of a Socket dropped unread.
func openSocket(c *Config) (_ *Socket, err error) {
	// Protocol 0: the socket receives nothing until bound with ETH_P_ALL,
	// after the ring and the filter are in place.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("open AF_PACKET socket: %w (needs root or CAP_NET_RAW)", err)
		}
		return nil, fmt.Errorf("open AF_PACKET socket: %w", err)
	}
	s := &Socket{iface: c.Iface, fd: fd, dec: defaultDecode, bsize: c.BlockSize, nblk: c.BlockCount,
		pollMs: int(c.BlockTimeout / time.Millisecond), res: &ringRes{efd: -1},
		downErr: fmt.Errorf("capture on %s: %w", c.Iface, capture.ErrIfaceDown)}
	defer func() {
		if err != nil {
			s.Close()
			s.res.free()
		}
	}()
	ifindex, link, err := ifaceInfo(fd, c.Iface)
	if err != nil {
		return nil, err
	}
	s.link, s.ifindex = link, ifindex
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return nil, fmt.Errorf("set TPACKET_V3: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_RESERVE, vlanLen); err != nil {
		return nil, fmt.Errorf("reserve room for the VLAN tag: %w", err)
	}
	if err := s.setFilter(dropAll); err != nil {
		return nil, err
	}
	req := unix.TpacketReq3{
		Block_size:     uint32(c.BlockSize),
		Block_nr:       uint32(c.BlockCount),
		Frame_size:     uint32(c.FrameSize),
		Frame_nr:       uint32(c.BlockSize / c.FrameSize * c.BlockCount),
		Retire_blk_tov: uint32(c.BlockTimeout / time.Millisecond),
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("set up a ring of %d blocks of %d bytes: %w", c.BlockCount, c.BlockSize, err)
	}
	ring, err := unix.Mmap(fd, 0, c.BlockSize*c.BlockCount, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("map the ring of %d bytes: %w", c.BlockSize*c.BlockCount, err)
	}
	s.ring, s.res.ring = ring, ring
	if s.res.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("open eventfd: %w", err)
	}
	s.pfd = [2]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(s.res.efd), Events: unix.POLLIN}}
	if c.Promisc {
		mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return nil, fmt.Errorf("set promiscuous mode: %w", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		return nil, fmt.Errorf("bind to %s: %w", c.Iface, err)
	}
	return s, nil
}

// ifaceInfo returns the index of the interface named name in fd's network
// namespace, and the link type its frames decode as.
func ifaceInfo(fd int, name string) (int, uint16, error) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, 0, fmt.Errorf("interface %q: %w", name, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		if errors.Is(err, unix.ENODEV) {
			return 0, 0, fmt.Errorf("no interface %q in this network namespace: %w", name, err)
		}
		return 0, 0, fmt.Errorf("interface %q: read its index: %w", name, err)
	}
	index := int(ifr.Uint32())
	ifr, _ = unix.NewIfreq(name)
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFHWADDR, ifr); err != nil {
		return 0, 0, fmt.Errorf("interface %q: read its link type: %w", name, err)
	}
	switch t := ifr.Uint16(); t {
	case unix.ARPHRD_ETHER, unix.ARPHRD_LOOPBACK:
		return index, capture.LinkEthernet, nil
	case unix.ARPHRD_NONE, arphrdRaw:
		return index, capture.LinkRaw, nil
	default:
		return 0, 0, fmt.Errorf("interface %q has link type ARPHRD %d; this source reads Ethernet, loopback and raw IP (ARPHRD_NONE, ARPHRD_RAWIP): %w",
			name, t, capture.ErrNotSupported)
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// setFilter attaches prog to the socket, replacing the filter it has; an
// empty prog detaches it.
func (s *Socket) setFilter(prog []capture.SockFilter) error {
	if len(prog) == 0 {
		err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("detach the filter: %w", err)
		}
		return nil
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(s.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		return fmt.Errorf("attach the BPF filter (%d instructions): %w", len(prog), err)
	}
	return nil
}

// SetDecodeOptions has the packets from now on decoded with o.
func (s *Socket) SetDecodeOptions(o capture.DecodeOptions) { s.dec = o.Compiled() }

// Next decodes the next packet from the ring into p, in place: no copy,
// no allocation. Frames that do not decode are counted in Stats and
// skipped. When no packet comes within the block timeout it returns
// capture.ErrNoPacket; after Close, io.EOF.
func (s *Socket) Next(p *capture.Packet) error {
	for {
		if s.closed.Load() {
			return s.endRead()
		}
		if s.left == 0 {
			if s.detached {
				return s.waitDetached()
			}
			if err := s.nextBlock(); err != nil {
				return err
			}
			continue
		}
		if s.frame(p) {
			return nil
		}
	}
}

// frame decodes the next frame of the block being read into p, counts it,
// and reports whether it is a flow packet.
func (s *Socket) frame(p *capture.Packet) bool {
	off := s.off
	if off < 0 || off+tp3HdrLen > s.end {
		s.left = 0 // a frame header past the block: the kernel's bug, not ours to read
		return false
	}
	h := (*unix.Tpacket3Hdr)(unsafe.Pointer(&s.ring[off]))
	mac, snap := off+int(h.Mac), int(h.Snaplen)
	if int(h.Mac) < tp3HdrLen+vlanLen || mac+snap > s.end {
		s.left = 0
		return false
	}
	s.left--
	s.off = off + int(h.Next_offset)
	start, wire := mac, int(h.Len)
	if h.Status&unix.TP_STATUS_VLAN_VALID != 0 && s.link == capture.LinkEthernet && snap >= macAddrs {
		tpid := uint16(etherTypeVLAN)
		if h.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
			tpid = h.Hv1.Vlan_tpid
		}
		start = mac - vlanLen
		copy(s.ring[start:start+macAddrs], s.ring[mac:mac+macAddrs])
		binary.BigEndian.PutUint16(s.ring[start+macAddrs:], tpid)
		binary.BigEndian.PutUint16(s.ring[start+macAddrs+2:], uint16(h.Hv1.Vlan_tci))
		wire += vlanLen
	}
	end := mac + snap
	r := s.dec.Decode(p, s.link, s.ring[start:end:end], wire, time.Unix(int64(h.Sec), int64(h.Nsec)))
	if p.Fragment != capture.NotFragment && s.defrag != nil && capture.Defragments(r) {
		return capture.DefragFrame(p, s.ring[start:end:end], r, &s.stats, s.defrag)
	}
	s.stats.Count(p, r)
	return r == capture.ReasonNone
}

// SetDefragmenter has the socket hand its fragments to d
// (capture.DefragSource):
// the reassembled datagrams live in d, not in the ring.
func (s *Socket) SetDefragmenter(d capture.Defragmenter) { s.defrag = d }

// nextBlock gives the block read back to the kernel and takes the next,
// polling for it once if the kernel has not handed it over yet.
func (s *Socket) nextBlock() error {
	if s.held {
		atomic.StoreUint32(&s.desc(s.blk).status, unix.TP_STATUS_KERNEL)
		s.held = false
		if s.blk++; s.blk == s.nblk {
			s.blk = 0
		}
	}
	for polled := false; ; polled = true {
		bd := s.desc(s.blk)
		if atomic.LoadUint32(&bd.status)&unix.TP_STATUS_USER != 0 {
			base := s.blk * s.bsize
			s.held, s.left = true, bd.numPkts
			s.off, s.end = base+int(bd.firstOff), base+s.bsize
			return nil
		}
		if polled {
			return capture.ErrNoPacket
		}
		_, err := unix.Poll(s.pfd[:], s.pollMs)
		if s.closed.Load() {
			return s.endRead()
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				return capture.ErrNoPacket
			}
			return fmt.Errorf("poll the ring of %s: %w", s.iface, err)
		}
		if s.pfd[0].Revents&unix.POLLERR != 0 {
			if err := s.sockErr(); err != nil {
				return err
			}
		}
	}
}

// sockErr reads (and so clears: poll reports POLLERR until it is read)
// the socket's pending error: ENETDOWN when the interface went down or
// was deleted.
func (s *Socket) sockErr() error {
	e, err := unix.GetsockoptInt(int(s.pfd[0].Fd), unix.SOL_SOCKET, unix.SO_ERROR)
	switch errno := unix.Errno(e); {
	case err != nil:
		return fmt.Errorf("read the socket's error on %s: %w", s.iface, err)
	case errno == 0:
		return nil
	case errno == unix.ENETDOWN || errno == unix.ENODEV || errno == unix.ENXIO:
		return s.downErr
	default:
		return fmt.Errorf("capture on %s: %w", s.iface, errno)
	}
}

// waitDetached waits a poll timeout, or until Close, with no socket to
// read.
func (s *Socket) waitDetached() error {
	// A failed poll is a wait cut short: the caller polls again.
	_, _ = unix.Poll(s.pfd[1:], s.pollMs)
	if s.closed.Load() {
		return s.endRead()
	}
	return capture.ErrNoPacket
}

func (s *Socket) desc(blk int) *blockDesc {
	return (*blockDesc)(unsafe.Pointer(&s.ring[blk*s.bsize]))
}

// endRead is the reader's end after Close: the ring is no longer read,
// so its mapping goes.
func (s *Socket) endRead() error {
	s.left, s.held = 0, false
	s.res.free()
	return io.EOF
}

// Stats returns the counts of the frames read from the ring. They change
// as Next is called.
func (s *Socket) Stats() *capture.Stats { return &s.stats }

// LinkType returns the link type the frames decode as
// (capture.LinkEthernet or capture.LinkRaw).
func (s *Socket) LinkType() uint16 { return s.link }

// KernelStats returns the kernel's counts for the socket since it was
// opened (PACKET_STATISTICS, struct tpacket_stats_v3): packets that
// passed the filter (drops included), drops for want of ring space, and
// the times the ring froze full. The kernel zeroes its counters at every
// read, so the socket keeps the totals; after Close they are those read
// at Close. Safe to call from any goroutine.
func (s *Socket) KernelStats() (capture.KernelStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() || s.fd < 0 {
		return s.ks, nil
	}
	err := s.readKernelStats()
	return s.ks, err
}

// readKernelStats adds the kernel's counts since the last read to s.ks;
// s.mu is held.
func (s *Socket) readKernelStats() error {
	st, err := unix.GetsockoptTpacketStatsV3(s.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return fmt.Errorf("read the kernel's statistics of %s: %w", s.iface, err)
	}
	s.ks.Add(capture.KernelStats{Packets: uint64(st.Packets), Drops: uint64(st.Drops), FreezeQueue: uint64(st.Freeze_q_cnt)})
	return nil
}

// Close closes the socket, leaving its fanout group, and wakes a Next
// waiting in poll, which returns io.EOF. It may be called from any
// goroutine, while Next runs or while the reader still uses the last
// packet: the ring's pages are swapped for zero pages at the same address
// (one mmap with MAP_FIXED), so the kernel's memory is freed at once and
// the reader never touches an unmapped page; that mapping goes at the
// reader's next Next, or when the Socket is dropped. The kernel's final
// counts are read first (KernelStats keeps them). Closing twice does
// nothing.
func (s *Socket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil
	}
	var errs []error
	if s.fd >= 0 && s.ring != nil {
		errs = append(errs, s.readKernelStats())
	}
	s.res.mu.Lock()
	if !s.res.done && s.ring != nil {
		// If this fails the ring stays mapped, the kernel's pages with
		// it, until the reader is done: still safe.
		_, _ = unix.MmapPtr(-1, 0, unsafe.Pointer(&s.ring[0]), uintptr(len(s.ring)),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	}
	if !s.res.done && s.res.efd >= 0 {
		// A full eventfd counter already wakes the reader.
		_, _ = unix.Write(s.res.efd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
	s.res.mu.Unlock()
	s.closed.Store(true)
	if s.fd >= 0 {
		if err := unix.Close(s.fd); err != nil {
			errs = append(errs, fmt.Errorf("close the socket on %s: %w", s.iface, err))
		}
		s.fd = -1
	}
	if s.w != nil {
		s.w.Close()
	}
	return errors.Join(errs...)
}

// EBPFStats says no eBPF program feeds the socket.
func (s *Socket) EBPFStats() (capture.EBPFStats, bool) { return capture.EBPFStats{}, false }

// Iface returns the interface's name.
func (s *Socket) Iface() string { return s.iface }

// IfaceState says whether the interface the socket is bound to is up,
// down, or gone (deleted, or another of its name in its place).
func (s *Socket) IfaceState() capture.IfaceState { return capture.IfaceStateOf(s.w.On(s.ifindex)) }

// Reopen opens the socket again on the interface now named Iface, with
// the ring, filter and fanout group it had. The old socket is closed
// first, its last counts kept: its fanout group is tied to the deleted
// device, and a new socket can join the group's id only once every old
// socket of it has closed, so while the other workers have not reopened
// yet Reopen fails and is tried again, Next waiting meanwhile. The old
// ring is unmapped with the socket: the mapping holds the socket, and
// with it the group, open. The first socket to join makes the group
// anew; until the others join it takes their flows too.
func (s *Socket) Reopen() error {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return fmt.Errorf("reopen afpacket on %s: closed", s.iface)
	}
	if !s.detached {
		// The counters are best effort: the old socket goes either way.
		_ = s.readKernelStats()
		s.res.mu.Lock()
		if !s.res.done && s.res.ring != nil {
			// The old ring goes either way; a failed unmap leaks address space only.
			_ = unix.Munmap(s.res.ring)
			s.res.ring = nil
		}
		s.res.mu.Unlock()
		unix.Close(s.fd)
		s.fd, s.ifindex, s.ring = -1, -1, nil
		s.detached, s.left, s.held = true, 0, false
	}
	s.mu.Unlock()
	var n *Socket
	err := s.w.Do(func() error {
		var err error
		if n, err = openSocket(&s.cfg); err != nil {
			return err
		}
		if s.workers > 1 {
			if err := n.joinFanout(s.cfg.FanoutGroup, s.cfg.Fanout, false); err != nil {
				return err
			}
		}
		return n.setFilter(s.cfg.Filter)
	})
	if err != nil {
		if n != nil {
			n.Close()
			n.res.free()
		}
		return fmt.Errorf("reopen afpacket on %s: %w", s.iface, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		n.Close()
		n.res.free()
		return fmt.Errorf("reopen afpacket on %s: closed", s.iface)
	}
	old := s.res
	s.fd, s.ifindex, s.link, s.ring, s.res, s.pfd = n.fd, n.ifindex, n.link, n.ring, n.res, n.pfd
	s.blk, s.held, s.left, s.off, s.end, s.detached = 0, false, 0, 0, 0, false
	old.free()
	runtime.AddCleanup(s, (*ringRes).free, s.res)
	return nil
}
