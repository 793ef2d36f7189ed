package report

// series is a bounded array of buckets of packet time (grid): adding to
// the bucket of a time is an index and a compare, and a time outside the
// buckets regrids them, in place, to a width that holds it (each doubling
// adds pairs of buckets into one), so its memory is fixed and nothing is
// allocated once it is made.
type series[B any] struct {
	g          grid
	b, scratch []B
	add        func(dst, src *B)
}

func newSeries[B any](add func(dst, src *B)) series[B] {
	return series[B]{g: grid{shift: firstShift}, b: make([]B, Buckets), scratch: make([]B, Buckets), add: add}
}

// at returns the bucket of ns, valid until the next call.
func (s *series[B]) at(ns int64) *B {
	if i := s.g.index(ns); i >= 0 {
		if i >= s.g.used {
			s.g.used = i + 1
		}
		return &s.b[i]
	}
	return s.grow(ns)
}

// grow regrids s to hold ns and returns its bucket.
func (s *series[B]) grow(ns int64) *B {
	to := cover(ns, ns, max(s.g.shift, firstShift))
	if s.g.used > 0 {
		to = cover(min(s.g.origin, ns), max(s.g.end()-1, ns), s.g.shift)
		regrid(s.b, s.scratch, s.g, to, s.add)
	}
	s.g = to
	return &s.b[(ns-to.origin)>>to.shift]
}

// merge adds o's buckets into s, at the width both fit in.
func (s *series[B]) merge(o *series[B]) {
	if o.g.used == 0 {
		return
	}
	to := cover(o.g.origin, o.g.end()-1, max(s.g.shift, o.g.shift))
	if s.g.used > 0 {
		to = cover(min(s.g.origin, o.g.origin), max(s.g.end(), o.g.end())-1, to.shift)
	}
	regrid(s.b, s.scratch, s.g, to, s.add)
	s.g = to
	for i := range o.g.used {
		t := o.g.origin + int64(i)<<o.g.shift
		s.add(&s.b[(t-to.origin)>>to.shift], &o.b[i])
	}
}

// coarsen brings s to the grid to, which covers it.
func (s *series[B]) coarsen(to grid) {
	if s.g.used == 0 {
		s.g = to
		return
	}
	regrid(s.b, s.scratch, s.g, to, s.add)
	s.g = to
}

// buckets returns the used buckets.
func (s *series[B]) buckets() []B { return s.b[:s.g.used] }

// PacketBucket is what the shards counted in a bucket of packet time.
type PacketBucket struct {
	Packets    uint64 // packets past dedup (the summary's unique_packets)
	Bytes      uint64 // their wire bytes
	Duplicates uint64 // packets dedup dropped
	Tunnelled  uint64 // of Packets, those that came out of a tunnel
}

func addPacket(d, s *PacketBucket) {
	d.Packets += s.Packets
	d.Bytes += s.Bytes
	d.Duplicates += s.Duplicates
	d.Tunnelled += s.Tunnelled
}

// FlowBucket is what the flow records say of a bucket of packet time.
type FlowBucket struct {
	Started uint64 // flows whose first packet is in the bucket
	Ended   uint64 // flows whose last packet is in the bucket
	// States are the flows ended in the bucket, by conn_state
	// (acsm.ConnState).
	States [numStates]uint64
}

func addFlow(d, s *FlowBucket) {
	d.Started += s.Started
	d.Ended += s.Ended
	for i := range d.States {
		d.States[i] += s.States[i]
	}
}
