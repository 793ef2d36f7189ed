package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/flowmon/flowmon/bpf/source"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/internal/rotfile"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record/ipfix"
	"github.com/flowmon/flowmon/record/otlp"
)

// Config is the agent's configuration: plain data, from Parse, Load or
// Default, changed by Set. The comment of each field names its key in
// the file.
type Config struct {
	Interface string            // interface: the interface to capture on; "" until given (flowmon run --iface)
	Source    string            // source: SourceAFPacket (default), SourcePcap, SourceXDP or SourceTC
	AFPacket  AFPacket          // afpacket: the AF_PACKET ring, when Source is afpacket
	Pcap      Pcap              // pcap: the libpcap handle, when Source is pcap
	EBPF      EBPF              // ebpf: the eBPF program's rings, sampling and pre-filter, when Source is xdp or tc
	Pipeline  pipeline.Settings // pipeline: the keys of pipeline.Settings, checked by its Validate
	// Rules is the rules file (rules:): a path, RulesNone for no rules,
	// or "" for the embedded default rules.
	Rules string
	// Alerting is the alert sinks file (alerting:), read by
	// alerts.ParseConfig; "" for none.
	Alerting   string
	Watchlists Watchlists // watchlists: the lists watchlist rules ask about
	History    History    // history: the flow history novelty rules ask
	// Listen is the host:port of the HTTP server (listen:): /metrics,
	// the API and /-/reload. An address other than loopback needs TLS or
	// basic auth from Web.ConfigFile (CheckWeb).
	Listen   string
	Web      Web      // web: how the HTTP server is secured, as Prometheus's --web.* flags
	Snapshot Snapshot // snapshot: the flow state saved at exit and read at start
	// FlowLog is the JSON-lines flow log (flow-log:): a path, "-" for
	// standard output, "" for none.
	FlowLog string
	// FlowLogRotation is when the flow log's file rotates
	// (flow-log-rotation:).
	FlowLogRotation Rotation
	Export          Export // export: where else the flow records go
	// User is who the agent becomes once its sockets are open (user:): a
	// user name or a numeric uid; "" stays as started.
	User string
	// StopTimeout bounds the draining and the snapshot at SIGTERM
	// (stop-timeout:).
	StopTimeout time.Duration
	Health      Health // health: what /healthz holds against the agent
	// LogFormat is how the agent's log lines on stderr are written
	// (log-format:): "text" (slog's key=value) or "json" (one object a
	// line).
	LogFormat string
}

// The log formats LogFormat takes.
const (
	LogText = "text"
	LogJSON = "json"
)

// AFPacket is the TPACKET_V3 ring of an AF_PACKET socket: BlockCount
// blocks of BlockSize bytes, which the kernel hands over when full or
// after BlockTimeout. Its settings are afpacket.Config's, checked by its
// Validate against its bounds (afpacket.MinBlockSize, ...).
type AFPacket struct {
	BlockSize    int           // block-size: bytes, a power of two and a whole number of pages
	BlockCount   int           // block-count
	FrameSize    int           // frame-size: bytes, a multiple of 16, at most BlockSize
	BlockTimeout time.Duration // block-timeout: how long a block may wait part full
	Fanout       string        // fanout: how the workers' sockets share packets: afpacket.FanoutHash, FanoutCPU or FanoutLB
	Promisc      bool          // promisc: promiscuous mode
	Filter       string        // filter: a tcpdump expression, or tcpdump -ddd output (IsBPF, capture.ParseBPF); "" for none
}

// Pcap is a libpcap capture handle.
type Pcap struct {
	Snaplen int           // snaplen: bytes kept of each packet
	Promisc bool          // promisc: promiscuous mode
	Filter  string        // filter: as AFPacket.Filter
	Timeout time.Duration // timeout: libpcap's read timeout
}

// EBPF is the eBPF capture (bpf/source's source.Config): its settings
// are checked by its Validate against its bounds.
type EBPF struct {
	XDPMode     string        // xdp-mode: source.XDPAuto, XDPDriver or XDPGeneric
	TCMode      string        // tc-mode: source.TCAuto, TCX or TCClsact
	RingSize    int           // ring-size: bytes of each worker's ring buffer, a power of two
	PollTimeout time.Duration // poll-timeout: how long a worker waits for records
	Sample      int           // sample: keep 1 flow in this many; 1 keeps every flow
	// CIDRs and Ports are the pre-filter, comma-separated (cidrs:
	// "10.0.0.0/8, 2001:db8::/32"; ports: "53, 443"): a packet is kept
	// only with an address in a prefix, and only with a port in the list;
	// "" leaves the test out.
	CIDRs string
	Ports string
}

// capture returns the capture's settings for iface at hook, and what is
// wrong with the sample, the prefixes and the ports, keyed as the file
// names them.
func (e EBPF) capture(iface, hook string) (source.Config, []problem) {
	c := source.Config{Iface: iface, Hook: hook, XDPMode: e.XDPMode, TCMode: e.TCMode, RingSize: e.RingSize,
		PollTimeout: e.PollTimeout, Sample: uint32(max(e.Sample, 0))}
	var ps []problem
	if e.Sample < 1 || e.Sample > 1<<31 {
		ps = append(ps, problem{key: "ebpf.sample", msg: fmt.Sprintf("%d must be from 1 (every flow) to %d", e.Sample, 1<<31)})
	}
	for _, f := range splitList(e.CIDRs) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			if a, aerr := netip.ParseAddr(f); aerr == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			} else {
				ps = append(ps, problem{key: "ebpf.cidrs", msg: fmt.Sprintf("%q is not an address or a CIDR prefix", f)})
				continue
			}
		}
		c.Prefixes = append(c.Prefixes, p)
	}
	for _, f := range splitList(e.Ports) {
		n, err := strconv.ParseUint(f, 10, 16)
		if err != nil {
			ps = append(ps, problem{key: "ebpf.ports", msg: fmt.Sprintf("%q is not a port (0 to 65535)", f)})
			continue
		}
		c.Ports = append(c.Ports, uint16(n))
	}
	return c, ps
}

// EBPFCapture returns the eBPF capture's settings for c's interface and
// source (xdp or tc); the error, each a *conferr.Error, joined, when the ebpf
// section's prefixes, ports or sample do not read (Validate says so too).
func (c *Config) EBPFCapture() (source.Config, error) {
	ec, ps := c.EBPF.capture(c.Interface, c.Source)
	var errs []error
	for _, p := range ps {
		errs = append(errs, invalid(p.key, p.msg))
	}
	return ec, errors.Join(errs...)
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// Health is what /healthz holds against the agent beside its failures.
type Health struct {
	// MaxDropShare is the share of the packets the kernel may drop (the
	// capture rings full) over the last minute before /healthz fails
	// (max-drop-share:); 1 never fails.
	MaxDropShare float64
}

// Snapshot is where the flow state is saved at exit and read at start.
type Snapshot struct {
	Path   string        // path: "" for no snapshot
	MaxAge time.Duration // max-age: an older snapshot is refused as stale
	// Interval is how often it is also written while the agent runs
	// (interval:), so that a crash loses at most this much of the state;
	// 0 writes it only at the stop.
	Interval time.Duration
}

// Watchlists are the lists watchlist rules ask about (pipeline/watchlist)
// and where their filters persist.
type Watchlists struct {
	// Dir is where each list's filter persists, DIR/NAME.wl, reopened at
	// the next start without rebuilding (dir:); "" keeps them in memory.
	Dir string
	// Lists are the lists (lists:, each {name, file}), in the file's
	// order; a --watchlist NAME=FILE flag sets NAME's file.
	Lists []Watchlist
}

// A Watchlist is one list: the name watchlist rules and the API give it
// (watchlist.CheckName) and its text file, one address or CIDR prefix a
// line.
type Watchlist struct {
	Name string // name:
	File string // file: a path, from the config file's directory
}

// Web is how the HTTP server is secured, as Prometheus secures its own:
// the same web config file, and the same switch for the endpoints that
// change the agent.
type Web struct {
	// ConfigFile is a web config file of Prometheus's exporter-toolkit
	// (config-file:, --web.config.file): TLS (tls_server_config) and
	// basic auth (basic_auth_users, bcrypt hashes); "" serves plain HTTP
	// to anyone. The server reads it again at each connection and
	// request, so a renewed certificate needs no restart.
	ConfigFile string
	// EnableLifecycle turns on the endpoints that change the running
	// agent (enable-lifecycle:, --web.enable-lifecycle): POST /-/reload
	// and the watchlists' POST. Off, they answer 403; SIGHUP still
	// reloads, as it needs a signal, so local privilege.
	EnableLifecycle bool
}

// History is the flow history (pipeline/hostpairs): every host pair seen,
// in a Cascade Filter under a directory.
type History struct {
	Dir     string        // dir: "" for no history (novelty rules never fire)
	Horizon time.Duration // horizon: how long a pair seen is remembered; 0 for ever
	RAM     int           // ram: bytes of RAM for the filter's first level, a size
}

// Rotation is when a log file rotates (internal/rotfile): it moves to
// FILE.1, FILE.1 to FILE.2, ..., keeping MaxFiles, and a new FILE starts.
type Rotation struct {
	MaxSize  int           // max-size: bytes, a size; past it the file rotates; 0: no limit
	MaxAge   time.Duration // max-age: how long a file is written to; 0: no limit
	MaxFiles int           // max-files: rotated files kept
}

// Options are the rotation's rotfile options.
func (r Rotation) Options() rotfile.Options {
	return rotfile.Options{MaxSize: int64(r.MaxSize), MaxAge: r.MaxAge, MaxFiles: r.MaxFiles}
}

// Export is where the flow records go besides the flow log.
type Export struct {
	IPFIX IPFIX // ipfix: IPFIX collectors (record/ipfix)
	OTLP  OTLP  // otlp: an OpenTelemetry collector (record/otlp)
}

// OTLP is the OTLP exporter's settings (otlp.Options); no endpoint is no
// export.
type OTLP struct {
	Endpoint           string        // endpoint: the collector's URL, http(s)://HOST:PORT
	Protocol           string        // protocol: http or grpc
	HeadersFile        string        // headers-file: "Name: value" lines sent with every request (a token)
	CAFile             string        // ca-file: the CAs (PEM) an https endpoint's certificate is checked against
	CertFile, KeyFile  string        // cert-file, key-file: a client certificate (PEM)
	InsecureSkipVerify bool          // insecure-skip-verify: check no certificate (tests only)
	Body               string        // body: none or connlog (the conn.log line)
	Compression        string        // compression: gzip or none
	BatchSize          int           // batch-size: records a request
	BatchTimeout       time.Duration // batch-timeout: how long a batch waits to fill
	Queue              int           // queue: records waiting for the collector, past which they drop
	Timeout            time.Duration // timeout: a request's
}

// Options are the exporter's options for these settings.
func (x OTLP) Options() otlp.Options {
	return otlp.Options{Endpoint: x.Endpoint, Protocol: x.Protocol, HeadersFile: x.HeadersFile, CAFile: x.CAFile,
		CertFile: x.CertFile, KeyFile: x.KeyFile, InsecureSkipVerify: x.InsecureSkipVerify, Body: x.Body, Compression: x.Compression,
		BatchSize: x.BatchSize, BatchTimeout: x.BatchTimeout, Queue: x.Queue, Timeout: x.Timeout}
}

// IPFIX is the IPFIX exporter's settings (ipfix.Options); no collector
// is no export.
type IPFIX struct {
	Collectors        []string      // collectors: HOST:PORT, each sent every record
	Transport         string        // transport: udp or tcp
	Mode              string        // mode: biflow (RFC 5103) or compat (two one-way records a flow)
	MTU               int           // mtu: the path MTU to the collectors, bytes
	TemplateRefresh   time.Duration // template-refresh: how often UDP collectors get the templates again
	EnterpriseNumber  int64         // enterprise-number: the operator's PEN for flowmon's own elements; 0 for none
	ObservationDomain int64         // observation-domain: the messages' observation domain ID
	Queue             int           // queue: each collector's queue, in records
	Rate              int           // rate: UDP collectors' pace, data records a second
}

// Options are the exporter's options for these settings.
func (x IPFIX) Options() ipfix.Options {
	return ipfix.Options{Collectors: x.Collectors, Transport: x.Transport, Mode: x.Mode, MTU: x.MTU,
		TemplateRefresh: x.TemplateRefresh, EnterpriseNumber: uint32(x.EnterpriseNumber),
		ObservationDomain: uint32(x.ObservationDomain), Queue: x.Queue, Rate: x.Rate}
}

// The values of Source and Rules that mean something; AFPacket.Fanout's
// are afpacket's (afpacket.FanoutHash, FanoutCPU, FanoutLB).
const (
	SourceAFPacket = "afpacket"
	SourcePcap     = "pcap"
	SourceXDP      = source.HookXDP
	SourceTC       = source.HookTC

	RulesNone = "none"
)

// The bounds of the settings, checked by Validate, Parse and Set; the
// afpacket section's are afpacket's (afpacket.MinBlockSize, ...),
// and so are pcap.timeout's (capture.MinReadTimeout, MaxReadTimeout).
const (
	MinSnapshotInterval = time.Second
	MinMaxAge           = time.Second
	MaxMaxAge           = 24 * time.Hour
	MinStopTimeout      = time.Second
	MaxStopTimeout      = 5 * time.Minute
	MaxUserName         = 32

	// The flow log's rotation: max-size 0 or within these, max-age 0 or
	// at least MinRotateAge, max-files from 1 to MaxRotateFiles.
	MinRotateSize        = 64 << 10
	MaxRotateSize  int64 = 1 << 40
	MinRotateAge         = time.Minute
	MaxRotateFiles       = 1000

	MinHistoryRAM = 64 << 10
	// MaxHistoryRAM is typed: it is past a 32-bit int.
	MaxHistoryRAM int64 = 1 << 40
	// DefaultHistoryRAM is pipeline/hostpairs's DefaultOptions.RAMBytes.
	DefaultHistoryRAM = 16 << 20
)

// The flow log's rotation by default: files of 256 MiB, ten kept (2.75
// GiB in all, a day or more of records at a busy link's rate of a few
// thousand flows a second), none rotated for its age.
const (
	DefaultRotateSize  = 256 << 20
	DefaultRotateFiles = 10
)

// DefaultActiveTimeout is the live agent's active timeout: a long flow's
// interim record every minute, as routers export theirs (a replay writes
// none unless asked).
const DefaultActiveTimeout = time.Minute

// runSettings are the pipeline's defaults for a live run.
func runSettings() pipeline.Settings {
	s := pipeline.DefaultSettings()
	s.ActiveTimeout = DefaultActiveTimeout
	return s
}

// Default returns the configuration with no file and no flag: an
// AF_PACKET ring of 64 MiB (64 blocks of 1 MiB), the engine's default
// pipeline, the embedded default rules, no watchlists and no flow
// history, no IPFIX export, metrics on 127.0.0.1:9100.
func Default() Config {
	ring := afpacket.Config{}.WithDefaults() // the ring's defaults are afpacket's
	bpfDefaults := source.Config{}.WithDefaults()
	return Config{
		Source: SourceAFPacket,
		AFPacket: AFPacket{
			BlockSize:    ring.BlockSize,
			BlockCount:   ring.BlockCount,
			FrameSize:    ring.FrameSize,
			BlockTimeout: ring.BlockTimeout,
			Fanout:       ring.Fanout,
			Promisc:      true,
		},
		Pcap: Pcap{
			Snaplen: capture.MaxSnaplen,
			Promisc: true,
			Timeout: ring.BlockTimeout,
		},
		EBPF: EBPF{
			XDPMode:     bpfDefaults.XDPMode,
			TCMode:      bpfDefaults.TCMode,
			RingSize:    bpfDefaults.RingSize,
			PollTimeout: bpfDefaults.PollTimeout,
			Sample:      int(bpfDefaults.Sample),
		},
		Pipeline:        runSettings(),
		History:         History{RAM: DefaultHistoryRAM},
		Listen:          "127.0.0.1:9100",
		Snapshot:        Snapshot{MaxAge: 10 * time.Minute, Interval: time.Minute},
		FlowLogRotation: Rotation{MaxSize: DefaultRotateSize, MaxFiles: DefaultRotateFiles},
		Export: Export{IPFIX: IPFIX{Transport: ipfix.TransportUDP, Mode: ipfix.ModeBiflow, MTU: ipfix.DefaultMTU,
			TemplateRefresh: ipfix.DefaultTemplateRefresh, Queue: ipfix.DefaultQueue, Rate: ipfix.DefaultRate},
			OTLP: OTLP{Protocol: otlp.ProtocolHTTP, Body: otlp.BodyNone, Compression: otlp.CompressionGzip, BatchSize: otlp.DefaultBatchSize,
				BatchTimeout: otlp.DefaultBatchTimeout, Queue: otlp.DefaultQueue, Timeout: otlp.DefaultTimeout}},
		StopTimeout: 10 * time.Second,
		Health:      Health{MaxDropShare: 0.25},
		LogFormat:   LogText,
	}
}
