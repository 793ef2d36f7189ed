package gen

import "math"

// gapKind says how long to wait before a packet; the generator draws the
// actual gap from the flow's timeRNG (gapFor), so that producing packets
// (produce) uses planRNG alone.
type gapKind uint8

const (
	gapAuto     gapKind = iota // half an RTT when the direction changes, else a short burst gap
	gapRetx                    // retransmission timer: 1 s, 2 s, 4 s, ... (RFC 6298 backoff)
	gapThink                   // application think time
	gapInterval                // the flow's fixed interval (ping)
)

// minGap is the smallest gap between two packets of one flow (µs). It is
// above 1 µs so a SPAN duplicate always fits between a packet and the next.
const minGap = 20

// maxThink caps think times (µs).
const maxThink = 2e6

// produce fills p with the flow's next packet and says how long to wait
// before it; ok is false when the flow has no more packets.
func (f *flow) produce(p *pkt) (gapKind, bool) {
	if f.proto == protoTCP {
		return f.produceTCP(p)
	}
	return f.produceDatagram(p)
}

func (f *flow) produceTCP(p *pkt) (gapKind, bool) {
	for {
		switch f.ph {
		case phSyn:
			if f.synLeft == 0 {
				f.ph = phSynAck
				continue
			}
			f.synLeft--
			f.synSent++
			*p = pkt{flags: fSYN, synOpts: true, seq: f.cISN}
			if f.synSent > 1 {
				f.retx = f.synSent - 2
				return gapRetx, true
			}
			return gapAuto, true
		case phSynAck:
			if f.ackLeft == 0 {
				f.ph = phHsAck
				continue
			}
			f.ackLeft--
			f.ackSent++
			*p = pkt{resp: true, flags: fSYN | fACK, synOpts: true, seq: f.sISN, ack: f.cISN + 1}
			if f.ackSent > 1 {
				f.retx = f.ackSent - 2
				return gapRetx, true
			}
			return gapAuto, true
		case phHsAck:
			f.ph = phData
			if f.hsAck {
				*p = pkt{flags: fACK, seq: f.cNext, ack: f.sNext}
				return gapAuto, true
			}
		case phData:
			if kind, ok := f.produceData(p); ok {
				return kind, true
			}
			f.ph = phClose
		case phClose:
			if f.closeIdx >= f.nClose {
				f.ph = phDone
				continue
			}
			c := f.closing[f.closeIdx]
			f.closeIdx++
			*p = pkt{resp: c.resp, flags: c.flags, seq: f.cNext, ack: f.sNext}
			if c.resp {
				p.seq, p.ack = f.sNext, f.cNext
				if f.ackSent == 0 && c.flags&fRST != 0 {
					p.seq = 0 // RST answering a bare SYN (RFC 793 reset generation)
				}
			}
			if c.flags&fACK == 0 {
				p.ack = 0
			}
			if c.flags&fFIN != 0 { // FIN takes a sequence number
				if c.resp {
					f.sNext++
				} else {
					f.cNext++
				}
			}
			if f.closeIdx == 1 && f.think {
				f.think = false
				return gapThink, true
			}
			return gapAuto, true
		default:
			return 0, false
		}
	}
}

// produceData runs the request/response rounds: each transfer is sent in
// windows that double from the initial window up to 64 segments (256 for
// heavy hitters; slow start, RFC 5681), and the receiver sends one ACK per two segments of a
// window (delayed ACK).
func (f *flow) produceData(p *pkt) (gapKind, bool) {
	r := f.planRNG
	for {
		if f.acks > 0 {
			// ACK k of a window acknowledges its first 2k segments.
			f.acks--
			f.ackK++
			if f.xfer == 1 { // the responder acknowledges the request
				*p = pkt{resp: true, flags: fACK, seq: f.sNext, ack: f.winStart + min(uint32(2*f.ackK)*uint32(f.mss), f.cNext-f.winStart)}
			} else {
				*p = pkt{flags: fACK, seq: f.cNext, ack: f.winStart + min(uint32(2*f.ackK)*uint32(f.mss), f.sNext-f.winStart)}
			}
			return gapAuto, true
		}
		if f.win > 0 {
			f.win--
			f.segs--
			n := f.mss
			if f.segs == 0 {
				n = min(f.lastLen, f.mss)
			}
			flags := uint8(fACK)
			if f.segs == 0 {
				flags |= fPSH
			}
			if f.xfer == 1 {
				*p = pkt{flags: flags, plen: n, seq: f.cNext, ack: f.sNext}
				f.cNext += uint32(n)
			} else {
				*p = pkt{resp: true, flags: flags, plen: n, seq: f.sNext, ack: f.cNext}
				f.sNext += uint32(n)
			}
			if f.win == 0 {
				f.acks = (f.winSize + 1) / 2
			}
			if f.think {
				f.think = false
				return gapThink, true
			}
			return gapAuto, true
		}
		if f.segs > 0 {
			f.winSize = min(f.cwnd, f.segs)
			f.win, f.ackK = f.winSize, 0
			f.winStart = f.sNext
			if f.xfer == 1 {
				f.winStart = f.cNext
			}
			f.cwnd = min(2*f.cwnd, f.cwndMax)
			continue
		}
		switch f.xfer {
		case 1: // request done: the response follows
			f.xfer = 2
			f.segs = int32(pareto(r, f.respXm, f.respPareto, f.respCap))
			f.lastLen = uint16(1 + r.IntN(1440))
			f.cwnd = 10 // RFC 6928 initial window
		default:
			if f.xfer == 2 {
				f.rounds--
				f.think = true
			}
			if f.rounds <= 0 {
				return 0, false
			}
			f.xfer = 1
			f.segs = 1
			if r.Float64() < 0.1 {
				f.segs = int32(pareto(r, 1, 1.5, float64(f.reqMax)))
			}
			f.lastLen = uint16(40 + r.IntN(900))
			f.cwnd = 4
		}
	}
}

// produceDatagram runs UDP and ICMP flows: rounds of aPer packets from the
// originator followed by bPer from the responder.
func (f *flow) produceDatagram(p *pkt) (gapKind, bool) {
	for {
		if f.rounds <= 0 {
			return 0, false
		}
		kind := gapAuto
		if f.think {
			kind = gapThink
			if f.interval > 0 {
				kind = gapInterval
			} else if f.bPer == 0 {
				kind, f.retx = gapRetx, min(f.synSent-1, 6)
			}
		}
		// ICMP: seq is the echo sequence number, shared by a request and
		// its reply. UDP: seq only selects the payload bytes, and differs
		// for every datagram of the flow.
		if f.aLeft > 0 {
			f.aLeft--
			f.synSent++ // counts originator datagrams (retries of an S0 flow)
			f.seq++
			*p = pkt{plen: f.cLen, seq: uint32(f.seq)}
			f.think = false
			return kind, true
		}
		if f.bLeft > 0 {
			f.bLeft--
			if f.interval == 0 || f.aPer == 0 {
				f.seq++
			}
			*p = pkt{resp: true, plen: f.sLen, seq: uint32(f.seq)}
			f.think = false
			return kind, true
		}
		f.rounds--
		f.aLeft, f.bLeft = f.aPer, f.bPer
		f.think = true
	}
}

// gapFor draws the gap (µs) before a packet of the given kind.
func (f *flow) gapFor(kind gapKind, prevResp, nextResp bool) int64 {
	r := f.timeRNG
	var g float64
	switch kind {
	case gapRetx:
		g = 1e6 * float64(int64(1)<<f.retx) * (0.99 + 0.02*r.Float64())
	case gapThink: // capped so half-open states end before Zeek's 5 s attempt timeout
		g = math.Min(1000+r.ExpFloat64()*f.thinkMean, maxThink)
	case gapInterval:
		g = float64(f.interval) * (0.99 + 0.02*r.Float64())
	default:
		if prevResp != nextResp {
			g = float64(f.rtt) / 2 * (0.8 + 0.4*r.Float64())
		} else {
			g = r.ExpFloat64() * float64(f.burst)
		}
	}
	return max(int64(math.Min(g, 1e12)), minGap)
}
