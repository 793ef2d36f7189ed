package gen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strconv"

	"github.com/flowmon/flowmon/capture"
)

// Truth is one flow's ground truth, one JSON line of the sidecar file.
// The originator is the side Zeek would call the originator (the sender of
// the first SYN; for SHR/RSTRH flows, the client that never appears).
// Packet counts leave out SPAN duplicates, which DupPkts counts.
type Truth struct {
	OrigH      netip.Addr `json:"orig_h"`
	OrigP      uint16     `json:"orig_p"` // ICMP: the echo request type
	RespH      netip.Addr `json:"resp_h"`
	RespP      uint16     `json:"resp_p"` // ICMP: the reply type (0, ICMPv6 129)
	Proto      string     `json:"proto"`  // tcp, udp, icmp, icmp6
	ConnState  string     `json:"conn_state"`
	OrigPkts   int64      `json:"orig_pkts"`
	RespPkts   int64      `json:"resp_pkts"`
	Duplicated bool       `json:"duplicated"`
	DupPkts    int64      `json:"dup_pkts"`
	Scenario   string     `json:"scenario"` // normal, synflood, scan, heavy
	TS         float64    `json:"ts"`       // first packet, seconds since the Unix epoch
	Duration   float64    `json:"duration"` // last packet (duplicates included) - first, seconds
}

// Key returns the flow's 5-tuple, originator first. For ICMP the ports
// are the request's type and code, as capture.Key keeps them.
func (t *Truth) Key() capture.Key {
	var p uint8
	switch t.Proto {
	case "tcp":
		p = capture.ProtoTCP
	case "udp":
		p = capture.ProtoUDP
	case "icmp":
		p = capture.ProtoICMP
	case "icmp6":
		p = capture.ProtoICMPv6
	}
	return capture.Key{Src: t.OrigH, Dst: t.RespH, SrcPort: t.OrigP, DstPort: t.RespP, Proto: p}
}

func protoName(p uint8) string {
	switch p {
	case protoTCP:
		return "tcp"
	case protoUDP:
		return "udp"
	case protoICMP:
		return "icmp"
	case protoICMPv6:
		return "icmp6"
	}
	return strconv.Itoa(int(p))
}

// fillTruth writes f's ground truth into t.
func (f *flow) fillTruth(t *Truth, startUS int64) {
	*t = Truth{
		OrigH: f.cAddr, OrigP: f.cPort, RespH: f.sAddr, RespP: f.sPort,
		Proto: protoName(f.proto), ConnState: f.state.String(),
		OrigPkts: f.origPkts, RespPkts: f.respPkts,
		Duplicated: f.dupPkts > 0, DupPkts: f.dupPkts,
		Scenario: f.scen.String(),
		TS:       float64(startUS+f.first) / 1e6,
		Duration: float64(f.last-f.first) / 1e6,
	}
}

// AppendJSON appends t as one line of JSON (no newline), with the fields
// in the documented order and times to the microsecond.
func (t *Truth) AppendJSON(b []byte) []byte {
	b = append(b, `{"orig_h":"`...)
	b = t.OrigH.AppendTo(b)
	b = append(b, `","orig_p":`...)
	b = strconv.AppendUint(b, uint64(t.OrigP), 10)
	b = append(b, `,"resp_h":"`...)
	b = t.RespH.AppendTo(b)
	b = append(b, `","resp_p":`...)
	b = strconv.AppendUint(b, uint64(t.RespP), 10)
	b = append(b, `,"proto":`...)
	b = strconv.AppendQuote(b, t.Proto)
	b = append(b, `,"conn_state":`...)
	b = strconv.AppendQuote(b, t.ConnState)
	b = append(b, `,"orig_pkts":`...)
	b = strconv.AppendInt(b, t.OrigPkts, 10)
	b = append(b, `,"resp_pkts":`...)
	b = strconv.AppendInt(b, t.RespPkts, 10)
	b = append(b, `,"duplicated":`...)
	b = strconv.AppendBool(b, t.Duplicated)
	b = append(b, `,"dup_pkts":`...)
	b = strconv.AppendInt(b, t.DupPkts, 10)
	b = append(b, `,"scenario":`...)
	b = strconv.AppendQuote(b, t.Scenario)
	b = append(b, `,"ts":`...)
	b = strconv.AppendFloat(b, t.TS, 'f', 6, 64)
	b = append(b, `,"duration":`...)
	b = strconv.AppendFloat(b, t.Duration, 'f', 6, 64)
	return append(b, '}')
}

// ReadTruth reads a ground-truth sidecar: one JSON object per line; blank
// lines are skipped, unknown keys ignored (keys are added, never renamed).
// Errors name the line.
func ReadTruth(r io.Reader) ([]Truth, error) {
	var out []Truth
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var t Truth
		d := json.NewDecoder(bytes.NewReader(b))
		if err := d.Decode(&t); err != nil {
			return out, fmt.Errorf("read truth: line %d: %w", line, err)
		}
		if d.More() {
			return out, fmt.Errorf("read truth: line %d: trailing data", line)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read truth: %w", err)
	}
	return out, nil
}
