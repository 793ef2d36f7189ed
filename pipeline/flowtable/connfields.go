package flowtable

import (
	"unsafe"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// This file keeps, per flow, what Zeek's conn.log says about a connection
// beyond its state and packet counts: history, orig_bytes/resp_bytes,
// orig_ip_bytes/resp_ip_bytes and missed_bytes. The rules are Zeek's TCP
// session adapter (update_history, update_window, update_last_seq,
// update_ack_seq, init_endpoint), TCP_Endpoint::Size and the UDP
// analyzer's history and length, read from Zeek's source and checked
// against the conn.log baselines in ../shared (TestConnFieldsMatchZeek).
// Zeek reassembles each side's bytes to find its content gaps; flowmon
// keeps one reassembly point and one hole per side instead (see gap).

// connSide is one endpoint's share of the fields. Sides are indexed by the
// canonical key's direction (0: sent by Key.Src), not by role, so a flip
// of roles moves nothing: as in Zeek, whose TCP_Endpoint objects keep
// their counters when the connection's roles flip.
type connSide struct {
	ipBytes uint64 // IP total lengths sent (orig_ip_bytes/resp_ip_bytes)
	// TCP sequence space relative to start (Zeek's start_seq): top is the
	// highest sequence end sent (last_seq), acked the highest ack the
	// peer sent for it (ack_seq); Size is max(top, acked) less the SYN
	// and FIN octets. UDP and ICMP count payload bytes in top.
	top, acked uint64
	start      uint32
	// contig is the end of the data known to be delivered (Zeek's
	// last_reassem_seq); hole, when not 0, the start of the lowest
	// segment seen beyond contig. Both relative, compared modulo 2^32.
	contig, hole uint32
	missed       uint32 // bytes of gaps reported (missed_bytes)
	finSeq       uint32 // relative sequence just past the FIN
	// Sequence numbers (low 16 bits, relative) of the last SYN, FIN and
	// RST, so a retransmitted one is not recorded again but a new one is.
	lastSYN, lastFIN, lastRST uint16
	rxmt                      uint32 // retransmissions (T), scaled letters
	win0, gaps                uint16 // zero windows (W), gaps (G), saturating
	flags                     sideFlags
	// tcpFlags is the union of the TCP flags the side sent (IPFIX's
	// tcpControlBits), in the padding after flags.
	tcpFlags capture.TCPFlags
}

type sideFlags uint8

const (
	sideActive sideFlags = 1 << iota // sent a TCP packet: start is set
	sideSYN                          // sent a SYN or SYN-ACK (took part in a handshake)
	sideFIN                          // sent a FIN (Zeek's CLOSED)
	sideRST                          // sent a RST (Zeek's RESET)
)

// Conn is a flow's conn.log state: its two sides and its history,
// 152 bytes. The kernel's flow state (bpf/flowstate.c, struct
// conn_fields) keeps the same fields in the same layout and by the same
// rules, so that one Fill spells a record from either (ConnFromBytes). The history is kept as letters in the order Zeek adds
// them, 5 bits each, 24 at most (Zeek's strings for ordinary flows have
// 2 to 12; the scaled T/W/G letters add one per power of ten).
type Conn struct {
	side  [2]connSide
	hist  [2]uint64
	nhist uint8
	// seen holds the once-only letters recorded, by role (bits 0-7 the
	// originator's, 8-15 the responder's), as Zeek's hist_seen: it is
	// keyed by role and not swapped when the roles flip.
	seen uint16
	// origIsDst is the orientation the letters are cased by: the
	// originator is Key.Dst.
	origIsDst bool
}

// Observe applies one packet. origIsDst is the flow's orientation after
// it, as the ACSM answered; first says the packet started the flow.
// Letters are cased by the roles before the packet, and a change of
// orientation is recorded after them ('^'), as Zeek flips roles in its
// state machine after update_history; a flow whose first packet came
// from the responder starts with '^' (Zeek flips it on creation).
func (c *Conn) Observe(p *capture.Packet, origIsDst, first bool) {
	dir := b2i(p.Reversed)
	if first {
		c.origIsDst = origIsDst
		if p.Reversed != origIsDst {
			c.flip()
		}
	}
	c.packet(p, dir, p.Reversed == c.origIsDst)
	if !first && origIsDst != c.origIsDst {
		c.flip()
		c.origIsDst = origIsDst
	}
}

// History letters. The code of a letter is its index; the responder's
// letters (lower case) are the originator's plus histResp.
const histLetters = "-SHADFRIQTWG^shadfriqtwg"

const (
	hS byte = iota + 1
	hH
	hA
	hD
	hF
	hR
	hI
	hQ
	hT
	hW
	hG
	hFlip
	histResp = hFlip // lower case: code + histResp (for hS..hG)
)

const histMax = record.HistoryMax // 12 five-bit letters per word, two words

func (c *Conn) addLetter(code byte, isOrig bool) {
	if code != hFlip && !isOrig {
		code += histResp
	}
	if c.nhist >= histMax {
		return // longer histories are cut (Zeek's are not): see Conn
	}
	w, sh := c.nhist/12, uint(c.nhist%12)*5
	c.hist[w] |= uint64(code) << sh
	c.nhist++
}

// check records a once-only letter the first time the role sends it and
// reports whether it had been recorded before (Zeek's CheckHistory).
func (c *Conn) check(code byte, isOrig bool) bool {
	bit := uint16(1) << (code - 1)
	if !isOrig {
		bit <<= 8
	}
	if c.seen&bit != 0 {
		return true
	}
	c.seen |= bit
	c.addLetter(code, isOrig)
	return false
}

// scaled records a repeated event's letter at its 1st, 10th, 100th, ...
// occurrence (Zeek's ScaledHistoryEntry).
func (c *Conn) scaled(code byte, isOrig bool, n uint32) {
	for n%10 == 0 && n > 1 {
		n /= 10
	}
	if n == 1 {
		c.addLetter(code, isOrig)
	}
}

// history spells the letters into h.
func (c *Conn) history(h *record.History) {
	*h = record.History{}
	for i := range c.nhist {
		w, sh := i/12, uint(i%12)*5
		h.AppendLetter(histLetters[c.hist[w]>>sh&31])
	}
}

// flip records that the roles flipped ('^').
func (c *Conn) flip() { c.addLetter(hFlip, true) }

// tooLargeDelta is Zeek's TOO_LARGE_SEQ_DELTA: a SYN or RST whose sequence
// jumps further is not trusted to move last_seq.
const tooLargeDelta = 1 << 20

// packet applies one packet. dir is the sender's side (1 when it travelled
// from Key.Dst), isOrig its role at this packet.
func (c *Conn) packet(p *capture.Packet, dir int, isOrig bool) {
	s := &c.side[dir]
	s.ipBytes += uint64(p.IPLen)
	switch p.Key.Proto {
	case capture.ProtoTCP:
		if p.HasTCP {
			s.tcpFlags |= p.Flags
			c.tcp(p, s, &c.side[1-dir], isOrig)
		}
	case capture.ProtoUDP:
		// Zeek adds the UDP length less the header; flowmon takes it from
		// the IP length, which equals it unless the datagram is malformed.
		s.top += uint64(p.PayloadLen)
		c.check(hD, isOrig)
	case capture.ProtoICMP, capture.ProtoICMPv6:
		s.top += uint64(p.PayloadLen) // no history: Zeek's ICMP analyzer adds none
	}
}

func (c *Conn) tcp(p *capture.Packet, s, peer *connSide, isOrig bool) {
	f := p.Flags
	syn, fin, rst, ack := f&capture.SYN != 0, f&capture.FIN != 0, f&capture.RST != 0, f&capture.ACK != 0
	n := p.PayloadLen
	seg := n
	if syn {
		seg++
	}
	if fin {
		seg++
	}
	if rst {
		seg -= n // a RST's payload is not part of the stream
	}
	seq := p.Seq
	end := seq + seg

	// init_endpoint: the first packet sets the sequence origin (as if a
	// SYN preceded a partial flow's first packet); a SYN at a new
	// sequence number restarts it while the side has not closed.
	switch {
	case s.flags&sideActive == 0:
		s.flags |= sideActive
		if syn {
			s.start, s.top = seq, uint64(seg)
		} else {
			s.start, s.top = seq-1, 1
		}
		s.acked, s.contig, s.hole = 0, 1, 0
	case syn && seq != s.start && s.flags&(sideFIN|sideRST) == 0:
		s.start, s.top, s.acked, s.contig, s.hole = seq, uint64(seg), 0, 1, 0
	}
	rel := seq - s.start

	c.tcpLetters(f, s, rel, n, isOrig)

	// update_window: a zero window is news unless it comes with or after
	// this side's RST or after the peer's FIN.
	if p.Window == 0 && !rst && peer.flags&sideFIN == 0 && s.flags&sideRST == 0 {
		if s.win0 < ^uint16(0) {
			s.win0++
			c.scaled(hW, isOrig, uint32(s.win0))
		}
	}
	if fin {
		s.finSeq = rel + seg
	}

	// The ack moves the peer's acked (update_ack_seq), not in a RST and
	// not below the peer's start.
	var relAck uint32
	ackOK := ack && peer.flags&sideActive != 0 && int32(p.Ack-peer.start) >= 0
	if ackOK {
		relAck = p.Ack - peer.start
		cur := peer.start + uint32(peer.acked)
		d := int32(p.Ack - cur)
		if !rst && !(p.Ack == 0 && d > tooLargeDelta) && d > 0 {
			peer.acked += uint64(d)
		}
	}

	// update_last_seq: the highest sequence end, and retransmissions.
	cur := s.start + uint32(s.top)
	d := int32(end - cur)
	switch {
	case (syn || rst) && (d > tooLargeDelta || d < -tooLargeDelta):
	case fin && s.top == 1:
		s.top = uint64(end - s.start) // only a SYN seen before: trust the FIN
	case s.flags&sideRST != 0:
	case d > 0:
		s.top += uint64(d)
	case n > 0:
		s.rxmt++
		c.scaled(hT, isOrig, s.rxmt)
	}

	if syn {
		s.flags |= sideSYN
	}
	if fin {
		s.flags |= sideFIN
	}
	if rst {
		s.flags |= sideRST
	}

	// Reassembly, after the state update as in Zeek: the data, then the
	// ack it carries for the peer's data.
	if n > 0 && !rst {
		data := rel
		if syn {
			data++
		}
		s.sent(data, data+n)
	}
	if ackOK {
		c.gap(peer, s, relAck)
	}
}

// tcpLetters is Zeek's update_history: one letter per kind of packet, once per
// role, except that a SYN, FIN or RST at a new sequence number is
// recorded again.
func (c *Conn) tcpLetters(f capture.TCPFlags, s *connSide, rel, n uint32, isOrig bool) {
	syn, fin, rst := f&capture.SYN != 0, f&capture.FIN != 0, f&capture.RST != 0
	switch b2i(syn) + b2i(fin) + b2i(rst) {
	case 0:
		if n > 0 {
			c.check(hD, isOrig)
		} else if f&capture.ACK != 0 {
			c.check(hA, isOrig)
		}
	case 1:
		switch {
		case syn:
			code := hS
			if f&capture.ACK != 0 {
				code = hH
			}
			// Zeek's bit is one for S and H: whichever comes first.
			if c.checkBit(hS, code, isOrig) && uint16(rel) != s.lastSYN {
				c.addLetter(code, isOrig)
			}
			s.lastSYN = uint16(rel)
		case fin:
			if c.check(hF, isOrig) && uint16(rel+n) != s.lastFIN {
				c.addLetter(hF, isOrig)
			}
			s.lastFIN = uint16(rel + n)
		case rst:
			if c.check(hR, isOrig) && uint16(rel) != s.lastRST {
				c.addLetter(hR, isOrig)
			}
			s.lastRST = uint16(rel)
		}
	default:
		if fin && rst {
			c.check(hI, isOrig)
		} else {
			c.check(hQ, isOrig)
		}
	}
}

// checkBit is check with the seen bit of one letter and another letter
// recorded (Zeek's HIST_SYN_PKT covers both S and H).
func (c *Conn) checkBit(bitCode, code byte, isOrig bool) bool {
	bit := uint16(1) << (bitCode - 1)
	if !isOrig {
		bit <<= 8
	}
	if c.seen&bit != 0 {
		return true
	}
	c.seen |= bit
	c.addLetter(code, isOrig)
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sent notes data [from, to) (relative) for the side's reassembly point:
// data at or below contig extends it; data beyond it opens a hole.
func (s *connSide) sent(from, to uint32) {
	switch {
	case int32(from-s.contig) <= 0:
		if int32(to-s.contig) > 0 {
			s.contig = to
		}
		if s.hole != 0 && int32(s.contig-s.hole) >= 0 {
			// The hole is filled: take what was seen beyond it as
			// delivered too (flowmon does not keep the segments).
			s.contig, s.hole = max32(s.contig, s.dataEnd()), 0
		}
	case s.hole == 0 || int32(from-s.hole) < 0:
		s.hole = from
	}
}

// dataEnd is the relative end of the data sent so far (top less a FIN).
func (s *connSide) dataEnd() uint32 {
	e := uint32(s.top)
	if s.flags&sideFIN != 0 && e == s.finSeq {
		e--
	}
	return e
}

func max32(a, b uint32) uint32 {
	if int32(a-b) > 0 {
		return a
	}
	return b
}

// gap is Zeek's reassembler seeing the peer acknowledge data up to ack
// (relative to s): whatever between the reassembly point and the ack (or
// the first segment seen beyond it) never arrived is a content gap. Zeek
// reports gaps (the G letter and missed_bytes) only while both sides are
// established or closing cleanly, so not for partial or reset flows.
func (c *Conn) gap(s, acker *connSide, ack uint32) {
	if s.flags&sideFIN != 0 && int32(ack-s.finSeq) >= 0 {
		ack = s.finSeq - 1 // the FIN's octet is not data
	}
	if int32(ack-s.contig) <= 0 {
		return
	}
	end := ack
	if s.hole != 0 && int32(s.hole-ack) < 0 {
		end = s.hole
	}
	n := end - s.contig
	if end == s.hole {
		s.contig, s.hole = max32(ack, s.dataEnd()), 0
	} else {
		s.contig = ack
	}
	clean := s.flags&acker.flags&sideSYN != 0 && (s.flags|acker.flags)&sideRST == 0
	if !clean {
		return
	}
	s.missed += n
	if s.gaps < ^uint16(0) {
		s.gaps++
		isOrig := c.sideIsOrig(s)
		c.scaled(hG, isOrig, uint32(s.gaps))
	}
}

// sideIsOrig says whether s is the originator's side now.
func (c *Conn) sideIsOrig(s *connSide) bool {
	return (s == &c.side[1]) == c.origIsDst
}

// bytes is the side's orig_bytes/resp_bytes: Zeek's TCP_Endpoint::Size
// for TCP (the sequence span, without SYN and FIN), the payload sum for
// UDP and ICMP.
func (s *connSide) bytes(proto uint8) uint64 {
	switch proto {
	case capture.ProtoUDP, capture.ProtoICMP, capture.ProtoICMPv6:
		return s.top
	case capture.ProtoTCP:
	default:
		return 0
	}
	if s.flags&sideActive == 0 {
		return 0
	}
	n := max(s.top, s.acked)
	if n > 0 {
		n-- // the SYN's octet (or the one assumed before a partial flow)
	}
	if s.flags&sideFIN != 0 && n > 0 {
		n-- // the FIN's octet
	}
	return n
}

// ConnSize is the size of a Conn in memory, which the kernel's struct
// conn_fields matches field for field.
const ConnSize = int(unsafe.Sizeof(Conn{}))

// ConnFromBytes reads a Conn from the bytes of the kernel's struct
// conn_fields (native byte order, Conn's own layout).
func ConnFromBytes(b []byte) (c Conn, ok bool) {
	if len(b) < ConnSize {
		return c, false
	}
	c = *(*Conn)(unsafe.Pointer(unsafe.SliceData(b)))
	return c, true
}

// Fill sets the record's conn.log fields from c: history, payload and IP
// bytes, flag unions and missed_bytes, directed from the originator
// (origIsDst: the originator is the key's Dst). proto is the flow's IP
// protocol.
func (c *Conn) Fill(f *record.Flow, proto uint8, origIsDst bool) {
	o, rs := &c.side[0], &c.side[1]
	if origIsDst {
		o, rs = rs, o
	}
	c.history(&f.History)
	f.MissedBytes = uint64(o.missed) + uint64(rs.missed)
	f.OrigBytes, f.RespBytes = o.bytes(proto), rs.bytes(proto)
	f.OrigIPBytes, f.RespIPBytes = o.ipBytes, rs.ipBytes
	f.OrigTCPFlags, f.RespTCPFlags = o.tcpFlags, rs.tcpFlags
}
