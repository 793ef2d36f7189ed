package ipfix

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// tcpFlow is a finished TCP flow: 10.0.0.1:40000 -> 10.0.0.2:80,
// history ShADadFf, SF.
func tcpFlow() record.Flow {
	f := record.Flow{
		Start: 1_700_000_000_123_456_789, End: 1_700_000_001_500_000_000,
		Orig: netip.MustParseAddr("10.0.0.1"), Resp: netip.MustParseAddr("10.0.0.2"),
		OrigPort: 40000, RespPort: 80, Proto: 6, State: acsm.SF, Confidence: 1,
		OrigPkts: 5, RespPkts: 4, OrigIPBytes: 400, RespIPBytes: 3000,
		OrigTCPFlags: capture.SYN | capture.ACK | capture.FIN, RespTCPFlags: capture.SYN | capture.ACK | capture.FIN,
	}
	for _, c := range []byte("ShADadFf") {
		f.History.AppendLetter(c)
	}
	return f
}

// unhex reads hex with spaces, newlines and | between fields.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func collect(t *testing.T, e *encoder, flows []record.Flow) [][]byte {
	t.Helper()
	var msgs [][]byte
	if _, _, err := e.encode(flows, 1_700_000_100, func(m []byte, _ uint32) error {
		msgs = append(msgs, bytes.Clone(m))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// TestTemplateLayout holds the template message to RFC 7011 §3.1, §3.3.2
// and §3.4.1 byte by byte: header, set 2, template 256 then 257, reverse
// elements with the enterprise bit and PEN 29305.
func TestTemplateLayout(t *testing.T) {
	e := newEncoder(encoderOptions{biflow: true, domain: 7, maxMessage: 1472})
	e.seq = 42
	got := e.templateMessage(1_700_000_100)
	v4 := `0100 000f` + // template 256, 15 fields
		`0008 0004 | 000c 0004 | 0007 0002 | 000b 0002 | 0020 0002 | 0004 0001 | 0006 0002 |
		 0098 0008 | 0099 0008 | 0002 0008 | 0001 0008 | 0088 0001 |
		 8002 0008 00007279 | 8001 0008 00007279 | 8006 0002 00007279`
	v6 := `0101 000f` +
		`001b 0010 | 001c 0010 | 0007 0002 | 000b 0002 | 008b 0002 | 0004 0001 | 0006 0002 |
		 0098 0008 | 0099 0008 | 0002 0008 | 0001 0008 | 0088 0001 |
		 8002 0008 00007279 | 8001 0008 00007279 | 8006 0002 00007279`
	setLen := 4 + 2*(4+12*4+3*8)
	want := unhex(t, "000a"+hex16(16+setLen)+"6553f164 0000002a 00000007"+"0002"+hex16(setLen)+v4+v6)
	if !bytes.Equal(got, want) {
		t.Fatalf("template message\n got %x\nwant %x", got, want)
	}
}

func hex16(n int) string { return hex.EncodeToString(binary.BigEndian.AppendUint16(nil, uint16(n))) }

// TestDataRecordLayout holds a biflow data record to its template, and
// the data set's padding to a 4-byte boundary (§3.3.1).
func TestDataRecordLayout(t *testing.T) {
	e := newEncoder(encoderOptions{biflow: true, domain: 7, maxMessage: 1472})
	f := tcpFlow()
	msgs := collect(t, e, []record.Flow{f})
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	rec := `0a000001 0a000002 9c40 0050 0000 06 0013 | 0000018bcfe5687b 0000018bcfe56ddc |
		0000000000000005 0000000000000190 03 | 0000000000000004 0000000000000bb8 0013`
	recLen := 4 + 4 + 2 + 2 + 2 + 1 + 2 + 8 + 8 + 8 + 8 + 1 + 8 + 8 + 2 // 68
	setLen := 4 + recLen                                                // 72: aligned
	want := unhex(t, "000a"+hex16(16+setLen)+"6553f164 00000000 00000007"+"0100"+hex16(setLen)+rec)
	if !bytes.Equal(msgs[0], want) {
		t.Fatalf("data message\n got %x\nwant %x", msgs[0], want)
	}

	// Without the reverse elements a record is 50 bytes: the set is
	// padded with 2 zeros to 56.
	e = newEncoder(encoderOptions{maxMessage: 1472})
	f.RespPkts = 0
	msgs = collect(t, e, []record.Flow{f})
	m := msgs[0]
	if l := binary.BigEndian.Uint16(m[16+2:]); l != 56 || len(m) != 16+56 || !bytes.Equal(m[len(m)-2:], []byte{0, 0}) {
		t.Fatalf("set length %d, message %d bytes, ends %x: want 56, 72, 0000", l, len(m), m[len(m)-2:])
	}
}

// TestEnterpriseElements: with an enterprise number the templates end with
// connState and history (variable length: 0xffff) and confidence, their
// IDs with the enterprise bit, followed by the number; in a record the
// strings are a length octet and the bytes (§7).
func TestEnterpriseElements(t *testing.T) {
	e := newEncoder(encoderOptions{enterprise: 0xfeed, maxMessage: 1472})
	tm := e.templateMessage(0)
	tail := unhex(t, "8001 ffff 0000feed 8002 ffff 0000feed 8003 0004 0000feed")
	v4 := tm[16+4 : 16+4+e.t[0].recordLen()]
	if !bytes.HasSuffix(v4, tail) {
		t.Fatalf("template 256 ends %x, want %x", v4[len(v4)-len(tail):], tail)
	}
	f := tcpFlow()
	f.RespPkts = 0 // one record in compat mode
	msg := collect(t, e, []record.Flow{f})[0]
	// the record: 50 fixed bytes, then 02 "SF", 08 "ShADadFf", 3f800000
	want := append(append([]byte{2}, "SF"...), 8)
	want = append(append(want, "ShADadFf"...), 0x3f, 0x80, 0, 0)
	rec := msg[16+4 : 16+4+50+len(want)]
	if !bytes.Equal(rec[50:], want) {
		t.Fatalf("enterprise values %x, want %x", rec[50:], want)
	}
	if setLen := int(binary.BigEndian.Uint16(msg[18:])); setLen != align4(4+50+len(want)) {
		t.Fatalf("set length %d, want %d", setLen, align4(4+50+len(want)))
	}
}

// TestVarLenLongForm: 255 bytes and more are 255, a 2-byte length, the
// bytes.
func TestVarLenLongForm(t *testing.T) {
	for _, n := range []int{0, 1, 254, 255, 300, 65535} {
		v := bytes.Repeat([]byte{'x'}, n)
		b := appendVarLen(nil, v)
		switch {
		case n < 255 && (len(b) != n+1 || b[0] != byte(n)):
			t.Errorf("%d bytes: prefix %x, len %d", n, b[:1], len(b))
		case n >= 255 && (len(b) != n+3 || b[0] != 255 || int(binary.BigEndian.Uint16(b[1:])) != n):
			t.Errorf("%d bytes: prefix %x, len %d", n, b[:3], len(b))
		}
	}
}

// TestICMPAndIPv6 checks the IPv6 template's addresses and the ICMP type
// and code in icmpTypeCodeIPv6 with zero ports.
func TestICMPAndIPv6(t *testing.T) {
	e := newEncoder(encoderOptions{maxMessage: 1472})
	f := record.Flow{Orig: netip.MustParseAddr("2001:db8::1"), Resp: netip.MustParseAddr("2001:db8::2"),
		OrigPort: 128, RespPort: 129, Proto: 58, OrigPkts: 1, OrigIPBytes: 104}
	m := collect(t, e, []record.Flow{f})[0]
	if id := binary.BigEndian.Uint16(m[16:]); id != TemplateIPv6 {
		t.Fatalf("set %d, want %d", id, TemplateIPv6)
	}
	r := m[20:]
	if !bytes.Equal(r[:16], f.Orig.AsSlice()) || !bytes.Equal(r[16:32], f.Resp.AsSlice()) {
		t.Fatalf("addresses %x", r[:32])
	}
	if got := r[32:38]; !bytes.Equal(got, []byte{0, 0, 0, 0, 128, 0}) {
		t.Fatalf("ports and type/code %x, want 0000 0000 8000", got)
	}
	// Destination unreachable (3), port unreachable (3): not a pair, the
	// code is the responder's port.
	f = record.Flow{Orig: netip.MustParseAddr("10.0.0.1"), Resp: netip.MustParseAddr("10.0.0.2"),
		OrigPort: 3, RespPort: 3, Proto: 1, OrigPkts: 1}
	r = collect(t, e, []record.Flow{f})[0][20:]
	if got := r[8:14]; !bytes.Equal(got, []byte{0, 0, 0, 0, 3, 3}) {
		t.Fatalf("ports and type/code %x, want 0000 0000 0303", got)
	}
}

// TestCompatRecords: compat mode sends the originator's record, then the
// responder's with the addresses, ports, counts and flags swapped.
func TestCompatRecords(t *testing.T) {
	e := newEncoder(encoderOptions{maxMessage: 1472})
	f := tcpFlow()
	m := collect(t, e, []record.Flow{f})[0]
	const recLen = 50
	if l := binary.BigEndian.Uint16(m[18:]); l != 4+2*recLen {
		t.Fatalf("set length %d, want %d", l, 4+2*recLen)
	}
	fwd, rev := m[20:20+recLen], m[20+recLen:20+2*recLen]
	if !bytes.Equal(fwd[:4], rev[4:8]) || !bytes.Equal(fwd[4:8], rev[:4]) ||
		!bytes.Equal(fwd[8:10], rev[10:12]) || !bytes.Equal(fwd[10:12], rev[8:10]) {
		t.Fatalf("reverse record's endpoints: fwd %x rev %x", fwd[:12], rev[:12])
	}
	get := func(r []byte, off int) uint64 { return binary.BigEndian.Uint64(r[off:]) }
	// packets at 33, octets at 41 (after the times at 17 and 25)
	if get(fwd, 33) != 5 || get(fwd, 41) != 400 || get(rev, 33) != 4 || get(rev, 41) != 3000 {
		t.Fatalf("counts fwd %d/%d rev %d/%d", get(fwd, 33), get(fwd, 41), get(rev, 33), get(rev, 41))
	}
	if ff, rf := binary.BigEndian.Uint16(fwd[15:]), binary.BigEndian.Uint16(rev[15:]); ff != uint16(capture.SYN|capture.ACK|capture.FIN) || rf != uint16(capture.SYN|capture.ACK|capture.FIN) {
		t.Fatalf("flags fwd %#x rev %#x", ff, rf)
	}
	if fwd[49] != EndOfFlow {
		t.Fatalf("flowEndReason %d, want %d", fwd[49], EndOfFlow)
	}
}

// msgInfo is what the split test reads back of a message.
type msgInfo struct {
	seq     uint32
	records int
}

// readMessage checks a message's header and set lengths and counts its
// data records (fixed-size ones: no enterprise elements).
func readMessage(t *testing.T, m []byte, recLen map[uint16]int) msgInfo {
	t.Helper()
	if v := binary.BigEndian.Uint16(m); v != Version {
		t.Fatalf("version %d", v)
	}
	if l := int(binary.BigEndian.Uint16(m[2:])); l != len(m) {
		t.Fatalf("length field %d, message %d bytes", l, len(m))
	}
	info := msgInfo{seq: binary.BigEndian.Uint32(m[8:])}
	for off := HeaderLen; off < len(m); {
		id, l := binary.BigEndian.Uint16(m[off:]), int(binary.BigEndian.Uint16(m[off+2:]))
		if l < SetHeaderLen || off+l > len(m) || l%4 != 0 {
			t.Fatalf("set %d at %d: length %d in a message of %d", id, off, l, len(m))
		}
		rl := recLen[id]
		n, pad := (l-SetHeaderLen)/rl, (l-SetHeaderLen)%rl
		if pad >= rl || pad > 3 {
			t.Fatalf("set %d: %d bytes of padding", id, pad)
		}
		info.records += n
		off += l
	}
	return info
}

// TestSplitAtMTU: many records of both families go out in messages none
// longer than the limit, each full (the next record would not have
// fitted), with sequence numbers counting the records before each.
func TestSplitAtMTU(t *testing.T) {
	const max = 600
	e := newEncoder(encoderOptions{biflow: true, maxMessage: max})
	e.seq = 1<<32 - 20 // wraps within the test
	var flows []record.Flow
	for i := range 500 {
		f := tcpFlow()
		if i%7 < 3 {
			f.Orig, f.Resp = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
		}
		flows = append(flows, f)
	}
	msgs := collect(t, e, flows)
	recLen := map[uint16]int{TemplateIPv4: e.t[0].fixed, TemplateIPv6: e.t[1].fixed}
	seq := uint32(1<<32 - 20)
	total := 0
	for i, m := range msgs {
		if len(m) > max {
			t.Fatalf("message %d: %d bytes, more than %d", i, len(m), max)
		}
		info := readMessage(t, m, recLen)
		if info.seq != seq {
			t.Fatalf("message %d: sequence %d, want %d", i, info.seq, seq)
		}
		seq += uint32(info.records)
		total += info.records
		if i < len(msgs)-1 {
			// The next record, of either family, in its own set at the worst.
			if room := max - len(m); room >= SetHeaderLen+align4(e.t[1].fixed) {
				t.Fatalf("message %d: %d bytes left, room for another record", i, room)
			}
		}
	}
	if total != len(flows) {
		t.Fatalf("%d records in %d messages, want %d", total, len(msgs), len(flows))
	}
	if e.seq != seq || seq != uint32(len(flows)-20) {
		t.Fatalf("encoder's sequence %d, counted %d, want %d", e.seq, seq, len(flows)-20)
	}
}

// TestFlagBits pins capture.TCPFlags to RFC 7125's tcpControlBits, which
// the encoder sends as they are, and the end reasons.
func TestFlagBits(t *testing.T) {
	for f, bit := range map[capture.TCPFlags]uint16{capture.FIN: 0x01, capture.SYN: 0x02, capture.RST: 0x04, capture.PSH: 0x08,
		capture.ACK: 0x10, capture.URG: 0x20, capture.ECE: 0x40, capture.CWR: 0x80, capture.NS: 0x100} {
		if uint16(f) != bit {
			t.Errorf("flag %v is %#x, tcpControlBits %#x", f, uint16(f), bit)
		}
	}
	for s := acsm.ConnState(0); s < acsm.NumConnStates; s++ {
		want := uint8(EndIdleTimeout)
		switch s {
		case acsm.SF, acsm.REJ, acsm.RSTO, acsm.RSTR, acsm.RSTOS0, acsm.RSTRH, acsm.SH, acsm.SHR:
			want = EndOfFlow
		}
		if got := endReason(&record.Flow{State: s}); got != want {
			t.Errorf("%v: flowEndReason %d, want %d", s, got, want)
		}
	}
	for r := record.EndIdle; r <= record.EndLackOfResources; r++ {
		if got := endReason(&record.Flow{State: acsm.SF, EndReason: r}); got != uint8(r) {
			t.Errorf("%v: flowEndReason %d, want the pipeline's %d", r, got, r)
		}
	}
}

// TestInterimDeltas: a flow's interim records and its last one are sent
// as delta counts that add up to the last record's counts, and the
// exporter keeps nothing once the flow's last record is sent.
func TestInterimDeltas(t *testing.T) {
	x := &Exporter{sent: map[uint64]flowCounts{}}
	rec := func(pkts, bytes uint64, why record.EndReason) record.Flow {
		return record.Flow{UID: 7, OrigPkts: pkts, RespPkts: pkts / 2, OrigIPBytes: bytes, RespIPBytes: bytes / 2, EndReason: why}
	}
	other := record.Flow{UID: 8, OrigPkts: 3, OrigIPBytes: 300, EndReason: record.EndOfFlow}
	var sum record.Flow
	for _, batch := range [][]record.Flow{
		{rec(10, 1000, record.EndActive), other},
		{rec(25, 2600, record.EndActive)},
		{rec(40, 4000, record.EndOfFlow)},
	} {
		for _, f := range x.deltas(batch) {
			if f.UID == 8 {
				if f != other {
					t.Errorf("a flow without interim records changed: %+v", f)
				}
				continue
			}
			sum.OrigPkts += f.OrigPkts
			sum.RespPkts += f.RespPkts
			sum.OrigIPBytes += f.OrigIPBytes
			sum.RespIPBytes += f.RespIPBytes
		}
	}
	if want := rec(40, 4000, 0); sum.OrigPkts != want.OrigPkts || sum.RespPkts != want.RespPkts ||
		sum.OrigIPBytes != want.OrigIPBytes || sum.RespIPBytes != want.RespIPBytes {
		t.Errorf("deltas add up to %+v, want the last record's counts %+v", sum, want)
	}
	if len(x.sent) != 0 {
		t.Errorf("%d flows kept after their last records", len(x.sent))
	}
}

func TestEncodeAllocs(t *testing.T) {
	e := newEncoder(encoderOptions{biflow: true, enterprise: 1, maxMessage: 1472})
	flows := make([]record.Flow, 256)
	for i := range flows {
		flows[i] = tcpFlow()
	}
	emit := func([]byte, uint32) error { return nil }
	if n := testing.AllocsPerRun(20, func() { e.encode(flows, 0, emit) }); n != 0 {
		t.Fatalf("%v allocations a batch, want 0", n)
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, mode := range []string{ModeBiflow, ModeCompat} {
		b.Run(mode, func(b *testing.B) {
			e := newEncoder(encoderOptions{biflow: mode == ModeBiflow, maxMessage: 1472})
			flows := make([]record.Flow, 256)
			for i := range flows {
				flows[i] = tcpFlow()
			}
			emit := func([]byte, uint32) error { return nil }
			b.ReportAllocs()
			for b.Loop() {
				e.encode(flows, 0, emit)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(flows)), "ns/record")
		})
	}
}
