package rules

import (
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// BenchmarkShardPacket is the rules' own cost per packet, alone (the
// pipeline's figure is engine's BenchmarkPipelineRules): data packets of
// 100,000 flows, one in 16 opening its flow with a SYN; "default/flood" is
// a flood of spoofed SYNs (every packet a new flow from a random source to
// one server port).
func BenchmarkShardPacket(b *testing.B) {
	for _, name := range []string{"default", "default/flood", "HeavyHitter", "HeavyHitter/held", "SYNFlood", "TCPFlagAnomaly"} {
		b.Run(name, func(b *testing.B) {
			set, err := Default()
			if err != nil {
				b.Fatal(err)
			}
			if !strings.HasPrefix(name, "default") {
				f, _ := Parse("d", defaultRules)
				for gi := range f.Groups {
					var keep []Rule
					for _, r := range f.Groups[gi].Rules {
						if r.Alert == strings.TrimSuffix(name, "/held") {
							keep = append(keep, r)
						}
					}
					f.Groups[gi].Rules = keep
				}
				if set, err = Compile(f); err != nil {
					b.Fatal(err)
				}
			}
			eng := NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, alerts.NewWriterSink("discard", io.Discard, alerts.FormatJSON)))
			sh, err := eng.NewShard(Lookups{})
			if err != nil {
				b.Fatal(err)
			}
			flows := 100_000
			if strings.HasSuffix(name, "/held") {
				flows = 200 // each held after its first few hundred packets
			}
			pkts := make([]capture.Packet, 1<<16)
			evs := make([]acsm.Event, len(pkts))
			for i := range pkts {
				f := hashmix.Mix(uint64(i % flows))
				k := capture.Key{Src: netip.AddrFrom4([4]byte{10, byte(f), byte(f >> 8), byte(f >> 16)}), Dst: netip.AddrFrom4([4]byte{198, 18, 0, byte(f >> 24)}), SrcPort: uint16(f >> 32), DstPort: 443, Proto: capture.ProtoTCP}
				p := &pkts[i]
				p.Key, p.Hash, p.HasTCP, p.Flags, p.WireLen = k, f, true, capture.ACK|capture.PSH, 1500
				ev := &evs[i]
				ev.Key, ev.Hash, ev.Result, ev.State, ev.Prev = k, f, acsm.Found, acsm.S1, acsm.S1
				if name == "default/flood" {
					k = capture.Key{Src: netip.AddrFrom4([4]byte{byte(f), byte(f >> 8), byte(f >> 16), byte(f >> 24)}), Dst: netip.AddrFrom4([4]byte{198, 18, 0, 6}), SrcPort: uint16(f >> 32), DstPort: 80, Proto: capture.ProtoTCP}
					p.Key, ev.Key = k, k
				}
				if i%16 == 0 || name == "default/flood" {
					p.Flags, p.WireLen = capture.SYN, 60
					ev.New, ev.Result, ev.State, ev.Prev = true, acsm.Absent, acsm.S0, acsm.ConnUnknown
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				j := i & (len(pkts) - 1)
				pkts[j].Timestamp = t0.Add(time.Duration(i) * time.Microsecond)
				sh.Packet(&pkts[j], &evs[j])
			}
		})
	}
}
