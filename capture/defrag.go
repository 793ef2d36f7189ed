package capture

// IP fragments. Decode marks a fragment (Packet.Fragment) and keys it as
// it can: a first fragment on its 5-tuple, a later one on its addresses
// and protocol. A source given a Defragmenter (SetDefragmenter) hands it
// every fragment it decodes instead: the fragments are held, and once a
// datagram is whole it reaches the caller as one packet decoded from the
// reassembled bytes, keyed on its full 5-tuple. Package capture/defrag is
// the reassembler.

// Defragmenter reassembles IP datagrams from their fragments. It is
// used by the one goroutine that reads its source.
type Defragmenter interface {
	// Add takes the fragment p that Decode made of frame (the bytes it
	// was given; a first fragment may be too short for its transport
	// header, and then p has no key) and counts what it did in st. FragHeld: the fragment is
	// kept, p holds nothing to hand on. FragDone: p is now the whole
	// datagram, decoded from bytes the Defragmenter owns, valid until its
	// next Add. FragPass: the fragment could not be taken (cut short by
	// the snaplen): p is unchanged, to be handed on as a fragment. With
	// FragDone, r is Decode's answer for the datagram (ReasonNone, or why
	// its bytes are no flow packet).
	Add(p *Packet, frame []byte, st *DefragStats) (res FragResult, r Reason)
	// Datagram is the datagram the last FragDone reassembled, from its
	// IP header on: the bytes p was decoded from, valid until the next
	// Add.
	Datagram() []byte
}

// FragResult is what a Defragmenter did with a fragment.
type FragResult uint8

const (
	FragHeld FragResult = iota // kept (or counted dropped): nothing to hand on
	FragDone                   // p holds the reassembled datagram
	FragPass                   // not taken: p is the fragment, unchanged
)

// DefragDrop says why fragments the reassembler had taken were dropped.
// The set is fixed: a metric label and a fixed-size counter array.
type DefragDrop uint8

const (
	DropTimeout      DefragDrop = iota // the datagram was not whole within the timeout
	DropTableFull                      // evicted, oldest first, for a new datagram when the table was full
	DropBytesFull                      // evicted, oldest first, when the bytes held reached the bound
	DropTooLarge                       // the datagram would be over 65,535 bytes
	DropTooManyFrags                   // the datagram came in more pieces than a datagram may hold
	DropInvalid                        // inconsistent: two ends, data past the end, a header too long
	numDefragDrops
)

var defragDropNames = [numDefragDrops]string{"timeout", "table_full", "bytes_full", "too_large", "too_many_fragments", "invalid"}

// String returns the reason's metric label value.
func (d DefragDrop) String() string {
	if d < numDefragDrops {
		return defragDropNames[d]
	}
	return "unknown"
}

// DefragDrops lists every drop reason, in order.
func DefragDrops() []DefragDrop {
	ds := make([]DefragDrop, numDefragDrops)
	for i := range ds {
		ds[i] = DefragDrop(i)
	}
	return ds
}

// DefragStats count a source's reassembly. Every fragment taken is, at
// any time, in a datagram handed on, dropped, or held:
// Fragments = (those of Datagrams) + sum(Dropped) + Held.
type DefragStats struct {
	Fragments uint64                 // fragments taken in (not handed on as packets themselves)
	Datagrams uint64                 // datagrams reassembled and handed on
	Dropped   [numDefragDrops]uint64 // fragments taken and then dropped, by reason
	Held      uint64                 // fragments held in datagrams not yet whole, as of the last fragment
	Passed    uint64                 // fragments handed on unreassembled: cut short by the snaplen
}

// Add adds o's counts to d.
func (d *DefragStats) Add(o *DefragStats) {
	d.Fragments += o.Fragments
	d.Datagrams += o.Datagrams
	for i := range d.Dropped {
		d.Dropped[i] += o.Dropped[i]
	}
	d.Held += o.Held
	d.Passed += o.Passed
}

// DroppedCounts returns the nonzero drop counts by reason name.
func (d *DefragStats) DroppedCounts() map[string]uint64 {
	return named(d.Dropped[:], defragDropNames[:])
}

// markFragment notes where a fragment's IP packet is in the frame being
// decoded: b is the IP packet (every link decoder hands on a suffix of
// the frame, so its length says where it starts) and data the offset of
// the fragment's data in it.
func (p *Packet) markFragment(b []byte, data int) {
	p.ipTail, p.fragData = uint32(len(b)), uint16(data)
}

// FragmentIP returns the IP packet of a fragment that Decode made of
// frame, from its IP header to the end of what was captured, and the
// offset in it of the fragment's data (past the IPv4 header, or past the
// IPv6 fragment header). It returns nil when p is not a fragment or frame
// is too short to be the one.
func (p *Packet) FragmentIP(frame []byte) (ip []byte, data int) {
	if p.Fragment == NotFragment || int(p.ipTail) > len(frame) || int(p.fragData) > int(p.ipTail) {
		return nil, 0
	}
	return frame[len(frame)-int(p.ipTail):], int(p.fragData)
}

// DefragSource is a Source that hands its fragments to a Defragmenter
// once given one (the file reader, AF_PACKET, libpcap; not the eBPF
// source, whose records carry the headers and the first bytes of the
// payload, not the packet). Call SetDefragmenter before the first Next.
type DefragSource interface {
	Source
	SetDefragmenter(Defragmenter)
}

// DefragFrame hands the fragment p, decoded from frame, to d and counts
// it in st; it reports whether p holds a packet to hand on. The sources
// call it after Decode for fragments only (Defragments), so that the
// path of every other packet stays as it was. reason is Decode's: a
// first fragment too short for its transport header (a tiny fragment,
// the header split over two) is still a piece of its datagram.
func DefragFrame(p *Packet, frame []byte, reason Reason, st *Stats, d Defragmenter) bool {
	_, ok := defragFrame(p, frame, reason, st, d)
	return ok
}

// DefragTake is DefragFrame for a source whose frames a DatagramTaker
// may take (dt; nil: none): a datagram reassembled from fragments that
// came in no tunnel is offered to dt, and one dt takes is counted in
// st.Taken and not handed on. An error of dt's ends the source's reading.
func DefragTake(p *Packet, frame []byte, reason Reason, st *Stats, d Defragmenter, dt DatagramTaker) (bool, error) {
	outer := p.Tunnels == 0
	res, ok := defragFrame(p, frame, reason, st, d)
	if !ok || res != FragDone || !outer || dt == nil {
		return ok, nil
	}
	taken, err := dt.TakeDatagram(d.Datagram(), p.Timestamp)
	if err != nil {
		return false, err
	}
	if taken {
		st.Taken++
	}
	return !taken, nil
}

func defragFrame(p *Packet, frame []byte, reason Reason, st *Stats, d Defragmenter) (FragResult, bool) {
	st.countFrame(p)
	res, r := d.Add(p, frame, &st.Defrag)
	switch res {
	case FragHeld:
		return res, false
	case FragPass:
		r = reason
	}
	st.countDecoded(p, r)
	return res, r == ReasonNone
}

// Defragments reports whether Decode's answer for a fragment is one to
// hand to a Defragmenter.
func Defragments(r Reason) bool { return r == ReasonNone || r == ReasonTransportTruncated }
