package capture

// Stats counts what a reader has read, by the categories of the replay
// summary. Every counter is a fixed-size array, so counting allocates
// nothing. A Stats is owned by one goroutine.
type Stats struct {
	Packets   uint64 // records read, decoded or not, that the filter kept
	Filtered  uint64 // records the filter left out (Reader.SetFilter)
	Bytes     uint64 // wire bytes of those records
	Decoded   uint64 // packets that yielded a flow key
	Link      [numLinkClasses]uint64
	Network   [numNetClasses]uint64
	Transport [numTransportClasses]uint64
	Skipped   [numReasons]uint64 // by reason; index 0 unused
	// Taken counts the frames a FrameTaker took before decoding (the
	// kernel's flow state): read (Packets, Bytes, Link) but not decoded
	// here; and the reassembled datagrams a DatagramTaker took, decoded
	// (Decoded, Transport) but handed on no further.
	Taken uint64
	// Defrag counts the reassembly of a source with a Defragmenter. A
	// fragment it takes is a frame read (Packets, Bytes, Link, Network)
	// but no packet decoded; a datagram it hands on is a packet decoded
	// (Decoded, Transport, or Skipped by its reason) but no frame.
	Defrag DefragStats
}

// Count records one read frame and the outcome of decoding it.
func (s *Stats) Count(p *Packet, r Reason) {
	s.Packets++
	s.Bytes += uint64(p.WireLen)
	s.Link[linkClassOf(p.LinkType)]++
	if r != ReasonNone {
		s.Skipped[r]++
		if r == ReasonNotIP {
			s.Network[NetOther]++
		}
		return
	}
	s.Decoded++
	if p.EtherType == EtherTypeIPv6 {
		s.Network[NetIPv6]++
	} else {
		s.Network[NetIPv4]++
	}
	s.Transport[transportClassOf(p)]++
}

// countFrame counts a fragment frame taken by a Defragmenter: read, of
// its network layer, not (yet) a decoded packet.
func (s *Stats) countFrame(p *Packet) {
	s.Packets++
	s.Bytes += uint64(p.WireLen)
	s.Link[linkClassOf(p.LinkType)]++
	if p.EtherType == EtherTypeIPv6 {
		s.Network[NetIPv6]++
	} else {
		s.Network[NetIPv4]++
	}
}

// countDecoded counts what a Defragmenter handed on (a datagram, or a
// fragment it did not take) as Decode's answer r for it.
func (s *Stats) countDecoded(p *Packet, r Reason) {
	if r != ReasonNone {
		s.Skipped[r]++
		return
	}
	s.Decoded++
	s.Transport[transportClassOf(p)]++
}

// DecodeErrors returns the malformed-input counts by reason name, leaving
// out reasons with no packets.
func (s *Stats) DecodeErrors() map[string]uint64 {
	m := map[string]uint64{}
	for r := ReasonNone + 1; r < numReasons; r++ {
		if r.Malformed() && s.Skipped[r] > 0 {
			m[r.String()] = s.Skipped[r]
		}
	}
	return m
}

// Add adds o's counts to s.
func (s *Stats) Add(o *Stats) {
	s.Packets += o.Packets
	s.Filtered += o.Filtered
	s.Bytes += o.Bytes
	s.Decoded += o.Decoded
	s.Taken += o.Taken
	for i := range s.Link {
		s.Link[i] += o.Link[i]
	}
	for i := range s.Network {
		s.Network[i] += o.Network[i]
	}
	for i := range s.Transport {
		s.Transport[i] += o.Transport[i]
	}
	for i := range s.Skipped {
		s.Skipped[i] += o.Skipped[i]
	}
	s.Defrag.Add(&o.Defrag)
}

// LinkClass groups link types for counting.
type LinkClass uint8

const (
	LinkClassEthernet LinkClass = iota
	LinkClassRaw
	LinkClassIPv4
	LinkClassIPv6
	LinkClassSLL
	LinkClassSLL2
	LinkClassNull
	LinkClassLoop
	LinkClassNFLOG
	LinkClassOther
	numLinkClasses
)

var linkClassNames = [numLinkClasses]string{"ethernet", "raw", "ipv4", "ipv6", "linux_sll", "linux_sll2", "null", "loop", "nflog", "other"}

func (c LinkClass) String() string { return linkClassNames[c] }

func linkClassOf(l uint16) LinkClass {
	switch l {
	case LinkEthernet:
		return LinkClassEthernet
	case LinkRaw, linkRawAlt, linkRawAlt14:
		return LinkClassRaw
	case LinkIPv4:
		return LinkClassIPv4
	case LinkIPv6:
		return LinkClassIPv6
	case LinkSLL:
		return LinkClassSLL
	case LinkSLL2:
		return LinkClassSLL2
	case LinkNull:
		return LinkClassNull
	case LinkLoop:
		return LinkClassLoop
	case LinkNFLOG:
		return LinkClassNFLOG
	}
	return LinkClassOther
}

// NetClass groups network layers for counting.
type NetClass uint8

const (
	NetIPv4 NetClass = iota
	NetIPv6
	NetOther // not IP, or not decodable far enough to tell
	numNetClasses
)

var netClassNames = [numNetClasses]string{"ipv4", "ipv6", "other"}

func (c NetClass) String() string { return netClassNames[c] }

// TransportClass groups transport protocols for counting.
type TransportClass uint8

const (
	TransportTCP TransportClass = iota
	TransportUDP
	TransportICMP
	TransportICMPv6
	TransportSCTP
	TransportFragment // non-first fragments, whose transport is unknown
	TransportOther
	numTransportClasses
)

var transportClassNames = [numTransportClasses]string{"tcp", "udp", "icmp", "icmp6", "sctp", "fragment", "other"}

func (c TransportClass) String() string { return transportClassNames[c] }

func transportClassOf(p *Packet) TransportClass {
	if p.Fragment == LaterFragment {
		return TransportFragment
	}
	switch p.Key.Proto {
	case ProtoTCP:
		return TransportTCP
	case ProtoUDP:
		return TransportUDP
	case ProtoICMP:
		return TransportICMP
	case ProtoICMPv6:
		return TransportICMPv6
	case ProtoSCTP:
		return TransportSCTP
	}
	return TransportOther
}

// LinkCounts returns the nonzero per-link-type counts by name.
func (s *Stats) LinkCounts() map[string]uint64 { return named(s.Link[:], linkClassNames[:]) }

// NetworkCounts returns the nonzero per-network-layer counts by name.
func (s *Stats) NetworkCounts() map[string]uint64 { return named(s.Network[:], netClassNames[:]) }

// TransportCounts returns the nonzero per-transport counts by name.
func (s *Stats) TransportCounts() map[string]uint64 {
	return named(s.Transport[:], transportClassNames[:])
}

func named(counts []uint64, names []string) map[string]uint64 {
	m := map[string]uint64{}
	for i, n := range counts {
		if n > 0 {
			m[names[i]] = n
		}
	}
	return m
}
