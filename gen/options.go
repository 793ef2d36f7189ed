package gen

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrOptions is wrapped by every error Validate and the parsers return.
var ErrOptions = errors.New("invalid generator options")

// LinkType is the pcap link type of the generated trace.
type LinkType uint16

// Link types the generator writes.
const (
	LinkEthernet LinkType = 1   // DLT_EN10MB: Ethernet II frames, padded to 60 bytes
	LinkRaw      LinkType = 101 // LINKTYPE_RAW: IPv4/IPv6 packets with no link header
)

// String returns the name ParseLinkType accepts.
func (l LinkType) String() string {
	switch l {
	case LinkEthernet:
		return "ethernet"
	case LinkRaw:
		return "raw"
	}
	return fmt.Sprintf("linktype-%d", uint16(l))
}

// ParseLinkType parses "ethernet" (or "en10mb") and "raw".
func ParseLinkType(s string) (LinkType, error) {
	switch strings.ToLower(s) {
	case "ethernet", "eth", "en10mb":
		return LinkEthernet, nil
	case "raw", "ip":
		return LinkRaw, nil
	}
	return 0, fmt.Errorf("link type %q: want ethernet or raw: %w", s, ErrOptions)
}

// Mix is the share of flows each scenario contributes. The shares are
// fractions of the flow count (not of packets); they must sum to 1.
type Mix struct {
	Normal   float64 // client/server traffic with every conn_state outcome
	SYNFlood float64 // single SYNs from random spoofed sources to one target
	Scan     float64 // one source probing many ports of one host
	Heavy    float64 // a few flows with very many packets
}

// DefaultMix is the mix used when Options.Mix is zero.
var DefaultMix = Mix{Normal: 0.978, SYNFlood: 0.01, Scan: 0.01, Heavy: 0.002}

func (m Mix) shares() [numScenarios]float64 {
	return [numScenarios]float64{m.Normal, m.Heavy, m.SYNFlood, m.Scan}
}

// String formats the mix as ParseMix reads it.
func (m Mix) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return "normal=" + f(m.Normal) + ",synflood=" + f(m.SYNFlood) + ",scan=" + f(m.Scan) + ",heavy=" + f(m.Heavy)
}

// ParseMix parses "normal=0.9,synflood=0.05,scan=0.03,heavy=0.02". Names
// left out are 0, except normal, which takes whatever the others leave
// (so "synflood=0.1" means 90% normal flows).
func ParseMix(s string) (Mix, error) {
	var m Mix
	normalSet := false
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return Mix{}, fmt.Errorf("mix %q: %q is not name=share: %w", s, part, ErrOptions)
		}
		name = strings.ToLower(strings.TrimSpace(name))
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return Mix{}, fmt.Errorf("mix %q: share %q of %s must be a number in [0, 1]: %w", s, val, name, ErrOptions)
		}
		if seen[name] {
			return Mix{}, fmt.Errorf("mix %q: %s given twice: %w", s, name, ErrOptions)
		}
		seen[name] = true
		switch name {
		case "normal":
			m.Normal, normalSet = v, true
		case "synflood", "flood":
			m.SYNFlood = v
		case "scan", "portscan":
			m.Scan = v
		case "heavy", "heavyhitters":
			m.Heavy = v
		default:
			return Mix{}, fmt.Errorf("mix %q: unknown scenario %q (want normal, synflood, scan, heavy): %w", s, name, ErrOptions)
		}
	}
	if !normalSet {
		m.Normal = 1 - (m.SYNFlood + m.Scan + m.Heavy)
		if m.Normal < -1e-9 {
			return Mix{}, fmt.Errorf("mix %q: shares sum to %.4g > 1: %w", s, 1-m.Normal, ErrOptions)
		}
		m.Normal = math.Max(m.Normal, 0)
	}
	return m, m.validate()
}

func (m Mix) validate() error {
	sum := 0.0
	for _, v := range m.shares() {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("mix %s: every share must be in [0, 1]: %w", m, ErrOptions)
		}
		sum += v
	}
	if math.Abs(sum-1) > 1e-6 {
		return fmt.Errorf("mix %s: shares sum to %.6g, want 1: %w", m, sum, ErrOptions)
	}
	return nil
}

// Limits on Options.
const (
	// MaxFlows bounds the flow count: client addresses are drawn from a
	// 24-bit space and each flow may need one of its own.
	MaxFlows = 1 << 23
	// MaxPackets bounds Options.Packets.
	MaxPackets = 1 << 33
	// MaxSnaplen is the largest snap length accepted.
	MaxSnaplen = 262144
)

// DefaultStart is the trace's first instant when Options.Start is zero.
var DefaultStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Options describe a trace. The same Options (Seed included) always give
// byte-identical output.
type Options struct {
	// Flows is the number of flows. With Packets > 0 it must be 0: the
	// generator then picks the fewest flows whose packets reach Packets.
	Flows int
	// Packets, if > 0, asks for at least this many packets, not counting
	// SPAN duplicates. Every flow is still complete (no flow is cut short),
	// so the trace usually has a few more.
	Packets int64
	// Duration is the window over which flows start; flows that start near
	// its end finish after it.
	Duration time.Duration
	// Seed selects the trace.
	Seed uint64
	// Start is the time of the window's start (zero: DefaultStart).
	Start time.Time
	// Link is LinkEthernet or LinkRaw (zero: LinkEthernet).
	Link LinkType
	// Snaplen, if > 0, truncates each captured packet to Snaplen bytes;
	// the record keeps the original length.
	Snaplen int
	// Mix is the share of flows per scenario (zero: DefaultMix).
	Mix Mix
	// DupRate is the probability that a packet is written twice, as a SPAN
	// port does: the copy follows 1-50 µs later.
	DupRate float64
	// DupTTLChange makes each duplicate's TTL (hop limit) one lower, as
	// when the copy was taken after a router; the IPv4 checksum is
	// recomputed.
	DupTTLChange bool
	// IPv6Share is the fraction of normal and heavy-hitter flows over IPv6
	// (normal TCP/UDP flows draw it per client, for groups of 16 flows);
	// SYN floods and scans are IPv4. UDPShare and ICMPShare are the
	// fractions of normal flows over UDP and ICMP echo; the rest is TCP.
	IPv6Share, UDPShare, ICMPShare float64
}

// DefaultOptions returns the options `flowmon gen` starts from.
func DefaultOptions() Options {
	return Options{
		Flows:     10000,
		Duration:  60 * time.Second,
		Seed:      1,
		Start:     DefaultStart,
		Link:      LinkEthernet,
		Mix:       DefaultMix,
		IPv6Share: 0.1,
		UDPShare:  0.2,
		ICMPShare: 0.02,
	}
}

// withDefaults fills the zero values documented on Options.
func (o Options) withDefaults() Options {
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	if o.Link == 0 {
		o.Link = LinkEthernet
	}
	if o.Mix == (Mix{}) {
		o.Mix = DefaultMix
	}
	return o
}

// Validate reports every option out of range, zero values being read as
// documented on Options.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(a, ErrOptions)...))
	}
	switch {
	case o.Packets < 0 || o.Packets > MaxPackets:
		bad("packets %d must be in [0, %d]", o.Packets, int64(MaxPackets))
	case o.Packets > 0 && o.Flows != 0:
		bad("flows %d and packets %d: give one of them, not both", o.Flows, o.Packets)
	case o.Packets == 0 && (o.Flows < 1 || o.Flows > MaxFlows):
		bad("flows %d must be in [1, %d]", o.Flows, MaxFlows)
	}
	if o.Duration < time.Millisecond || o.Duration > 30*24*time.Hour {
		bad("duration %v must be in [1ms, 720h]", o.Duration)
	}
	if o.Start.Unix() < 0 || o.Start.Unix() > math.MaxUint32/2 {
		bad("start %v must be between 1970 and 2038", o.Start)
	}
	if o.Link != LinkEthernet && o.Link != LinkRaw {
		bad("link type %d: want ethernet (1) or raw (101)", uint16(o.Link))
	}
	if o.Snaplen < 0 || o.Snaplen > MaxSnaplen {
		bad("snaplen %d must be 0 (no truncation) or in [1, %d]", o.Snaplen, MaxSnaplen)
	}
	if err := o.Mix.validate(); err != nil {
		errs = append(errs, err)
	}
	if !(o.DupRate >= 0 && o.DupRate < 1) {
		bad("dup rate %v must be in [0, 1)", o.DupRate)
	}
	for _, s := range []struct {
		name string
		v    float64
	}{{"ipv6 share", o.IPv6Share}, {"udp share", o.UDPShare}, {"icmp share", o.ICMPShare}} {
		if !(s.v >= 0 && s.v <= 1) {
			bad("%s %v must be in [0, 1]", s.name, s.v)
		}
	}
	if o.UDPShare+o.ICMPShare > 1+1e-9 {
		bad("udp share %v + icmp share %v must be at most 1", o.UDPShare, o.ICMPShare)
	}
	return errors.Join(errs...)
}
