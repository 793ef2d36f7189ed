package defrag

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// Fixed shapes of a datagram in progress.
const (
	blockShift = 10
	blockSize  = 1 << blockShift // the unit MaxBytes is held in
	maxData    = 65535           // the most fragment data a datagram may have
	maxBlocks  = (maxData + blockSize) / blockSize
	// maxFrags is the most fragments one datagram may come in, duplicates
	// and overlaps included: a 64 KiB datagram at IPv4's 576-byte
	// minimum reassembly size is 117.
	maxFrags = 128
	// maxHeader is the longest header kept: IPv4's 60 bytes, or IPv6's
	// fixed header and the extension headers before the fragment header.
	maxHeader = 256
)

// key names a datagram: RFC 791's (source, destination, protocol,
// identification) for IPv4, RFC 8200's (source, destination,
// identification) for IPv6 (proto 0).
type key struct {
	src, dst [16]byte
	id       uint32
	proto    uint8
	v6       bool
}

func (k *key) hash() uint64 {
	h := hashmix.Mix(binary.LittleEndian.Uint64(k.src[:]) ^ uint64(k.id)<<8 ^ uint64(k.proto))
	h = hashmix.Mix(h ^ binary.LittleEndian.Uint64(k.src[8:]))
	h = hashmix.Mix(h ^ binary.LittleEndian.Uint64(k.dst[:]))
	return hashmix.Mix(h ^ binary.LittleEndian.Uint64(k.dst[8:]))
}

// datagram is one datagram in progress: the data its fragments brought,
// in blocks at their offsets, and the ranges of it they cover.
type datagram struct {
	key
	next         int32 // the next in its hash bucket, or in the free list
	older, newer int32 // the list of datagrams by their first fragment
	deadline     int64 // packet time (Unix ns) past which it is dropped
	end          int32 // the data's length once the last fragment came; -1 before
	nfrags       uint16
	nranges      uint16
	hdrLen       uint16 // the first fragment's header, once it came; 0 before
	nextAt       uint16 // IPv6: the offset in hdr of the byte naming the fragment header
	nextProto    uint8  // IPv6: the protocol the first fragment's fragment header names
	blocks       [maxBlocks]int32
	ranges       [maxFrags][2]uint16 // covered [lo, hi), sorted, apart
	hdr          [maxHeader]byte
}

// Reassembler puts IP datagrams back together from their fragments, in
// memory fixed at New: a table of Config.MaxDatagrams datagrams in
// progress and Config.MaxBytes of data. It implements
// capture.Defragmenter. It is not safe for concurrent use: each source's
// goroutine has its own.
type Reassembler struct {
	cfg     Config
	timeout int64
	dgs     []datagram
	buckets []int32 // heads of the hash chains, -1 for none
	mask    uint64
	free    int32 // free datagrams, chained by next
	oldest  int32 // the list by first fragment: expiry and eviction take its head
	newest  int32
	data    []byte  // MaxBytes / blockSize blocks
	blocks  []int32 // free blocks, a stack
	held    uint64  // fragments in datagrams in progress
	out     []byte  // room for a datagram: the one reassembled is valid until the next Add
	last    []byte  // the last datagram reassembled, in out
}

var _ capture.Defragmenter = (*Reassembler)(nil)

// New allocates a Reassembler for c.
func New(c Config) (*Reassembler, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("defrag: %w", err)
	}
	nb := 1
	for nb < 2*c.MaxDatagrams {
		nb <<= 1
	}
	r := &Reassembler{
		cfg:     c,
		timeout: int64(c.Timeout),
		dgs:     make([]datagram, c.MaxDatagrams),
		buckets: make([]int32, nb),
		mask:    uint64(nb - 1),
		oldest:  -1,
		newest:  -1,
		data:    make([]byte, c.MaxBytes/blockSize*blockSize),
		blocks:  make([]int32, c.MaxBytes/blockSize),
		out:     make([]byte, maxHeader+maxData),
	}
	for i := range r.buckets {
		r.buckets[i] = -1
	}
	for i := range r.dgs {
		r.dgs[i].next = int32(i) + 1
	}
	r.dgs[len(r.dgs)-1].next = -1
	for i := range r.blocks {
		r.blocks[i] = int32(len(r.blocks) - 1 - i)
	}
	return r, nil
}

// MemoryBytes is the memory New allocated.
func (r *Reassembler) MemoryBytes() int {
	return len(r.dgs)*int(unsafe.Sizeof(datagram{})) + 4*len(r.buckets) + len(r.data) + 4*cap(r.blocks) + len(r.out)
}

// InProgress is the number of datagrams held, not yet whole.
func (r *Reassembler) InProgress() int {
	n := 0
	for i := r.oldest; i >= 0; i = r.dgs[i].newer {
		n++
	}
	return n
}

// frag is one fragment as Add reads it.
type frag struct {
	key
	hdr       []byte // its header: IPv4's, or IPv6's up to the fragment header
	data      []byte // its data
	off, hi   int    // the data's place in the datagram's
	more      bool   // more fragments follow it
	nextAt    int    // IPv6: the offset in hdr of the byte naming the fragment header
	nextProto uint8  // IPv6: the protocol its fragment header names
	limit     int    // the most data its datagram may have
}

// parse reads the fragment in ip, its data at offset data. It reports
// false when the fragment was cut short by the snaplen (or its lengths
// do not hold together), so that it is handed on as it is.
func parse(ip []byte, data int, f *frag) bool {
	if len(ip) < 1 {
		return false
	}
	switch ip[0] >> 4 {
	case 4:
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if data < 20 || total < data || len(ip) < total {
			return false
		}
		fo := binary.BigEndian.Uint16(ip[6:])
		f.key = key{id: uint32(binary.BigEndian.Uint16(ip[4:])), proto: ip[9]}
		copy(f.src[:], ip[12:16])
		copy(f.dst[:], ip[16:20])
		f.hdr, f.data = ip[:data], ip[data:total]
		f.off, f.more = int(fo&0x1FFF)*8, fo&0x2000 != 0
		f.limit = maxData - data
	case 6:
		fh := data - 8
		if fh < 40 || len(ip) < 40 {
			return false
		}
		end := 40 + int(binary.BigEndian.Uint16(ip[4:]))
		if end < data || len(ip) < end {
			return false
		}
		nextAt, at := 6, 40 // walk to the header before the fragment header
		for at < fh {
			l := (int(ip[at+1]) + 1) * 8
			if ip[nextAt] == 51 { // AH counts in 4-byte words
				l = (int(ip[at+1]) + 2) * 4
			}
			nextAt, at = at, at+l
		}
		if at != fh {
			return false
		}
		fo := binary.BigEndian.Uint16(ip[fh+2:])
		f.key = key{id: binary.BigEndian.Uint32(ip[fh+4:]), v6: true}
		copy(f.src[:], ip[8:24])
		copy(f.dst[:], ip[24:40])
		f.hdr, f.data = ip[:fh], ip[data:end]
		f.off, f.more = int(fo&^7), fo&1 != 0
		f.nextAt, f.nextProto = nextAt, ip[fh]
		f.limit = maxData - (fh - 40)
	default:
		return false
	}
	f.hi = f.off + len(f.data)
	return true
}

// Add takes the fragment p that capture.Decode made of frame (see
// capture.Defragmenter). A datagram once whole is decoded from the
// reassembled bytes with the link type and tags of its last fragment, and
// takes that fragment's time; its WireLen and CapLen are the datagram's
// length.
func (r *Reassembler) Add(p *capture.Packet, frame []byte, st *capture.DefragStats) (capture.FragResult, capture.Reason) {
	ip, data := p.FragmentIP(frame)
	var f frag
	if ip == nil || !parse(ip, data, &f) {
		st.Passed++
		return capture.FragPass, capture.ReasonNone
	}
	now := p.Timestamp.UnixNano()
	r.expire(now, st)
	st.Fragments++
	res, reason := r.add(p, &f, now, st)
	st.Held = r.held
	return res, reason
}

// Datagram is the datagram the last FragDone reassembled
// (capture.Defragmenter).
func (r *Reassembler) Datagram() []byte { return r.last }

func (r *Reassembler) add(p *capture.Packet, f *frag, now int64, st *capture.DefragStats) (capture.FragResult, capture.Reason) {
	i := r.lookup(&f.key, now, st)
	d := &r.dgs[i]
	d.nfrags++
	r.held++
	why := capture.DefragDrop(0)
	switch {
	case f.hi > f.limit:
		why = capture.DropTooLarge
	case int(d.nfrags) > maxFrags:
		why = capture.DropTooManyFrags
	case f.off == 0 && len(f.hdr) > maxHeader:
		why = capture.DropInvalid
	case !r.reserve(i, f.off, f.hi, st):
		why = capture.DropBytesFull
	default:
		// The end is the last fragment's, or past it the furthest data
		// seen, as Zeek takes it: a datagram whose fragments disagree is
		// still delivered, as far as its data runs from 0 without a hole.
		if (!f.more && d.end < 0) || (d.end >= 0 && int32(f.hi) > d.end) {
			d.end = int32(f.hi)
		}
		if f.off == 0 {
			d.hdrLen = uint16(copy(d.hdr[:], f.hdr))
			d.nextAt, d.nextProto = uint16(f.nextAt), f.nextProto
		}
		r.write(d, f)
		if d.hdrLen == 0 || d.end < 0 || d.nranges == 0 || d.ranges[0][0] != 0 || int32(d.ranges[0][1]) < d.end {
			return capture.FragHeld, capture.ReasonNone
		}
		return capture.FragDone, r.finish(i, p, st)
	}
	r.drop(i, why, st)
	return capture.FragHeld, capture.ReasonNone
}

// lookup finds the datagram of k, or starts one (evicting the oldest
// when the table is full).
func (r *Reassembler) lookup(k *key, now int64, st *capture.DefragStats) int32 {
	b := k.hash() & r.mask
	for i := r.buckets[b]; i >= 0; i = r.dgs[i].next {
		if r.dgs[i].key == *k {
			return i
		}
	}
	if r.free < 0 {
		r.drop(r.oldest, capture.DropTableFull, st)
	}
	i := r.free
	d := &r.dgs[i]
	r.free = d.next
	d.key = *k
	d.next, r.buckets[b] = r.buckets[b], i
	d.older, d.newer = r.newest, -1
	if r.newest >= 0 {
		r.dgs[r.newest].newer = i
	} else {
		r.oldest = i
	}
	r.newest = i
	d.deadline = now + r.timeout
	d.end, d.nfrags, d.nranges, d.hdrLen = -1, 0, 0, 0
	for j := range d.blocks {
		d.blocks[j] = -1
	}
	return i
}

// expire drops the datagrams not whole by their deadline.
func (r *Reassembler) expire(now int64, st *capture.DefragStats) {
	for r.oldest >= 0 && r.dgs[r.oldest].deadline < now {
		r.drop(r.oldest, capture.DropTimeout, st)
	}
}

// reserve makes sure datagram i has the blocks for data [lo, hi),
// evicting the oldest other datagrams while there are too few free; it
// reports false when none is left to evict.
func (r *Reassembler) reserve(i int32, lo, hi int, st *capture.DefragStats) bool {
	if hi <= lo {
		return true
	}
	d := &r.dgs[i]
	need := 0
	for k := lo >> blockShift; k <= (hi-1)>>blockShift; k++ {
		if d.blocks[k] < 0 {
			need++
		}
	}
	for len(r.blocks) < need {
		o := r.oldest
		if o == i {
			o = d.newer
		}
		if o < 0 {
			return false
		}
		r.drop(o, capture.DropBytesFull, st)
	}
	for k := lo >> blockShift; k <= (hi-1)>>blockShift; k++ {
		if d.blocks[k] < 0 {
			d.blocks[k] = r.blocks[len(r.blocks)-1]
			r.blocks = r.blocks[:len(r.blocks)-1]
		}
	}
	return true
}

// write puts f's data into d as the policy says and adds its range.
func (r *Reassembler) write(d *datagram, f *frag) {
	lo, hi := f.off, f.hi
	if lo == hi {
		return
	}
	if r.cfg.Policy == Last {
		r.put(d, lo, f.data)
	} else {
		at := lo // the holes of [lo, hi) between the covered ranges
		for _, c := range d.ranges[:d.nranges] {
			c0, c1 := int(c[0]), int(c[1])
			if c1 <= at {
				continue
			}
			if c0 >= hi {
				break
			}
			if c0 > at {
				r.put(d, at, f.data[at-lo:c0-lo])
			}
			at = c1
			if at >= hi {
				break
			}
		}
		if at < hi {
			r.put(d, at, f.data[at-lo:])
		}
	}
	// Merge [lo, hi) into the ranges, joining those it touches.
	n := int(d.nranges)
	a := 0
	for a < n && int(d.ranges[a][1]) < lo {
		a++
	}
	b := a
	for b < n && int(d.ranges[b][0]) <= hi {
		b++
	}
	if a < b {
		lo = min(lo, int(d.ranges[a][0]))
		hi = max(hi, int(d.ranges[b-1][1]))
	}
	// Ranges never outnumber fragments, so one more always fits.
	copy(d.ranges[a+1:], d.ranges[b:n])
	d.ranges[a] = [2]uint16{uint16(lo), uint16(hi)}
	d.nranges = uint16(n - (b - a) + 1)
}

// put copies b into d's blocks from offset off.
func (r *Reassembler) put(d *datagram, off int, b []byte) {
	for len(b) > 0 {
		k, o := off>>blockShift, off&(blockSize-1)
		n := copy(r.data[int(d.blocks[k])<<blockShift+o:int(d.blocks[k]+1)<<blockShift], b)
		off, b = off+n, b[n:]
	}
}

// finish assembles whole datagram i into r.out, frees it, and decodes
// the datagram into p.
func (r *Reassembler) finish(i int32, p *capture.Packet, st *capture.DefragStats) capture.Reason {
	d := &r.dgs[i]
	h, end := int(d.hdrLen), int(d.ranges[0][1])
	out := r.out[:h+end]
	copy(out, d.hdr[:h])
	for k := 0; k<<blockShift < end; k++ {
		b := int(d.blocks[k]) << blockShift
		copy(out[h+k<<blockShift:], r.data[b:b+min(blockSize, end-k<<blockShift)])
	}
	link := capture.LinkIPv4
	if d.v6 {
		link = capture.LinkIPv6
		binary.BigEndian.PutUint16(out[4:], uint16(h-40+end))
		out[d.nextAt] = d.nextProto
	} else {
		binary.BigEndian.PutUint16(out[2:], uint16(h+end))
		out[6] &= 0x40 // keep DF; no more fragments, offset 0
		out[7] = 0
		binary.BigEndian.PutUint16(out[10:], 0)
		binary.BigEndian.PutUint16(out[10:], ipv4Checksum(out[:h]))
	}
	r.last = out
	st.Datagrams++
	r.held -= uint64(d.nfrags)
	r.release(i)
	lt, vlans := p.LinkType, p.VLANs
	var reason capture.Reason
	if r.cfg.Decode != nil {
		reason = r.cfg.Decode.Decode(p, link, out, len(out), p.Timestamp)
	} else {
		reason = capture.Decode(p, link, out, len(out), p.Timestamp)
	}
	p.LinkType, p.VLANs = lt, vlans
	return reason
}

// ipv4Checksum is the header checksum of h (whose checksum field is 0).
func ipv4Checksum(h []byte) uint16 {
	var s uint32
	for j := 0; j+1 < len(h); j += 2 {
		s += uint32(binary.BigEndian.Uint16(h[j:]))
	}
	for s > 0xFFFF {
		s = s&0xFFFF + s>>16
	}
	return ^uint16(s)
}

// drop drops datagram i and counts its fragments as dropped for why.
func (r *Reassembler) drop(i int32, why capture.DefragDrop, st *capture.DefragStats) {
	n := uint64(r.dgs[i].nfrags)
	st.Dropped[why] += n
	r.held -= n
	r.release(i)
}

// release frees datagram i and its blocks.
func (r *Reassembler) release(i int32) {
	d := &r.dgs[i]
	for _, b := range d.blocks {
		if b >= 0 {
			r.blocks = append(r.blocks, b) // within the capacity New gave
		}
	}
	bk := d.key.hash() & r.mask
	if r.buckets[bk] == i {
		r.buckets[bk] = d.next
	} else {
		j := r.buckets[bk]
		for r.dgs[j].next != i {
			j = r.dgs[j].next
		}
		r.dgs[j].next = d.next
	}
	if d.older >= 0 {
		r.dgs[d.older].newer = d.newer
	} else {
		r.oldest = d.newer
	}
	if d.newer >= 0 {
		r.dgs[d.newer].older = d.older
	} else {
		r.newest = d.older
	}
	d.next, r.free = r.free, i
}
