package pipeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/testutil/cputime"
	"github.com/flowmon/flowmon/pipeline/hostpairs"
	"github.com/flowmon/flowmon/pipeline/watchlist"
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
				attachRules(&cfg, rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, alerts.NewWriterSink("discard", io.Discard, alerts.FormatJSON))))
			}
			pl, err := NewPipeline(cfg)
			if err != nil {
				b.Fatal(err)
			}
			feedBench(b, pl, pkts, span)
		})
	}
}

// feedBench times b.N packets through pl, pkts over and over, each pass
// shifted by span so that time keeps moving forward, and finishes pl.
func feedBench(b *testing.B, pl *Pipeline, pkts []capture.Packet, span time.Duration) {
	var p capture.Packet
	pass, i := 0, 0
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

// BenchmarkPipelineLookups measures what a watchlist check and the flow
// history cost the whole per-packet path (both run on new flows only):
// the pipeline with a rule set of one volume rule, against the same with
// a watchlist rule over a 10,000-prefix list and a novelty rule over a
// Cascade Filter history in a temp dir (every new flow's pair recorded),
// neither matching the trace: the lookups' cost, not the alerts'. Both
// allocate nothing per packet.
func BenchmarkPipelineLookups(b *testing.B) {
	pkts := decodedTrace(b, gen.Options{Flows: 20000, Seed: 3, Snaplen: 96, Duration: 20 * time.Second})
	span := pkts[len(pkts)-1].Timestamp.Sub(pkts[0].Timestamp) + time.Second
	const base = `groups:
  - name: b
    rules:
      - {alert: Heavy, kind: volume, track: by_flow, volume: {measure: bytes, above: 5000000, window: 60s}}
`
	const lookups = `      - {alert: Listed, kind: watchlist, track: by_dst, watchlist: {list: bad}}
      - {alert: NewPair, kind: novelty, track: by_pair, match: {dst: [192.0.2.0/24]}, novelty: {}}
`
	for _, with := range []bool{false, true} {
		name := "lookups=none"
		if with {
			name = "lookups=watchlist+history"
		}
		b.Run(name, func(b *testing.B) {
			src := base
			if with {
				src += lookups
			}
			f, err := rules.Parse("b.yaml", []byte(src))
			if err != nil {
				b.Fatal(err)
			}
			set, err := rules.Compile(f)
			if err != nil {
				b.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Workers = 1
			attachRules(&cfg, rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, alerts.NewWriterSink("discard", io.Discard, alerts.FormatJSON))))
			if with {
				dir := b.TempDir()
				var lines []string
				for i := range 10000 {
					lines = append(lines, fmt.Sprintf("100.%d.%d.0/24", 64+i/256, i%256))
				}
				os.WriteFile(dir+"/bad.txt", []byte(strings.Join(lines, "\n")), 0o644)
				l, _, _, err := watchlist.Open("bad", dir+"/bad.txt", dir+"/bad.wl", watchlist.DefaultOptions)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				wl, _ := watchlist.NewSet(l)
				cfg.Watchlists = wl
				h, err := hostpairs.Open(dir+"/history", hostpairs.DefaultOptions)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				cfg.HostPairs = h
			}
			pl, err := NewPipeline(cfg)
			if err != nil {
				b.Fatal(err)
			}
			feedBench(b, pl, pkts, span)
		})
	}
}
