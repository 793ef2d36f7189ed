package engine

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/cputime"
	"github.com/flowmon/flowmon/internal/gen"
	"github.com/flowmon/flowmon/rules"
)

// BenchmarkPipelineRules measures what rule evaluation costs the whole
// per-packet path: one worker's pipeline (dedup, ACSM, flow counts, flow
// table) on a generated trace of every scenario, decoded into memory
// first, without rules and with the default rules. The trace is fed
// again and again with its times shifted on each pass, so windows roll
// and flows come and go as in a long capture. Compare the two with
// benchstat; both allocate nothing per packet.
func BenchmarkPipelineRules(b *testing.B) {
	pkts := decodedTrace(b, gen.Options{Flows: 20000, Mix: gen.Mix{Normal: 0.97, SYNFlood: 0.01, Scan: 0.01, Heavy: 0.01}, Seed: 3, Snaplen: 96, Duration: 20 * time.Second})
	span := pkts[len(pkts)-1].Timestamp.Sub(pkts[0].Timestamp) + time.Second
	for _, withRules := range []bool{false, true} {
		name := "rules=none"
		if withRules {
			name = "rules=default"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Workers = 1
			if withRules {
				set, err := rules.Default()
				if f := os.Getenv("FLOWMON_BENCH_RULES"); f != "" {
					set, err = rules.Load(f)
				}
				if err != nil {
					b.Fatal(err)
				}
				cfg.Rules = rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, alerts.NewWriterSink("discard", io.Discard, alerts.FormatJSON)))
			}
			pl, err := NewPipeline(cfg)
			if err != nil {
				b.Fatal(err)
			}
			var p capture.Packet
			pass := 0
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			m := cputime.Start()
			for range b.N {
				p = pkts[i]
				p.Timestamp = p.Timestamp.Add(time.Duration(pass) * span)
				pl.Packet(&p)
				if i++; i == len(pkts) {
					i, pass = 0, pass+1
				}
			}
			m.Report(b)
			b.StopTimer()
			var s Summary
			if err := pl.Finish(&s, p.Timestamp); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// decodedTrace generates a trace and decodes all of it into memory.
func decodedTrace(b *testing.B, o gen.Options) []capture.Packet {
	b.Helper()
	g, err := gen.New(o)
	if err != nil {
		b.Fatal(err)
	}
	name := b.TempDir() + "/g.pcap"
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.WriteTo(f, io.Discard); err != nil {
		b.Fatal(err)
	}
	f.Close()
	src, err := capture.OpenFiles(name)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	var out []capture.Packet
	for {
		var p capture.Packet
		err := src.Next(&p)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			b.Fatal(err)
		}
		p.Payload = append([]byte(nil), p.Payload...) // the reader reuses its buffer
		out = append(out, p)
	}
}
