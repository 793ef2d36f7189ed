package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/agent"
	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/defrag"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/ipfix"
	"github.com/flowmon/flowmon/record/otlp"
	"github.com/flowmon/flowmon/report"
)

func init() {
	commands["replay"] = command{
		summary: "replay pcap/pcapng files (.gz, - for stdin) through the pipeline and summarise",
		run:     runReplay,
	}
}

// replayFlags is everything `flowmon replay` is told: the pipeline's
// settings (pipeline.Settings, validated by the engine, as the agent's
// config file will be) and what this command does around them.
type replayFlags struct {
	settings   pipeline.Settings
	json       bool
	noProgress bool
	flowsOut   string
	cpuProfile string
	listen     string
	filter     *capture.Filter // --filter, compiled
	web        config.Web
	linger     bool
	rules      string
	alertsOut  string
	alerting   string
	watchlists watchlistFlags
	history    config.History
	ipfix      ipfix.Options
	otlp       otlp.Options
	report     string
	top        int
	logFormat  string
	files      []string
}

func parseReplayFlags(args []string, stderr io.Writer) (*replayFlags, error) {
	f := &replayFlags{settings: pipeline.DefaultSettings()}
	s := &f.settings
	fs := newFlagSet("replay", "[flags] FILE...", stderr,
		"\nReplays the files in order through the pipeline (dedup, ACSM, flow counts) and prints a summary.",
		"Exit status 3: the replay ended, but an output (the flow log, a record sink such as an IPFIX or OTLP collector) lost what the log names.")
	fs.BoolVar(&f.json, "json", false, "print the summary as one JSON object")
	fs.BoolVar(&f.noProgress, "no-progress", false, "never draw the progress bar")
	fs.StringVar(&f.logFormat, "log-format", config.LogText, logFormatUsage)
	fs.StringVar(&s.Profile, "profile", "", "defaults of another tool, below the flags given: "+pipeline.ProfileNames+" (Zeek's: --no-dedup, --verify-checksums, its timeouts; --verify-checksums=false is its -C)")
	fs.StringVar(&s.Backend, "backend", s.Backend, "ACSM backend: "+acsm.BackendNames())
	fs.StringVar(&s.KBFEncoder, "kbf-encoder", s.KBFEncoder, "kbf backend's value codes: sidon (fast decode) or greedy (the paper's Algorithm 1)")
	fs.StringVar(&s.KBFLayout, "kbf-layout", s.KBFLayout, "kbf backend's cell placement: standard (the paper's) or blocked (a flow's cells in three cache lines; fewer cache misses, more errors when the ACSM is overloaded)")
	fs.StringVar(&s.Machine, "machine", s.Machine, "state machine: zeek (conn_state) or flags (the paper's last-flags machine)")
	fs.IntVar(&s.Capacity, "capacity", s.Capacity, fmt.Sprintf("expected concurrent flows, 1..%d (sizes the ACSM and the flow counter)", pipeline.MaxCapacity))
	fs.Float64Var(&s.P, "p", s.P, "target error rate of the ACSM, above 0 and below 1")
	fs.DurationVar(&s.DedupWindow, "dedup-window", s.DedupWindow, fmt.Sprintf("how long a packet is remembered to drop its duplicates, up to %v", pipeline.MaxDedupWindow))
	fs.StringVar(&s.Dedup, "dedup", s.Dedup, "how the dedup stage remembers packets: table (a table of their fingerprints, the default) or fbf (the paper's Forgetful Bloom Filter, slower)")
	fs.BoolVar(&s.NoDedup, "no-dedup", false, "count duplicate packets instead of dropping them")
	fs.BoolVar(&s.VerifyChecksums, "verify-checksums", false, "skip packets whose IPv4 header, TCP, UDP or ICMP checksum is wrong, as Zeek does without -C (off: a host's own packets carry checksums its NIC fills in later)")
	fs.IntVar(&s.CommunityIDSeed, "community-id-seed", 0, "seed of the flow records' Community IDs, 0 to 65535 (0: the spec's default)")
	fs.DurationVar(&s.ActiveTimeout, "active-timeout", 0, fmt.Sprintf("write an interim record of a flow open longer than this, and again each time it passes (whole seconds up to %v; 0: off)", pipeline.MaxActiveTimeout))
	fs.DurationVar(&s.RetransWindow, "retrans-window", 0, fmt.Sprintf("also mark TCP retransmissions seen within this window, up to %v (0: off)", pipeline.MaxRetransWindow))
	fs.StringVar(&s.FlowState, "flow-state", s.FlowState, "where flows are kept: user (the default) or kernel (each Ethernet frame through the eBPF flow state with BPF_PROG_TEST_RUN, which keeps max-flows cells; root; tunnels and fragments stay in user space)")
	fs.IntVar(&s.MaxFlows, "max-flows", s.MaxFlows, fmt.Sprintf("most open flows the replay's flow table holds, 1..%d (records, counts); past it idle flows time out early", pipeline.MaxMaxFlows))
	fs.IntVar(&s.Workers, "workers", s.Workers, fmt.Sprintf("goroutines the per-flow stages are sharded over by flow hash, 1..%d (the flow log's order depends on it, and is the same every run for a given count)", pipeline.MaxWorkers))
	fs.BoolVar(&s.Defrag, "defrag", s.Defrag, "reassemble IP fragments into their datagrams, each one packet (--defrag=false: each fragment a packet, later ones without ports)")
	fs.IntVar(&s.DefragMaxDatagrams, "defrag-max-datagrams", s.DefragMaxDatagrams, fmt.Sprintf("most datagrams in reassembly at once, 1..%d; past it the oldest is dropped (counted)", defrag.MaxMaxDatagrams))
	fs.IntVar(&s.DefragMaxBytes, "defrag-max-bytes", s.DefragMaxBytes, fmt.Sprintf("most fragment bytes held for reassembly, %d..%d; past it the oldest datagrams are dropped (counted)", defrag.MinMaxBytes, defrag.MaxMaxBytes))
	fs.DurationVar(&s.DefragTimeout, "defrag-timeout", s.DefragTimeout, fmt.Sprintf("packet time a datagram has from its first fragment to be whole, up to %v", defrag.MaxTimeout))
	fs.StringVar(&s.DefragPolicy, "defrag-policy", s.DefragPolicy, "whose bytes overlapping fragments keep: "+defrag.PolicyNames+" (first: Zeek's, Windows'; last: Cisco IOS's)")
	fs.BoolVar(&s.DecodeOnly, "decode-only", false, "only read, decode and count packets by type (no flows, no stages)")
	fs.StringVar(&s.VXLANPorts, "vxlan-ports", s.VXLANPorts, "UDP `PORTS` whose VXLAN tunnels are taken off (comma-separated; none: off)")
	fs.StringVar(&s.VXLANGPEPorts, "vxlan-gpe-ports", s.VXLANGPEPorts, "UDP `PORTS` whose VXLAN-GPE tunnels are taken off (none: off, as Zeek, which does not decode VXLAN-GPE)")
	fs.StringVar(&s.GenevePorts, "geneve-ports", s.GenevePorts, "UDP `PORTS` whose Geneve tunnels are taken off (none: off)")
	fs.StringVar(&s.GTPPorts, "gtp-ports", s.GTPPorts, "UDP `PORTS` whose GTPv1 tunnels are taken off (none: off)")
	fs.StringVar(&s.TeredoPorts, "teredo-ports", s.TeredoPorts, "UDP `PORTS` whose Teredo tunnels are taken off (none: off)")
	fs.StringVar(&s.AYIYAPorts, "ayiya-ports", s.AYIYAPorts, "UDP `PORTS` whose AYIYA tunnels are taken off (none: off)")
	fs.StringVar(&s.GREOverUDPPorts, "gre-over-udp-ports", s.GREOverUDPPorts, "UDP `PORTS` whose GRE tunnels are taken off (none: off)")
	fs.BoolVar(&s.NoTunnelDetect, "no-tunnel-detect", false, "look for Teredo and AYIYA on their ports only (Zeek also looks on any UDP port)")
	fs.IntVar(&s.MaxTunnelDepth, "max-tunnel-depth", s.MaxTunnelDepth, fmt.Sprintf("most tunnels nested in a packet, 1..%d; a packet deeper is skipped (tunnel_depth)", capture.MaxMaxTunnelDepth))
	fs.StringVar(&f.flowsOut, "flows-out", "", "write one JSON line per flow (Zeek conn.log fields) to `FILE` (- for stdout)")
	fs.StringVar(&f.report, "report", "", "write a report of the replay to `FILE`.html: charts over time, tops, the summary (one self-contained page)")
	fs.IntVar(&f.top, "top", 0, "print the top `N` flows, originators, responders and responder ports by bytes and by packets after the summary")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the replay to `FILE`")
	filterProg := fs.String("filter", "", "replay only the frames this classic BPF `program` keeps: tcpdump -ddd output (tcpdump -r FILE -ddd EXPR compiles it for FILE's link type), or with -tags pcap a tcpdump expression (for Ethernet)")
	fs.StringVar(&f.listen, "listen", "", "serve /metrics and /api/v1/ccf on this `host:port` during the replay")
	fs.StringVar(&f.web.ConfigFile, "web.config.file", "", "with --listen: Prometheus's web config `FILE` (exporter-toolkit): TLS and basic auth; needed beyond loopback")
	fs.BoolVar(&f.web.EnableLifecycle, "web.enable-lifecycle", false, "with --listen: turn on POST /-/reload")
	fs.BoolVar(&f.linger, "linger", false, "with --listen: keep serving after the replay until interrupted")
	fs.StringVar(&f.rules, "rules", "", "detection rules `FILE` (YAML; default: the embedded rules, flowmon rules show; none: no rules); reloaded on SIGHUP, on change and on POST /-/reload (with --web.enable-lifecycle)")
	fs.StringVar(&f.alertsOut, "alerts-out", "", "write alerts as JSON lines to `FILE` (- for stdout) instead of readable lines on stderr")
	fs.StringVar(&f.alerting, "alerting", "", "alert sinks `FILE` (YAML: stdout, file, webhook, alertmanager), besides stderr or --alerts-out")
	fs.Var(&f.watchlists, "watchlist", watchlistUsage)
	historyFlags(fs, &f.history)
	ipfixFlags(fs, &f.ipfix)
	otlpFlags(fs, &f.otlp)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	f.files = fs.Args()
	if len(f.files) == 0 {
		return nil, usageError(fs, "no capture file given (- reads standard input)")
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	s.ApplyProfile(func(n string) bool { return given[n] })
	if err := s.Validate(func(n string) bool { return given[n] }); err != nil {
		return nil, settingsError(fs, err)
	}
	switch {
	case f.linger && f.listen == "":
		return nil, usageError(fs, "--linger does nothing without --listen")
	case (f.web.ConfigFile != "" || f.web.EnableLifecycle) && f.listen == "":
		return nil, usageError(fs, "--web.config.file and --web.enable-lifecycle do nothing without --listen")
	case f.flowsOut == "-" && f.json:
		return nil, usageError(fs, "--flows-out - and --json both write to stdout; write the flows to a file")
	case f.flowsOut != "" && s.DecodeOnly:
		return nil, usageError(fs, "--flows-out does nothing with --decode-only (no flows are tracked)")
	case f.listen != "" && s.DecodeOnly:
		return nil, usageError(fs, "--listen does nothing with --decode-only (no stage has metrics)")
	case f.alertsOut == "-" && (f.json || f.flowsOut == "-"):
		return nil, usageError(fs, "--alerts-out - shares stdout with the summary or the flows; write the alerts to a file")
	case s.DecodeOnly && f.rules != "" && f.rules != "none":
		return nil, usageError(fs, "--rules does nothing with --decode-only (no flow state to evaluate)")
	case (f.report != "" || f.top != 0) && s.DecodeOnly:
		return nil, usageError(fs, "--report and --top do nothing with --decode-only (no flows are tracked)")
	case f.top < 0:
		return nil, usageError(fs, "--top %d: must be 0 (off) or more", f.top)
	case f.top > 0 && f.json:
		return nil, usageError(fs, "--top prints tables beside the text summary, not the JSON one; the report (--report) holds them too")
	case s.DecodeOnly && len(f.ipfix.Collectors) > 0:
		return nil, usageError(fs, "--ipfix does nothing with --decode-only (no flows are tracked)")
	case s.DecodeOnly && f.otlp.Endpoint != "":
		return nil, usageError(fs, "--otlp does nothing with --decode-only (no flows are tracked)")
	}
	if err := checkIPFIXFlags(fs, &f.ipfix, given); err != nil {
		return nil, err
	}
	if err := checkOTLPFlags(fs, &f.otlp, given); err != nil {
		return nil, err
	}
	if f.report != "" {
		// Written after the replay: a folder that is not there should not
		// cost the replay first.
		if st, err := os.Stat(filepath.Dir(f.report)); err != nil || !st.IsDir() {
			return nil, usageError(fs, "--report %s: its folder is not there", f.report)
		}
	}
	if *filterProg != "" {
		var err error
		if f.filter, err = agent.ReplayFilter(*filterProg); err != nil {
			return nil, usageError(fs, "--filter: %v", err)
		}
	}
	if f.listen != "" {
		// Before anything is replayed, as run checks it: a setting.
		if err := f.web.Check(f.listen); err != nil {
			return nil, usageError(fs, "%v", err)
		}
	}
	if f.logFormat != config.LogText && f.logFormat != config.LogJSON {
		return nil, usageError(fs, "--log-format %q must be %s or %s", f.logFormat, config.LogText, config.LogJSON)
	}
	if s.DecodeOnly {
		f.rules = "none"
	}
	return f, nil
}

// settingsError prints each of Validate's errors with its flag's name.
func settingsError(fs *flag.FlagSet, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var se *pipeline.SettingError
		// usageError prints; errUsage is returned below.
		if errors.As(e, &se) {
			_ = usageError(fs, "%s", se.Spell("--"))
		} else {
			_ = usageError(fs, "%v", e)
		}
	}
	return errUsage
}

func runReplay(args []string, stdout, stderr io.Writer) (rerr error) {
	f, err := parseReplayFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg, err := f.settings.Config()
	if err != nil {
		return err
	}
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	// Alerts and log lines written while the progress bar is drawn erase
	// it first (statusLine.around).
	var line *statusLine
	if !f.noProgress {
		line = newStatusLine(stderr)
		stdout, stderr = line.around(stdout), line.around(stderr)
	}
	log := newLogger(stderr, f.logFormat)
	// The alerts on stderr are readable lines, or in JSON log records
	// among the others.
	alertsErr := stderr
	if f.logFormat == config.LogJSON {
		alertsErr = nil
	}
	var ipfixOpt *ipfix.Options
	if len(f.ipfix.Collectors) > 0 {
		ipfixOpt = &f.ipfix
	}
	var otlpOpt *otlp.Options
	if f.otlp.Endpoint != "" {
		otlpOpt = &f.otlp
	}
	var col *report.Collector
	var obs agent.Observers
	if f.report != "" || f.top > 0 {
		col = report.NewCollector(f.top)
		obs = agent.Observers{Consumers: []pipeline.NewConsumer{col.Consumer()}, Sinks: []record.Named{col.Sink()},
			AlertSinks: []alerts.Sink{col.AlertSink()}}
	}
	r, err := agent.OpenReplay(agent.ReplayOptions{Pipeline: cfg, FlowsOut: f.flowsOut, IPFIX: ipfixOpt, OTLP: otlpOpt,
		Rules: f.rules, AlertsOut: f.alertsOut, Alerting: f.alerting,
		Watchlists: f.watchlists.lists(), History: f.history, Listen: f.listen, Web: f.web, Filter: f.filter,
		Observers: obs, Stdout: stdout, Stderr: alertsErr, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		closeInto(r.Close, &rerr)
		if agent.OnlyUndelivered(rerr) {
			rerr = exitWith(3, rerr) // as run's: the outputs lost what the log names
		}
	}()
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	if f.linger {
		defer func() {
			if ctx.Err() == nil {
				log.Info("replay done; serving until interrupted")
				<-ctx.Done()
			}
		}()
	}
	var prog *pipeline.Progress
	var stopProgress func()
	if line != nil {
		prog = &pipeline.Progress{}
		stopProgress = drawProgress(line, prog)
	}
	s, err := r.Run(ctx, f.files, prog)
	if stopProgress != nil {
		stopProgress()
	}
	if s == nil {
		return err
	}
	var res *report.Result
	if col != nil {
		res = col.Result()
	}
	if f.report != "" {
		page := &report.Page{Command: "flowmon replay " + strings.Join(args, " "), Settings: &f.settings, Summary: s, Result: res}
		if werr := report.WriteFile(f.report, page); werr != nil {
			return werr
		}
	}
	if f.json {
		if encErr := json.NewEncoder(stdout).Encode(s); encErr != nil {
			return encErr
		}
	} else {
		printSummary(stdout, s)
	}
	if f.top > 0 {
		fmt.Fprintln(stdout)
		if terr := report.WriteTables(stdout, res.Tops.Tables(f.top)); terr != nil {
			return terr
		}
	}
	for _, w := range s.Warnings {
		log.Warn("summary warning", "warning", w)
	}
	if errors.Is(err, pipeline.ErrStopped) {
		return exitWith(130, err) // as a shell reports a command ended by SIGINT
	}
	return err
}

// startCPUProfile profiles the process into file until stop is called.
func startCPUProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
