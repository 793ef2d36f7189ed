package ipfix

import (
	"encoding/binary"
	"math"
	"net/netip"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// encoder turns records into messages for one collector: it keeps the
// templates, the sequence number and the message being filled. It is
// not safe for concurrent use; each collector's goroutine has its own.
type encoder struct {
	t      [2]template // TemplateIPv4, TemplateIPv6
	biflow bool
	domain uint32
	ifx    uint32 // ingressInterface, when the templates have it
	max    int    // largest message, bytes

	seq      uint32 // data records sent before the message being filled
	buf      []byte // the message being filled, its header written
	n        uint32 // data records in buf
	setStart int    // offset of the open data set's header; 0: none
	setID    uint16
}

// encoderOptions shape an encoder.
type encoderOptions struct {
	biflow     bool
	enterprise uint32
	domain     uint32
	ingress    uint32 // 0: no ingressInterface element
	maxMessage int
}

func newEncoder(o encoderOptions) *encoder {
	to := templateOptions{biflow: o.biflow, enterprise: o.enterprise, ingress: o.ingress != 0}
	e := &encoder{biflow: o.biflow, domain: o.domain, ifx: o.ingress, max: min(o.maxMessage, MaxMessage)}
	e.t[0], e.t[1] = newTemplate(to, false), newTemplate(to, true)
	e.buf = make([]byte, 0, e.max)
	return e
}

// templateMessage returns a message holding both templates, valid until
// the encoder's next call. Template records do not move the sequence
// number.
func (e *encoder) templateMessage(exportTime uint32) []byte {
	b := e.header(e.buf[:0], exportTime)
	set := len(b)
	b = binary.BigEndian.AppendUint16(b, TemplateSetID)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = e.t[0].appendRecord(b)
	b = e.t[1].appendRecord(b)
	// Template records are whole 4-byte words: no padding.
	binary.BigEndian.PutUint16(b[set+2:], uint16(len(b)-set))
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	e.buf = b[:0]
	return b
}

// header appends a message header with the current sequence number and
// a zero length (set when the message is done).
func (e *encoder) header(b []byte, exportTime uint32) []byte {
	b = binary.BigEndian.AppendUint16(b, Version)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, exportTime)
	b = binary.BigEndian.AppendUint32(b, e.seq)
	return binary.BigEndian.AppendUint32(b, e.domain)
}

// encode writes flows as data records into messages, calling emit with
// each message (valid during the call) as it is full and with the last,
// part-full one. It stops at the first message emit fails to send and
// returns emit's error and done, the count of flows whose records were
// all sent: the flows from done on are to be sent again (the sequence
// number counts only the records of messages sent, so the collector sees
// no gap). A flow whose first record (compat mode) went out in a message
// sent and whose second was in the one that failed counts in done, its
// second record in lost.
func (e *encoder) encode(flows []record.Flow, exportTime uint32, emit func(msg []byte, records uint32) error) (done int, lost uint64, err error) {
	// first is the first flow with a record in the message being filled;
	// split says its first record went in an earlier message.
	first, split := 0, false
	send := func(next int, nextSplit bool) bool {
		if e.n == 0 {
			first, split = next, nextSplit
			return true
		}
		msg := e.finish()
		if err = emit(msg, e.n); err != nil {
			done = first
			if split {
				done, lost = first+1, 1
			}
			e.n, e.setStart, e.setID, e.buf = 0, 0, 0, e.buf[:0]
			return false
		}
		e.seq += e.n
		e.n = 0
		first, split = next, nextSplit
		return true
	}
	e.buf = e.header(e.buf[:0], exportTime)
	var r dirRec
	for i := range flows {
		f := &flows[i]
		r.forward(f)
		fwd := e.biflow || f.OrigPkts > 0 || f.RespPkts == 0
		if fwd && !e.add(&r) {
			if !send(i, false) {
				return done, lost, err
			}
			e.buf = e.header(e.buf[:0], exportTime)
			e.add(&r)
		}
		if e.biflow || f.RespPkts == 0 {
			continue
		}
		r.reverse(f)
		if !e.add(&r) {
			if !send(i, fwd) {
				return done, lost, err
			}
			e.buf = e.header(e.buf[:0], exportTime)
			e.add(&r)
		}
	}
	if !send(len(flows), false) {
		return done, lost, err
	}
	e.buf = e.buf[:0]
	return len(flows), 0, nil
}

// finish closes the open set and writes the message's length.
func (e *encoder) finish() []byte {
	e.closeSet()
	binary.BigEndian.PutUint16(e.buf[2:], uint16(len(e.buf)))
	return e.buf
}

// closeSet pads the open data set to a 4-byte boundary and writes its
// length. The padding (at most 3 bytes) is shorter than any record.
func (e *encoder) closeSet() {
	if e.setStart == 0 {
		return
	}
	for len(e.buf)%4 != 0 {
		e.buf = append(e.buf, 0)
	}
	binary.BigEndian.PutUint16(e.buf[e.setStart+2:], uint16(len(e.buf)-e.setStart))
	e.setStart, e.setID = 0, 0
}

func align4(n int) int { return (n + 3) &^ 3 }

// add appends r to the message if it fits, with the set it needs, and
// reports whether it did.
func (e *encoder) add(r *dirRec) bool {
	t := &e.t[0]
	if r.v6 {
		t = &e.t[1]
	}
	n := t.fixed
	if t.hasVar {
		n += len(r.f.State.String()) + r.f.History.Len()
	}
	if e.setStart != 0 && e.setID == t.id {
		if e.setStart+align4(len(e.buf)-e.setStart+n) > e.max {
			return false
		}
	} else {
		if align4(len(e.buf))+align4(SetHeaderLen+n) > e.max {
			return false
		}
		e.closeSet()
		e.setStart, e.setID = len(e.buf), t.id
		e.buf = binary.BigEndian.AppendUint16(e.buf, t.id)
		e.buf = binary.BigEndian.AppendUint16(e.buf, 0)
	}
	e.buf = e.appendData(e.buf, t, r)
	e.n++
	return true
}

// dirRec is a record's values in the direction it is sent: the flow's
// (the originator's) or, for compat mode's second record, the
// responder's.
type dirRec struct {
	f                  *record.Flow
	v6                 bool
	src, dst           netip.Addr
	sport, dport, icmp uint16
	pkts, octets       uint64
	rpkts, roctets     uint64
	flags, rflags      uint16
	reason             uint8
}

// forward fills r with f in the originator's direction.
func (r *dirRec) forward(f *record.Flow) {
	r.f = f
	r.src, r.dst = f.Orig.Unmap(), f.Resp.Unmap()
	r.v6 = !r.src.Is4()
	r.sport, r.dport, r.icmp = f.OrigPort, f.RespPort, 0
	if isICMP(f.Proto) {
		typ, code := f.OrigPort, f.RespPort
		if icmpPaired(f.Proto, f.OrigPort, f.RespPort) {
			code = 0
		}
		r.sport, r.dport, r.icmp = 0, 0, typ<<8|code
	}
	r.pkts, r.octets = f.OrigPkts, f.OrigIPBytes
	r.rpkts, r.roctets = f.RespPkts, f.RespIPBytes
	r.flags, r.rflags = uint16(f.OrigTCPFlags), uint16(f.RespTCPFlags) // capture.TCPFlags has RFC 7125's bits
	r.reason = endReason(f)
}

// reverse fills r with f in the responder's direction (compat mode).
func (r *dirRec) reverse(f *record.Flow) {
	r.forward(f)
	r.src, r.dst = r.dst, r.src
	r.sport, r.dport = r.dport, r.sport
	if isICMP(f.Proto) && icmpPaired(f.Proto, f.OrigPort, f.RespPort) {
		r.icmp = f.RespPort << 8 // the reply's type, code 0
	}
	r.pkts, r.octets, r.rpkts, r.roctets = r.rpkts, r.roctets, 0, 0
	r.flags, r.rflags = r.rflags, 0
}

// appendData appends r as a data record of t.
func (e *encoder) appendData(b []byte, t *template, r *dirRec) []byte {
	be := binary.BigEndian
	for i := range t.fields {
		switch t.fields[i].kind {
		case kSrcAddr:
			b = appendAddr(b, r.src, r.v6)
		case kDstAddr:
			b = appendAddr(b, r.dst, r.v6)
		case kSrcPort:
			b = be.AppendUint16(b, r.sport)
		case kDstPort:
			b = be.AppendUint16(b, r.dport)
		case kICMPTypeCode:
			b = be.AppendUint16(b, r.icmp)
		case kProto:
			b = append(b, r.f.Proto)
		case kFlags:
			b = be.AppendUint16(b, r.flags)
		case kStart:
			b = be.AppendUint64(b, uint64(r.f.Start/1e6))
		case kEnd:
			b = be.AppendUint64(b, uint64(r.f.End/1e6))
		case kPackets:
			b = be.AppendUint64(b, r.pkts)
		case kOctets:
			b = be.AppendUint64(b, r.octets)
		case kEndReason:
			b = append(b, r.reason)
		case kIngress:
			b = be.AppendUint32(b, e.ifx)
		case kRevPackets:
			b = be.AppendUint64(b, r.rpkts)
		case kRevOctets:
			b = be.AppendUint64(b, r.roctets)
		case kRevFlags:
			b = be.AppendUint16(b, r.rflags)
		case kConnState:
			s := r.f.State.String()
			b = append(b, byte(len(s)))
			b = append(b, s...)
		case kHistory:
			b = append(b, byte(r.f.History.Len()))
			b = r.f.History.AppendTo(b)
		case kConfidence:
			b = be.AppendUint32(b, math.Float32bits(r.f.Confidence))
		}
	}
	return b
}

func appendAddr(b []byte, a netip.Addr, v6 bool) []byte {
	if v6 {
		x := a.As16()
		return append(b, x[:]...)
	}
	x := a.As4()
	return append(b, x[:]...)
}

func isICMP(p uint8) bool { return p == capture.ProtoICMP || p == capture.ProtoICMPv6 }

// icmpPaired reports whether an ICMP flow's ports are a type and its
// reply's type (capture keys such flows so: capture.ICMPCounterpart),
// rather than a type and its code: the code of a request or reply is
// then 0.
func icmpPaired(proto uint8, typ, other uint16) bool {
	if typ > 0xff {
		return false
	}
	peer, ok := capture.ICMPCounterpart(uint8(typ), proto == capture.ProtoICMPv6)
	return ok && uint16(peer) == other
}

// endReason is the record's flowEndReason: the pipeline's, or, for a
// record that has none, what its conn_state tells (a FIN or an RST ended
// the flow, or it timed out).
func endReason(f *record.Flow) uint8 {
	if f.EndReason != 0 {
		return uint8(f.EndReason)
	}
	switch f.State {
	case acsm.SF, acsm.REJ, acsm.RSTO, acsm.RSTR, acsm.RSTOS0, acsm.RSTRH, acsm.SH, acsm.SHR:
		return EndOfFlow
	}
	return EndIdleTimeout
}
