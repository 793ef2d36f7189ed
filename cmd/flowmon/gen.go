package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flowmon/flowmon/gen"
)

func init() {
	commands["gen"] = command{
		summary: "write a deterministic synthetic pcap with a ground-truth sidecar",
		run:     runGen,
	}
}

func runGen(args []string, stdout, stderr io.Writer) error {
	def := gen.DefaultOptions()
	fs := newFlagSet("gen", "-o FILE [flags]", stderr,
		"\nWrites a deterministic synthetic trace to FILE (pcap) and its ground truth beside it.")
	out := fs.String("o", "", "write the pcap to `FILE` (required)")
	truthPath := fs.String("truth", "", "ground-truth JSON lines `file` (default: the pcap's name with .truth.jsonl)")
	flows := fs.Int("flows", def.Flows, "number of flows")
	packets := fs.Int64("packets", 0, "generate at least this many packets (not counting duplicates) instead of --flows")
	duration := fs.Duration("duration", def.Duration, "window over which flows start")
	seed := fs.Uint64("seed", def.Seed, "random seed: same options and seed give the same bytes")
	link := fs.String("link", "ethernet", "link type: ethernet or raw")
	snaplen := fs.Int("snaplen", 0, "truncate captured packets to this many bytes (0: whole packets)")
	mix := fs.String("mix", gen.DefaultMix.String(), "share of flows per scenario: normal, synflood, scan, heavy")
	dupRate := fs.Float64("dup-rate", 0, "probability that a packet is written twice, 1-50 µs apart (SPAN duplicates)")
	dupTTL := fs.Bool("dup-ttl-change", false, "give duplicates a TTL one lower, as if copied after a router")
	v6 := fs.Float64("ipv6-share", def.IPv6Share, "fraction of normal and heavy flows over IPv6 (floods and scans are IPv4)")
	udp := fs.Float64("udp-share", def.UDPShare, "fraction of normal flows over UDP")
	icmp := fs.Float64("icmp-share", def.ICMPShare, "fraction of normal flows that are ICMP echo")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageError(fs, "-o FILE is required")
	}
	if fs.NArg() > 0 {
		return usageError(fs, "takes no arguments (have %q)", fs.Args())
	}
	opt := def
	opt.Flows, opt.Duration, opt.Seed, opt.Snaplen = *flows, *duration, *seed, *snaplen
	opt.DupRate, opt.DupTTLChange = *dupRate, *dupTTL
	opt.IPv6Share, opt.UDPShare, opt.ICMPShare = *v6, *udp, *icmp
	if *packets > 0 {
		opt.Packets = *packets
		flowsSet := false
		fs.Visit(func(f *flag.Flag) { flowsSet = flowsSet || f.Name == "flows" })
		if flowsSet {
			return usageError(fs, "give --flows or --packets, not both")
		}
		opt.Flows = 0
	}
	var err error
	if opt.Link, err = gen.ParseLinkType(*link); err != nil {
		return usageError(fs, "--link: %v", err)
	}
	if opt.Mix, err = gen.ParseMix(*mix); err != nil {
		return usageError(fs, "--mix: %v", err)
	}
	if err := opt.Validate(); err != nil {
		return usageError(fs, "%v", err)
	}
	if *truthPath == "" {
		*truthPath = strings.TrimSuffix(*out, ".pcap") + ".truth.jsonl"
	}
	stats, err := genFiles(*out, *truthPath, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s: %v\n", *out, *truthPath, stats)
	return nil
}

func genFiles(pcapPath, truthPath string, opt gen.Options) (gen.Stats, error) {
	pf, err := os.Create(pcapPath)
	if err != nil {
		return gen.Stats{}, fmt.Errorf("create pcap: %w", err)
	}
	defer pf.Close()
	tf, err := os.Create(truthPath)
	if err != nil {
		return gen.Stats{}, fmt.Errorf("create truth: %w", err)
	}
	defer tf.Close()
	stats, err := gen.Generate(pf, tf, opt)
	if err != nil {
		return stats, err
	}
	if err := pf.Close(); err != nil {
		return stats, fmt.Errorf("close pcap: %w", err)
	}
	if err := tf.Close(); err != nil {
		return stats, fmt.Errorf("close truth: %w", err)
	}
	return stats, nil
}
