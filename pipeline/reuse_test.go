package pipeline

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowmon/flowmon/record/connlog"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// pkt is one TCP packet of the test connection 10.1.0.1:40000 ->
// 10.1.0.2:80 (fromResp: the other way), at a time from the trace's start.
type pkt struct {
	at       time.Duration
	fromResp bool
	flags    string // S, A, F, R, P as tcpdump spells them
	seq, ack uint32
	data     int
}

// writeTrace writes the packets as an Ethernet pcap, checksums filled in.
func writeTrace(t *testing.T, pkts []pkt) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "reuse.pcap")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	a, b := net.IP{10, 1, 0, 1}, net.IP{10, 1, 0, 2}
	for _, p := range pkts {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: a, DstIP: b}
		tcp := &layers.TCP{SrcPort: 40000, DstPort: 80, Seq: p.seq, Ack: p.ack, Window: 512}
		if p.fromResp {
			ip.SrcIP, ip.DstIP = b, a
			tcp.SrcPort, tcp.DstPort = 80, 40000
		}
		for _, c := range p.flags {
			switch c {
			case 'S':
				tcp.SYN = true
			case 'A':
				tcp.ACK = true
			case 'F':
				tcp.FIN = true
			case 'R':
				tcp.RST = true
			case 'P':
				tcp.PSH = true
			}
		}
		tcp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{0, 1, 2, 3, 4, 5}, DstMAC: net.HardwareAddr{0, 1, 2, 3, 4, 6}, EthernetType: layers.EthernetTypeIPv4}
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			eth, ip, tcp, gopacket.Payload(make([]byte, p.data))); err != nil {
			t.Fatal(err)
		}
		d := buf.Bytes()
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(p.at), CaptureLength: len(d), Length: len(d)}
		if err := w.WritePacket(ci, d); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// TestConnectionReuse checks that a 5-tuple is split into connections
// where Zeek splits it, with every ACSM backend (each keys flows by hash
// alone, so the new connection is a new flow to it): a
// SYN once a side has closed or reset starts a new connection (a new uid,
// its own record, the old one written), and so does any packet once the
// closed connection is past Zeek's close delay (5 s); a packet before
// that belongs to the old connection.
func TestConnectionReuse(t *testing.T) {
	handshake := []pkt{{0, false, "S", 100, 0, 0}, {time.Millisecond, true, "SA", 900, 101, 0}, {2 * time.Millisecond, false, "A", 101, 901, 0}}
	cases := []struct {
		name  string
		after []pkt
		want  []string // conn_state history of each record
	}{
		{"SYN after the originator's FIN (half closed)", []pkt{
			{10 * time.Millisecond, false, "FA", 101, 901, 0},
			{20 * time.Millisecond, false, "S", 7000, 0, 0}, {21 * time.Millisecond, true, "SA", 8000, 7001, 0}},
			[]string{"S2 ShAF", "S1 Sh"}},
		{"SYN after a RST", []pkt{
			{10 * time.Millisecond, true, "R", 901, 0, 0},
			{20 * time.Millisecond, false, "S", 7000, 0, 0}},
			[]string{"RSTR ShAr", "S0 S"}},
		{"data 16 s after a RST", []pkt{
			{10 * time.Millisecond, false, "R", 101, 0, 0},
			{16 * time.Second, false, "PA", 101, 901, 10}, {16*time.Second + time.Millisecond, true, "R", 901, 0, 0}},
			[]string{"RSTO ShAR", "RSTRH Dr"}},
		{"an ACK 1 s after both FINs", []pkt{
			{10 * time.Millisecond, false, "FA", 101, 901, 0}, {11 * time.Millisecond, true, "FA", 901, 102, 0},
			{time.Second, false, "A", 102, 902, 0}},
			[]string{"SF ShAFf"}},
		{"a retransmitted SYN on an open connection", []pkt{
			{10 * time.Millisecond, false, "S", 100, 0, 0}},
			[]string{"S1 ShA"}},
	}
	for _, backend := range []string{"dleft", "exact", "kbf", "sbf", "fcf"} {
		for _, c := range cases {
			path := writeTrace(t, append(append([]pkt{}, handshake...), c.after...))
			s := DefaultSettings()
			s.Backend = backend
			cfg, err := s.Config()
			if err != nil {
				t.Fatal(err)
			}
			recs := replaySettings(t, path, cfg)
			var got []string
			uids := map[string]bool{}
			for _, r := range recs {
				got = append(got, r.ConnState+" "+r.History)
				uids[r.UID] = true
			}
			if len(got) != len(c.want) || len(uids) != len(recs) {
				t.Errorf("%s, %s: records %q (%d uids), want %q", backend, c.name, got, len(uids), c.want)
				continue
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("%s, %s: record %d is %q, want %q", backend, c.name, i, got[i], c.want[i])
				}
			}
		}
	}
}

func replaySettings(t *testing.T, path string, cfg Config) []connlog.Record {
	t.Helper()
	var log bytes.Buffer
	cfg.Sinks = connLog(&log)
	if _, err := Replay(t.Context(), []string{path}, ReplayOptions{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	return readJSONLines[connlog.Record](t, log.Bytes())
}
