package rules

import (
	"github.com/flowmon/flowmon/capture"
)

// Prefetch requests, a few packets ahead of Packet, the memory the rules
// will touch for p (the engine's Prefetcher hook): the slot of each
// by_flow volume rule's hold table, and for a bare SYN, which most likely
// opens a flow, the sketch cells of the new-flow rules, whose keys are
// the sender's and the receiver's addresses. A guess that proves wrong
// (the SYN was a retransmission) costs a prefetch and nothing else.
func (s *Shard) Prefetch(p *capture.Packet) {
	set := s.set
	if set == nil {
		return
	}
	if len(set.onNew) == 0 || !p.HasTCP || p.Flags&(capture.SYN|capture.ACK) != capture.SYN {
		return
	}
	src, dst := p.Key.Src, p.Key.Dst
	dport := p.Key.DstPort
	if p.Reversed {
		src, dst, dport = dst, src, p.Key.SrcPort
	}
	t := p.Timestamp.UnixNano()
	for _, r := range set.onNew {
		var key, item uint64
		switch r.Track {
		case BySrc:
			key = addrHash(src)
		case ByDst:
			key = addrHash(dst)
		case ByPair:
			key = pairHash(src, dst)
		default:
			key = p.Hash
		}
		switch r.Threshold.Event {
		case EventDistinctDstPorts:
			item = portHash(dport)
		case EventDistinctDstHosts:
			item = addrHash(dst)
		case EventDistinctSrcHosts:
			item = addrHash(src)
		}
		st := r.st
		sl := slot(st.win.index(t))
		st.counts[sl].prefetch(key, item)
		if st.done[sl] != nil {
			st.done[sl].prefetch(key, 0)
		}
	}
}
