package ipfix

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/flowmon/flowmon/internal/health"
)

// The transports and modes Options takes.
const (
	TransportUDP = "udp"
	TransportTCP = "tcp"

	// ModeBiflow sends a flow as one record with RFC 5103's reverse
	// elements.
	ModeBiflow = "biflow"
	// ModeCompat sends a flow as two one-way records.
	ModeCompat = "compat"
)

// The bounds and defaults of Options.
const (
	// MinMTU leaves room for the headers, the templates and a record
	// with every element.
	MinMTU     = 576
	MaxMTU     = MaxMessage
	DefaultMTU = 1500

	MinTemplateRefresh     = time.Second
	MaxTemplateRefresh     = time.Hour
	DefaultTemplateRefresh = time.Minute

	// A queue holds records (record.Flow, about 250 bytes each), and
	// grows to its size only as a backlog builds: the default, 300,000
	// records (at most about 75 MB a collector), rides out a minute of a
	// collector's outage at 5,000 records a second (a busy router's flow
	// rate), 10 minutes at 500.
	MinQueue     = 1
	MaxQueue     = 1 << 24
	DefaultQueue = 300_000

	// Rate is a UDP collector's pace, in data records a second: what
	// nfcapd and goflow2 read at their default socket buffers without
	// loss, measured in docs/results/ipfix-pacing.md.
	MinRate     = 100
	MaxRate     = 10_000_000
	DefaultRate = 20_000

	MaxCollectors = 16
)

// ErrOptions is what Validate's errors wrap.
var ErrOptions = errors.New("ipfix: bad options")

// Options are an Exporter's settings. The zero value of a field is its
// default, but for Collectors.
type Options struct {
	// Collectors are HOST:PORT addresses, each sent every record.
	Collectors []string
	// Transport is TransportUDP (default) or TransportTCP.
	Transport string
	// Mode is ModeBiflow (default) or ModeCompat.
	Mode string
	// MTU is the path MTU to the collectors, in bytes: a message is at
	// most the MTU less the IP header (20 or 40 bytes) and the UDP (8)
	// or TCP (20) header.
	MTU int
	// TemplateRefresh is how often UDP collectors are sent the
	// templates again (TCP collectors get them at each connection).
	TemplateRefresh time.Duration
	// EnterpriseNumber, when not 0, adds flowmon's own elements
	// (connState, history, confidence) under this private enterprise
	// number, which must be the operator's.
	EnterpriseNumber uint32
	// ObservationDomain is the messages' observation domain ID.
	ObservationDomain uint32
	// IngressInterface, when not 0, is exported as every record's
	// ingressInterface (the capture interface's index).
	IngressInterface uint32
	// Queue is each collector's queue, in records: what waits for a
	// collector that is slow or down, past which records drop.
	Queue int
	// Rate is the most data records a second sent to a UDP collector:
	// messages are paced to it so that the collector's socket buffer
	// does not overflow, which UDP would not report. TCP is not paced:
	// its flow control holds the sender to the collector's pace.
	Rate int
	// WaitForRoom makes WriteFlows wait for room in the queue of a
	// collector that is not failing, instead of dropping: a replay then
	// goes at its collectors' pace. A failing collector's records drop.
	WaitForRoom bool
	// FlushWait bounds how long Flush waits for the queues to drain
	// (a replay's end); 0 does not wait.
	FlushWait time.Duration
	// CloseWait bounds how long Close waits for the queues to drain
	// before it closes the connections; 0 does not wait.
	CloseWait time.Duration

	// Logger, when set, is where each collector's failure is logged when
	// it starts and when it ends.
	Logger *slog.Logger
	// Health, when set, takes each collector's component ("ipfix:ADDR",
	// the address as given), which /healthz reads.
	Health *health.Registry

	minBackoff time.Duration // the first wait after a failure; 0: minBackoff
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Transport == "" {
		o.Transport = TransportUDP
	}
	if o.Mode == "" {
		o.Mode = ModeBiflow
	}
	if o.MTU == 0 {
		o.MTU = DefaultMTU
	}
	if o.TemplateRefresh == 0 {
		o.TemplateRefresh = DefaultTemplateRefresh
	}
	if o.Queue == 0 {
		o.Queue = DefaultQueue
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
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
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrOptions, fmt.Sprintf(format, args...)))
	}
	if len(o.Collectors) == 0 {
		bad("no collector given (HOST:PORT)")
	}
	if len(o.Collectors) > MaxCollectors {
		bad("%d collectors: at most %d", len(o.Collectors), MaxCollectors)
	}
	for _, c := range o.Collectors {
		if msg := CheckCollector(c); msg != "" {
			bad("%s", msg)
		}
	}
	if o.Transport != TransportUDP && o.Transport != TransportTCP {
		bad("transport %q must be %s or %s", o.Transport, TransportUDP, TransportTCP)
	}
	if o.Mode != ModeBiflow && o.Mode != ModeCompat {
		bad("mode %q must be %s or %s", o.Mode, ModeBiflow, ModeCompat)
	}
	if o.MTU < MinMTU || o.MTU > MaxMTU {
		bad("mtu %d must be between %d and %d", o.MTU, MinMTU, MaxMTU)
	}
	if t := o.TemplateRefresh; t < MinTemplateRefresh || t > MaxTemplateRefresh {
		bad("template refresh %v must be between %v and %v", t, MinTemplateRefresh, MaxTemplateRefresh)
	}
	if o.Queue < MinQueue || o.Queue > MaxQueue {
		bad("queue %d must be between %d and %d records", o.Queue, MinQueue, MaxQueue)
	}
	if o.Rate < MinRate || o.Rate > MaxRate {
		bad("rate %d must be between %d and %d records a second", o.Rate, MinRate, MaxRate)
	}
	if o.FlushWait < 0 || o.CloseWait < 0 {
		bad("flush and close waits must be 0 or more")
	}
	return errors.Join(errs...)
}

// CheckCollector says what is wrong with a collector's address, or "".
func CheckCollector(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return fmt.Sprintf("collector %q must be HOST:PORT, e.g. 127.0.0.1:4739", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("collector %q: port %q must be a number from 1 to 65535", s, port)
	}
	return ""
}

// ParseCollectors splits a comma-separated list of HOST:PORT, as the
// replay's --ipfix flag takes it.
func ParseCollectors(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// maxMessage is the largest message to a collector at remote, for the
// MTU and transport.
func maxMessage(mtu int, transport string, remote net.Addr) int {
	ip := 20
	var a net.IP
	switch r := remote.(type) {
	case *net.UDPAddr:
		a = r.IP
	case *net.TCPAddr:
		a = r.IP
	}
	if a != nil && a.To4() == nil {
		ip = 40
	}
	l4 := 8
	if transport == TransportTCP {
		l4 = 20
	}
	return min(mtu-ip-l4, MaxMessage)
}
