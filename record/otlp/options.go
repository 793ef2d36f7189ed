package otlp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/flowmon/flowmon/internal/health"
)

// The protocols Options takes.
const (
	// ProtocolHTTP is OTLP/HTTP with binary protobuf, gzip-compressed:
	// each batch is POSTed to the endpoint's /v1/logs.
	ProtocolHTTP = "http"
	// ProtocolGRPC is OTLP/gRPC, gzip-compressed: each batch is a
	// LogsService.Export call.
	ProtocolGRPC = "grpc"
)

// The bodies Options takes.
const (
	// BodyNone leaves the body empty: the attributes hold every field of
	// the conn.log line (Decode reads it back).
	BodyNone = "none"
	// BodyConnLog makes a log record's body the flow's conn.log line
	// (record/connlog), as a string, for a backend that shows the body
	// first: it doubles the bytes to marshal and compress.
	BodyConnLog = "connlog"
)

// The compressions Options takes.
const (
	CompressionGzip = "gzip"
	// CompressionNone suits a collector on the same host, where the
	// compression's CPU buys nothing.
	CompressionNone = "none"
)

// The bounds and defaults of Options.
const (
	// A batch of 1024 records is some 1 MB of protobuf with the conn.log
	// bodies, a quarter of a gRPC server's default 4 MiB message limit.
	MinBatchSize     = 1
	MaxBatchSize     = 2048
	DefaultBatchSize = 1024

	// BatchTimeout is how long a batch waits to fill before it goes.
	MinBatchTimeout     = time.Millisecond
	MaxBatchTimeout     = time.Minute
	DefaultBatchTimeout = time.Second

	// A queue holds records (record.Flow, about 250 bytes each) and grows
	// only as a backlog builds: 300,000 rides out a minute of a
	// collector's outage at 5,000 records a second (as IPFIX's).
	MinQueue     = 1
	MaxQueue     = 1 << 24
	DefaultQueue = 300_000

	// Timeout bounds one request, its answer included.
	MinTimeout     = 100 * time.Millisecond
	MaxTimeout     = 5 * time.Minute
	DefaultTimeout = 10 * time.Second
)

// ErrOptions is what Validate's errors wrap.
var ErrOptions = errors.New("otlp: bad options")

// Options are an Exporter's settings. The zero value of a field is its
// default, but for Endpoint.
type Options struct {
	// Endpoint is the collector's URL, http:// or https:// (TLS) and the
	// host and port, e.g. http://127.0.0.1:4318 for OTLP/HTTP (whose
	// requests go to the URL's path and /v1/logs) or
	// http://127.0.0.1:4317 for OTLP/gRPC (no path).
	Endpoint string
	// Protocol is ProtocolHTTP (default) or ProtocolGRPC.
	Protocol string
	// Headers are sent with every request ("Name: value"), such as an
	// Authorization; gRPC sends them as metadata, its names in lower
	// case.
	Headers []string
	// HeadersFile is a file of more headers, one "Name: value" a line
	// (blank lines and lines starting with # skipped), read by New: where
	// a secret (a token) stays out of the config and the command line.
	HeadersFile string
	// TLS, for an https endpoint: CAFile (PEM) is the CAs the server's
	// certificate is checked against (default: the system's); CertFile
	// and KeyFile, together, are a client certificate;
	// InsecureSkipVerify checks no certificate (tests only).
	CAFile, CertFile, KeyFile string
	InsecureSkipVerify        bool
	// Body is BodyNone (default) or BodyConnLog.
	Body string
	// Compression is CompressionGzip (default) or CompressionNone.
	Compression string
	// BatchSize is the most records a request carries; BatchTimeout is
	// how long a batch waits for more records before it is sent.
	BatchSize    int
	BatchTimeout time.Duration
	// Queue is what waits for a collector that is slow or down, in
	// records, past which records drop.
	Queue int
	// Timeout bounds each request.
	Timeout time.Duration
	// WaitForRoom makes WriteFlows wait for room in the queue while the
	// collector is not failing, instead of dropping: a replay then goes
	// at its collector's pace. A failing collector's records drop.
	WaitForRoom bool
	// FlushWait bounds how long Flush waits for the queue to drain (a
	// replay's end); 0 does not wait. CloseWait bounds Close's wait.
	FlushWait, CloseWait time.Duration

	// HostName, Interface and Version are resource attributes
	// (host.name, network.interface.name and service.version), "" for
	// none.
	HostName, Interface, Version string

	// Logger, when set, is where the collector's failures are logged
	// when they start and when they end.
	Logger *slog.Logger
	// Health, when set, takes the exporter's component
	// ("otlp:ENDPOINT"), which /healthz reads.
	Health *health.Registry

	minBackoff time.Duration // the first wait after a failure; 0: minBackoff
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Protocol == "" {
		o.Protocol = ProtocolHTTP
	}
	if o.Body == "" {
		o.Body = BodyNone
	}
	if o.Compression == "" {
		o.Compression = CompressionGzip
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.BatchTimeout == 0 {
		o.BatchTimeout = DefaultBatchTimeout
	}
	if o.Queue == 0 {
		o.Queue = DefaultQueue
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.minBackoff == 0 {
		o.minBackoff = minBackoff
	}
	return o
}

// Validate checks o (its zero fields taken as their defaults) and
// returns every problem, joined, each wrapping ErrOptions.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if o.Endpoint == "" {
		errs = append(errs, fmt.Errorf("%w: endpoint: none given (a URL, e.g. http://127.0.0.1:4318)", ErrOptions))
	}
	for _, p := range o.problems() {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrOptions, p.Key, p.Msg))
	}
	return errors.Join(errs...)
}

// Problem is one setting's problem: Key is the setting's name as the
// config file spells it under export.otlp ("endpoint", "batch-size").
type Problem struct{ Key, Msg string }

// Problems checks o as it is, its zero fields too (a config file
// fills every field), and returns each problem by the setting's name,
// for the file's checker to place.
func (o Options) Problems() []Problem { return o.problems() }

func (o Options) problems() []Problem {
	var ps []Problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, Problem{key, fmt.Sprintf(format, args...)})
	}
	if o.Protocol != ProtocolHTTP && o.Protocol != ProtocolGRPC {
		bad("protocol", "%q must be %s or %s", o.Protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if o.Endpoint != "" {
		if msg := checkEndpoint(o.Endpoint, o.Protocol); msg != "" {
			bad("endpoint", "%s", msg)
		} else if u, _ := url.Parse(o.Endpoint); u.Scheme != "https" && (o.CAFile != "" || o.CertFile != "" || o.InsecureSkipVerify) {
			bad("endpoint", "%q: TLS settings (CA, client certificate, insecure-skip-verify) need an https:// endpoint", o.Endpoint)
		}
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		bad("cert-file", "a client certificate needs both cert-file and key-file")
	}
	for i, h := range o.Headers {
		if _, _, msg := splitHeader(h); msg != "" {
			bad("headers", "[%d]: %s", i, msg)
		}
	}
	if o.Body != BodyNone && o.Body != BodyConnLog {
		bad("body", "%q must be %s or %s", o.Body, BodyNone, BodyConnLog)
	}
	if o.Compression != CompressionGzip && o.Compression != CompressionNone {
		bad("compression", "%q must be %s or %s", o.Compression, CompressionGzip, CompressionNone)
	}
	if o.BatchSize < MinBatchSize || o.BatchSize > MaxBatchSize {
		bad("batch-size", "%d must be between %d and %d records", o.BatchSize, MinBatchSize, MaxBatchSize)
	}
	if t := o.BatchTimeout; t < MinBatchTimeout || t > MaxBatchTimeout {
		bad("batch-timeout", "%v must be between %v and %v", t, MinBatchTimeout, MaxBatchTimeout)
	}
	if o.Queue < MinQueue || o.Queue > MaxQueue {
		bad("queue", "%d must be between %d and %d records", o.Queue, MinQueue, MaxQueue)
	}
	if t := o.Timeout; t < MinTimeout || t > MaxTimeout {
		bad("timeout", "%v must be between %v and %v", t, MinTimeout, MaxTimeout)
	}
	if o.FlushWait < 0 || o.CloseWait < 0 {
		bad("flush-wait", "flush and close waits must be 0 or more")
	}
	return ps
}

// checkEndpoint says what is wrong with an endpoint URL, or "".
func checkEndpoint(s, protocol string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q must be a URL http://HOST:PORT or https://HOST:PORT, e.g. http://127.0.0.1:4318", s)
	}
	if u.User != nil {
		return fmt.Sprintf("%q: credentials go in a header (Authorization), not in the URL", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Sprintf("%q: a query or fragment is not taken", s)
	}
	if protocol == ProtocolGRPC && strings.Trim(u.Path, "/") != "" {
		return fmt.Sprintf("%q: a gRPC endpoint has no path", s)
	}
	return ""
}

// splitHeader splits "Name: value", and says what is wrong with it.
func splitHeader(h string) (name, value, msg string) {
	name, value, ok := strings.Cut(h, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok {
		// Not quoted: the line may be a secret alone.
		return "", "", "a header must be \"Name: value\": this one has no colon"
	}
	if name == "" {
		return "", "", "a header must be \"Name: value\": this one has no name"
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return "", "", fmt.Sprintf("header name %q: %q is not allowed in a name", name, c)
		}
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return "", "", fmt.Sprintf("header %q: its value has a line break or NUL", name)
	}
	return name, value, ""
}
