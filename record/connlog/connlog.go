// Package connlog writes flow records as Zeek's conn.log in JSON lines
// (Zeek's LogAscii::use_json): one object a flow with conn.log's field
// names, in conn.log's order, for the fields flowmon knows. history is
// empty where Zeek's is unset ("-"), as for ICMP.
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
	b = strconv.AppendUint(b, uint64(f.OrigPort), 10)
	b = append(b, `,"id.resp_h":"`...)
	b = f.Resp.AppendTo(b)
	b = append(b, `","id.resp_p":`...)
	b = strconv.AppendUint(b, uint64(f.RespPort), 10)
	b = append(b, `,"proto":"`...)
	b = append(b, Proto(f.Proto)...)
	b = append(b, `","duration":`...)
	b = appendFloat(b, f.Duration())
	b = append(b, `,"orig_bytes":`...)
	b = strconv.AppendUint(b, f.OrigBytes, 10)
	b = append(b, `,"resp_bytes":`...)
	b = strconv.AppendUint(b, f.RespBytes, 10)
	b = append(b, `,"conn_state":"`...)
	b = append(b, f.State.String()...)
	b = append(b, `","missed_bytes":`...)
	b = strconv.AppendUint(b, f.MissedBytes, 10)
	b = append(b, `,"history":"`...)
	b = f.History.AppendTo(b)
	b = append(b, `","orig_pkts":`...)
	b = strconv.AppendUint(b, f.OrigPkts, 10)
	b = append(b, `,"orig_ip_bytes":`...)
	b = strconv.AppendUint(b, f.OrigIPBytes, 10)
	b = append(b, `,"resp_pkts":`...)
	b = strconv.AppendUint(b, f.RespPkts, 10)
	b = append(b, `,"resp_ip_bytes":`...)
	b = strconv.AppendUint(b, f.RespIPBytes, 10)
	return append(b, "}\n"...)
}

// appendFloat formats v as encoding/json does a float64: the shortest
// decimal that reads back as v, in exponent form below 1e-6 and from 1e21
// on, with a one-digit negative exponent written without its zero.
// Record times and durations are finite.
func appendFloat(b []byte, v float64) []byte {
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

// flushAt is the buffered bytes past which a batch is written out: about
// 200 records, a write the size of a pipe's or a socket's buffer.
const flushAt = 64 << 10

// Writer is a record.Sink writing JSON lines to an io.Writer. It is not
// safe for concurrent use (the pipeline calls a sink from one goroutine at
// a time).
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer to w. Each batch is written in writes of
// about 64 KiB (no line is split over two), so w needs no buffer of its
// own.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, buf: make([]byte, 0, flushAt+1024)}
}

// WriteFlows writes one line a record.
func (c *Writer) WriteFlows(flows []record.Flow) error {
	var err error
	for i := range flows {
		c.buf = AppendJSON(c.buf, &flows[i])
		if len(c.buf) >= flushAt {
			if werr := c.write(); err == nil {
				err = werr
			}
		}
	}
	if werr := c.write(); err == nil {
		err = werr
	}
	return err
}

// write writes the buffered lines. On an error they are dropped: the
// caller counts the batch as failed, and a retry would write lines twice
// where the writer took part of them.
func (c *Writer) write() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.w.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

// Flush has nothing to do: WriteFlows writes every line it is given.
func (c *Writer) Flush() error { return nil }
