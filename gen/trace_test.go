package gen

import (
	"bytes"
	"encoding/binary"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

// Helpers that decode a generated trace with gopacket and check it against
// its ground truth and the Zeek model (zeek_test.go).

// decoded is one packet of a trace, decoded with gopacket.
type decoded struct {
	us       int64
	data     []byte
	wire     int
	key      capture.Key // directed
	flags    uint8
	plen     int
	ttl      uint8
	ipHeader int // offset of the IP header in data
}

// decodeTrace reads a pcap with pcapgo, decodes every packet with
// gopacket's layers and checks the things that hold for every packet.
func decodeTrace(t *testing.T, pcap []byte, o Options) []decoded {
	t.Helper()
	r, err := pcapgo.NewReader(bytes.NewReader(pcap))
	if err != nil {
		t.Fatalf("pcapgo: %v", err)
	}
	wantLink := layers.LinkTypeEthernet
	if o.Link == LinkRaw {
		wantLink = layers.LinkTypeRaw
	}
	if r.LinkType() != wantLink {
		t.Fatalf("link type %v, want %v", r.LinkType(), wantLink)
	}
	var out []decoded
	var last int64
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		d := decoded{us: ci.Timestamp.UnixMicro(), data: data, wire: ci.Length}
		if d.us < last {
			t.Fatalf("packet %d: time goes back from %d to %d", i, last, d.us)
		}
		last = d.us
		if o.Snaplen > 0 && len(data) != min(ci.Length, o.Snaplen) {
			t.Fatalf("packet %d: captured %d of %d bytes with snaplen %d", i, len(data), ci.Length, o.Snaplen)
		}
		checkPacket(t, i, &d, wantLink, len(data) == ci.Length)
		out = append(out, d)
	}
	return out
}

// checkPacket decodes d, fills its fields from the headers and checks the
// lengths; when the packet is whole (full) it also checks the payload
// lengths, the Ethernet padding and every checksum.
func checkPacket(t *testing.T, i int, d *decoded, link layers.LinkType, full bool) {
	t.Helper()
	p := gopacket.NewPacket(d.data, link, gopacket.Default)
	// Payloads are random bytes: gopacket may fail to decode one as the
	// application its port suggests (DNS), which is not an error here.
	if el := p.ErrorLayer(); el != nil && p.TransportLayer() == nil && p.Layer(layers.LayerTypeICMPv4) == nil && p.Layer(layers.LayerTypeICMPv6) == nil {
		t.Fatalf("packet %d: decode: %v", i, el.Error())
	}
	nl := p.NetworkLayer()
	if nl == nil {
		t.Fatalf("packet %d: no network layer", i)
	}
	ipLen := 0
	switch ip := nl.(type) {
	case *layers.IPv4:
		d.key.Src, d.key.Dst, d.ttl = addrOf(ip.SrcIP), addrOf(ip.DstIP), ip.TTL
		d.key.Proto = uint8(ip.Protocol)
		ipLen = int(ip.Length)
		if ip.IHL != 5 || ip.Flags != layers.IPv4DontFragment {
			t.Fatalf("packet %d: IHL %d flags %v", i, ip.IHL, ip.Flags)
		}
	case *layers.IPv6:
		d.key.Src, d.key.Dst, d.ttl = addrOf(ip.SrcIP), addrOf(ip.DstIP), ip.HopLimit
		d.key.Proto = uint8(ip.NextHeader)
		ipLen = 40 + int(ip.Length)
	}
	d.ipHeader = 0
	if link == layers.LinkTypeEthernet {
		d.ipHeader = 14
		if want := max(60, 14+ipLen); d.wire != want {
			t.Fatalf("packet %d: frame of %d bytes for an IP packet of %d, want %d", i, d.wire, ipLen, want)
		}
		for _, b := range d.data[min(14+ipLen, len(d.data)):] {
			if b != 0 {
				t.Fatalf("packet %d: non-zero Ethernet padding", i)
			}
		}
	} else if d.wire != ipLen {
		t.Fatalf("packet %d: raw packet of %d bytes, IP length %d", i, d.wire, ipLen)
	}
	ipHdr := 20
	if d.key.Src.Is6() {
		ipHdr = 40
	}
	switch tl := p.TransportLayer().(type) {
	case *layers.TCP:
		d.key.SrcPort, d.key.DstPort = uint16(tl.SrcPort), uint16(tl.DstPort)
		d.flags = tcpFlags(tl)
		d.plen = ipLen - ipHdr - int(tl.DataOffset)*4
		if full && len(tl.Payload) != d.plen {
			t.Fatalf("packet %d: TCP payload %d, IP length says %d", i, len(tl.Payload), d.plen)
		}
		if err := tl.SetNetworkLayerForChecksum(nl); err != nil {
			t.Fatal(err)
		}
	case *layers.UDP:
		d.key.SrcPort, d.key.DstPort = uint16(tl.SrcPort), uint16(tl.DstPort)
		d.plen = ipLen - ipHdr - 8
		if int(tl.Length) != ipLen-ipHdr || full && len(tl.Payload) != d.plen {
			t.Fatalf("packet %d: UDP length %d, payload %d, IP says %d", i, tl.Length, len(tl.Payload), ipLen-ipHdr)
		}
		if err := tl.SetNetworkLayerForChecksum(nl); err != nil {
			t.Fatal(err)
		}
	default:
		if l, ok := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ok {
			d.key.SrcPort, d.key.DstPort = uint16(l.TypeCode.Type()), uint16(l.TypeCode.Code())
		} else if l, ok := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6); ok {
			d.key.SrcPort, d.key.DstPort = uint16(l.TypeCode.Type()), uint16(l.TypeCode.Code())
			if err := l.SetNetworkLayerForChecksum(nl); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Fatalf("packet %d: no TCP, UDP or ICMP layer: %v", i, p)
		}
		d.plen = ipLen - ipHdr - 8
	}
	if !full {
		return
	}
	err, bad := p.VerifyChecksums()
	if err != nil || len(bad) > 0 {
		t.Fatalf("packet %d: checksums: %v %+v", i, err, bad)
	}
}

func tcpFlags(t *layers.TCP) uint8 {
	var f uint8
	for _, x := range []struct {
		set bool
		bit uint8
	}{{t.FIN, fFIN}, {t.SYN, fSYN}, {t.RST, fRST}, {t.PSH, fPSH}, {t.ACK, fACK}} {
		if x.set {
			f |= x.bit
		}
	}
	return f
}

// flowKey is the direction-free key the test groups packets by: ICMP
// flows are keyed by addresses only, since requests and replies differ in
// type.
func flowKey(k capture.Key) capture.Key {
	if k.Proto == protoICMP || k.Proto == protoICMPv6 {
		k.SrcPort, k.DstPort = 0, 0
	}
	c, _ := k.Canonical()
	return c
}

type flowCheck struct {
	truth      *Truth
	orig, resp int64
	dups       int64
	last       *decoded
	zeek       zConn
	zOrig      capture.Key // directed key of Zeek's originator
	started    bool
}

func checkTruth(t *testing.T, o Options, pkts []decoded, recs []Truth, st Stats) {
	flows := map[capture.Key]*flowCheck{}
	for i := range recs {
		r := &recs[i]
		k := flowKey(r.Key())
		if flows[k] != nil {
			t.Fatalf("two flows share the 5-tuple %v", k)
		}
		flows[k] = &flowCheck{truth: r}
	}
	var dups int64
	for i := range pkts {
		d := &pkts[i]
		fc := flows[flowKey(d.key)]
		if fc == nil {
			t.Fatalf("packet %d (%v) belongs to no flow of the truth", i, d.key)
		}
		tr := fc.truth
		if !fc.started {
			fc.started = true
			fc.zeek.proto = d.key.Proto
			fc.zOrig = d.key
			if zFlip(d.key.Proto, d.key.SrcPort, d.key.DstPort, d.flags) {
				fc.zOrig = d.key.Reverse()
			}
			if got := float64(d.us) / 1e6; got < tr.TS-1e-6 || got > tr.TS+1e-6 {
				t.Fatalf("flow %v: first packet at %.6f, truth ts %.6f", d.key, got, tr.TS)
			}
		}
		isOrig := d.key.Src == tr.OrigH && (d.key.SrcPort == tr.OrigP || d.key.Proto == protoICMP || d.key.Proto == protoICMPv6)
		if isDuplicate(fc.last, d, o.DupTTLChange) {
			fc.dups++
			dups++
		} else if isOrig {
			fc.orig++
		} else {
			fc.resp++
		}
		fc.zeek.packet(isOrig, d.flags, d.plen)
		fc.last = d
	}
	for k, fc := range flows {
		tr := fc.truth
		if fc.orig != tr.OrigPkts || fc.resp != tr.RespPkts || fc.dups != tr.DupPkts || tr.Duplicated != (tr.DupPkts > 0) {
			t.Errorf("flow %v: file has %d/%d packets and %d duplicates, truth says %d/%d and %d (%v)",
				k, fc.orig, fc.resp, fc.dups, tr.OrigPkts, tr.RespPkts, tr.DupPkts, tr.Duplicated)
		}
		if fc.zOrig.Src != tr.OrigH || fc.zOrig.Dst != tr.RespH {
			t.Errorf("flow %v (%s): Zeek's originator is %v, truth says %v", k, tr.ConnState, fc.zOrig.Src, tr.OrigH)
		}
		if got := fc.zeek.state(); got != tr.ConnState {
			t.Errorf("flow %v: Zeek would report %s (history %s), truth says %s", k, got, fc.zeek.hist, tr.ConnState)
		}
		if end := fc.last.us - int64(tr.TS*1e6+0.5); abs(end-int64(tr.Duration*1e6+0.5)) > 1 {
			t.Errorf("flow %v: lasts %d µs in the file, truth says %.6f s", k, end, tr.Duration)
		}
	}
	if dups != st.Duplicates || int64(len(pkts)) != st.Packets+st.Duplicates {
		t.Errorf("file has %d packets, %d duplicates; stats say %d + %d", len(pkts), dups, st.Packets, st.Duplicates)
	}
	if o.DupRate > 0 && dups == 0 {
		t.Error("no duplicates written")
	}
	t.Logf("%d packets, %d duplicates, %d flows", len(pkts), dups, len(flows))
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// isDuplicate reports whether d is a SPAN copy of prev: identical, or
// with the TTL one lower and the IPv4 header checksum updated, within
// 50 µs.
func isDuplicate(prev, d *decoded, ttlChange bool) bool {
	if prev == nil || d.us-prev.us > 50 || d.us <= prev.us || len(prev.data) != len(d.data) {
		return false
	}
	if !ttlChange {
		return bytes.Equal(prev.data, d.data)
	}
	if d.ttl != prev.ttl-1 {
		return false
	}
	a, b := bytes.Clone(prev.data), bytes.Clone(d.data)
	ttlOff := d.ipHeader + 8
	if d.key.Src.Is6() {
		ttlOff = d.ipHeader + 7
	} else {
		clear(a[d.ipHeader+10 : d.ipHeader+12])
		clear(b[d.ipHeader+10 : d.ipHeader+12])
	}
	a[ttlOff], b[ttlOff] = 0, 0
	return bytes.Equal(a, b)
}

// The trace TestCheckFile checks, and how its duplicates were made; paths
// are relative to this package's folder.
var (
	checkTrace     = flag.String("pcap", "../pcaps/sample.pcap", "TestCheckFile: a pcap written by flowmon gen, its .truth.jsonl beside it")
	checkTTLChange = flag.Bool("dup-ttl-change", false, "TestCheckFile: the pcap was generated with --dup-ttl-change")
)

// TestCheckFile checks a trace written by `flowmon gen` against its truth
// sidecar (lengths, checksums, counts, duplicates, Zeek's conn_state). It
// is long (internal/testutil/testgate):
//
//	FLOWMON_LONG=1 go test ./gen -run TestCheckFile [-args -pcap /abs/x.pcap [-dup-ttl-change]]
func TestCheckFile(t *testing.T) {
	testgate.Long(t)
	path := *checkTrace
	pcap, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := os.ReadFile(strings.TrimSuffix(path, ".pcap") + ".truth.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(pcap) < pcapHeaderLen {
		t.Fatal("short pcap")
	}
	o := Options{Link: LinkType(binary.LittleEndian.Uint32(pcap[20:])), Snaplen: int(binary.LittleEndian.Uint32(pcap[16:]))}
	if o.Snaplen == pcapSnapDef {
		o.Snaplen = 0
	}
	recs, err := ReadTruth(bytes.NewReader(truth))
	if err != nil {
		t.Fatal(err)
	}
	pkts := decodeTrace(t, pcap, o)
	st := Stats{Packets: int64(len(pkts))}
	for _, r := range recs {
		st.Duplicates += r.DupPkts
		o.DupRate = 1 // expect duplicates only if the truth has some
	}
	st.Packets -= st.Duplicates
	if st.Duplicates == 0 {
		o.DupRate = 0
	}
	o.DupTTLChange = *checkTTLChange
	checkTruth(t, o, pkts, recs, st)
}
