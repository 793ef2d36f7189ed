// Package connlog writes flow records as Zeek's conn.log in JSON lines
// (Zeek's LogAscii::use_json): one object a flow with conn.log's field
// names, in conn.log's order, for the fields flowmon knows, and last the
// flow's community_id as Zeek's Community ID package adds it. An interim
// record of a flow still open (record.EndActive, with an active timeout)
// is such a line with the counts so far, its uid the flow's, and
// "interim":true last; the flow's last line has none. history is empty
// where Zeek's is unset ("-"), as for ICMP.
//
// The encoder appends into a reused buffer without reflection, and its
// bytes are encoding/json's for the same fields (Record, the type a
// reader decodes a line into): numbers as encoding/json formats them,
// strings that need no escaping (addresses, uids, protocol and state
// names, history letters).
package connlog

import (
	"io"
	"math"
	"net/netip"
	"strconv"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// Record is one line of the log as a reader decodes it (encoding/json).
type Record struct {
	TS          float64    `json:"ts"`
	UID         string     `json:"uid"`
	OrigH       netip.Addr `json:"id.orig_h"`
	OrigP       uint16     `json:"id.orig_p"`
	RespH       netip.Addr `json:"id.resp_h"`
	RespP       uint16     `json:"id.resp_p"`
	Proto       string     `json:"proto"`
	Duration    float64    `json:"duration"`
	OrigBytes   uint64     `json:"orig_bytes"`
	RespBytes   uint64     `json:"resp_bytes"`
	ConnState   string     `json:"conn_state"`
	MissedBytes uint64     `json:"missed_bytes"`
	History     string     `json:"history"`
	OrigPkts    uint64     `json:"orig_pkts"`
	OrigIPBytes uint64     `json:"orig_ip_bytes"`
	RespPkts    uint64     `json:"resp_pkts"`
	RespIPBytes uint64     `json:"resp_ip_bytes"`
	// TunnelParents is the uid of the innermost encapsulation that
	// carried the flow, as Zeek's set of them; absent when none did.
	TunnelParents []string `json:"tunnel_parents,omitempty"`
	CommunityID   string   `json:"community_id"`
	Interim       bool     `json:"interim,omitempty"`
}

// Proto is conn.log's proto for an IP protocol number: Zeek's
// transport_proto, which has icmp for ICMPv6 too and unknown_transport
// for what is not TCP, UDP or ICMP.
func Proto(p uint8) string {
	switch p {
	case capture.ProtoTCP, capture.ProtoUDP, capture.ProtoICMP:
		return capture.ProtoName(p)
	case capture.ProtoICMPv6:
		return "icmp"
	}
	return "unknown_transport"
}

// AppendJSON appends f as one line (ending in '\n') to b.
func AppendJSON(b []byte, f *record.Flow) []byte {
	b = append(b, `{"ts":`...)
	b = appendFloat(b, float64(f.Start)/1e9)
	b = append(b, `,"uid":"`...)
	b = record.AppendUID(b, f.UID)
	b = append(b, `","id.orig_h":"`...)
	b = f.Orig.AppendTo(b)
	b = append(b, `","id.orig_p":`...)
	b = appendUint(b, uint64(f.OrigPort))
	b = append(b, `,"id.resp_h":"`...)
	b = f.Resp.AppendTo(b)
	b = append(b, `","id.resp_p":`...)
	b = appendUint(b, uint64(f.RespPort))
	b = append(b, `,"proto":"`...)
	b = append(b, Proto(f.Proto)...)
	b = append(b, `","duration":`...)
	b = appendFloat(b, f.Duration())
	b = append(b, `,"orig_bytes":`...)
	b = appendUint(b, f.OrigBytes)
	b = append(b, `,"resp_bytes":`...)
	b = appendUint(b, f.RespBytes)
	b = append(b, `,"conn_state":"`...)
	b = append(b, f.State.String()...)
	b = append(b, `","missed_bytes":`...)
	b = appendUint(b, f.MissedBytes)
	b = append(b, `,"history":"`...)
	b = f.History.AppendTo(b)
	b = append(b, `","orig_pkts":`...)
	b = appendUint(b, f.OrigPkts)
	b = append(b, `,"orig_ip_bytes":`...)
	b = appendUint(b, f.OrigIPBytes)
	b = append(b, `,"resp_pkts":`...)
	b = appendUint(b, f.RespPkts)
	b = append(b, `,"resp_ip_bytes":`...)
	b = appendUint(b, f.RespIPBytes)
	if f.TunnelParent != 0 {
		b = append(b, `,"tunnel_parents":["`...)
		b = record.AppendUID(b, f.TunnelParent)
		b = append(b, `"]`...)
	}
	if f.CommunityID[0] != 0 { // unset in a record that no pipeline delivered
		b = append(b, `,"community_id":"`...)
		b = append(b, f.CommunityID[:]...)
		b = append(b, '"')
	}
	if f.EndReason == record.EndActive {
		return append(b, `,"interim":true}`+"\n"...)
	}
	return append(b, "}\n"...)
}

// appendUint appends v in decimal. Most of a record's counts are small
// (zero bytes, a few packets), so those take no call.
func appendUint(b []byte, v uint64) []byte {
	switch {
	case v < 10:
		return append(b, byte('0'+v))
	case v < 100:
		return append(b, digits2[2*v], digits2[2*v+1])
	}
	return strconv.AppendUint(b, v, 10)
}

const digits2 = "00010203040506070809" + "10111213141516171819" + "20212223242526272829" + "30313233343536373839" +
	"40414243444546474849" + "50515253545556575859" + "60616263646566676869" + "70717273747576777879" +
	"80818283848586878889" + "90919293949596979899"

// appendFloat formats v as encoding/json does a float64: the shortest
// decimal that reads back as v, in exponent form below 1e-6 and from 1e21
// on, with a one-digit negative exponent written without its zero.
// Record times and durations are finite.
func appendFloat(b []byte, v float64) []byte {
	if b, ok := appendFixed(b, v); ok {
		return b
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// appendFixed is appendFloat's fast path for the values a record holds, a
// time in seconds since the epoch or a duration, which pcap gives to the
// microsecond: it finds the fewest digits k after the point for which an
// integer m gives m/10^k == v, and writes m with the point k digits from
// its end. m/10^k is computed exactly as a reader would parse it: m and
// 10^k are exact doubles, and IEEE division rounds the quotient
// correctly, as strconv.ParseFloat rounds a decimal. Below 2^52 at most
// one integer m can do for a k (v's rounding interval, scaled by 10^k, is
// narrower than 1), and if one does for k, m·10 does for k+1: so the
// first k tried is 6, fewer when that m ends in zeros, more when it does
// not do. ok is false for a value it cannot write so (strconv then
// does).
func appendFixed(b []byte, v float64) (_ []byte, ok bool) {
	if !(v >= 1e-6 && v < 1e15) {
		if v == 0 {
			return append(b, '0'), true
		}
		return b, false
	}
	const limit = 1 << 52
	for k := 6; k < len(pow10); k++ {
		x := v * pow10[k]
		if x >= limit {
			return b, false
		}
		// m is within one of the closest integer to the exact product.
		m := uint64(x + 0.5)
		if float64(m)/pow10[k] != v {
			switch d := x - float64(m); {
			case d > 0.49 && float64(m+1)/pow10[k] == v:
				m++
			case d < -0.49 && m > 0 && float64(m-1)/pow10[k] == v:
				m--
			default:
				continue
			}
		}
		for k > 0 && m%10 == 0 {
			m, k = m/10, k-1
		}
		return appendPoint(b, m, k), true
	}
	return b, false
}

// appendPoint writes m with a decimal point k digits from its end (k 0:
// none), and a 0 before the point when m has no more than k digits.
func appendPoint(b []byte, m uint64, k int) []byte {
	var d [24]byte
	i := len(d)
	if k > 0 {
		for range k {
			i--
			d[i] = byte('0' + m%10)
			m /= 10
		}
		i--
		d[i] = '.'
	}
	for {
		i--
		d[i] = byte('0' + m%10)
		m /= 10
		if m == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

// Writer is a record.Sink writing JSON lines to an io.Writer. It is not
// safe for concurrent use (the pipeline calls a sink from one goroutine at
// a time).
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer to w. Each batch is written in one write, so
// w needs no buffer of its own, and a batch the write fails is not on
// disk at all where w cuts a failed write back off (the live agent's
// flow log, internal/rotfile): the records counted lost are exactly those
// missing. The buffer is a batch's lines: the pipeline's batches are of
// 256 records, some 80 KB.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, buf: make([]byte, 0, 96<<10)}
}

// WriteFlows writes one line a record, all in one write. On an error the
// lines are dropped: the caller counts the batch as failed, and a retry
// would write lines twice where the writer took part of them.
func (c *Writer) WriteFlows(flows []record.Flow) error {
	c.buf = c.buf[:0]
	for i := range flows {
		c.buf = AppendJSON(c.buf, &flows[i])
	}
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.w.Write(c.buf)
	return err
}

// Flush has nothing to do: WriteFlows writes every line it is given.
func (c *Writer) Flush() error { return nil }
