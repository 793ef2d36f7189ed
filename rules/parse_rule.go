package rules

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"gopkg.in/yaml.v3"
)

// labelName is what Prometheus and Alertmanager accept as a label name.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func (p *parser) rule(n *yaml.Node, interval time.Duration) Rule {
	r := Rule{Suppress: DefaultSuppress, Severity: DefaultSeverity, Pos: Pos{n.Line, n.Column}}
	p.ruleName = ""
	defer func() { p.ruleName = "" }()
	// The name first, so that every other error names the rule.
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "alert" && n.Content[i+1].Kind == yaml.ScalarNode {
				p.ruleName = n.Content[i+1].Value
			}
		}
	}
	// The kind's condition is read after the kind, whatever their order.
	conds := map[Kind]*yaml.Node{}
	var kindNode *yaml.Node
	cond := func(k Kind) func(*yaml.Node) { return func(v *yaml.Node) { conds[k] = v } }
	p.mapping(n, map[string]func(*yaml.Node){
		"alert": func(v *yaml.Node) {
			r.Alert = p.str(v)
			if r.Alert != "" && !labelName.MatchString(r.Alert) {
				p.errf(v, "alert name %q must match %s", r.Alert, labelName)
			}
		},
		"kind": func(v *yaml.Node) {
			kindNode = v
			if k, ok := kindNames[p.str(v)]; ok {
				r.Kind = k
			} else if v.Value != "" {
				p.errf(v, "unknown kind %q (want one of %s)", v.Value, strings.Join(sortedKeys(kindNames), ", "))
			}
		},
		"match": func(v *yaml.Node) { r.Match = p.match(v) },
		"track": func(v *yaml.Node) {
			t, ok := trackNames[p.str(v)]
			if !ok && v.Value != "" {
				p.errf(v, "unknown track %q (want one of %s)", v.Value, strings.Join(sortedKeys(trackNames), ", "))
			}
			r.Track = t
		},
		"transition":  cond(KindTransition),
		"anomaly":     cond(KindAnomaly),
		"threshold":   cond(KindThreshold),
		"volume":      cond(KindVolume),
		"duplicates":  cond(KindDuplicates),
		"watchlist":   cond(KindWatchlist),
		"novelty":     cond(KindNovelty),
		"for":         func(v *yaml.Node) { r.For = p.duration(v, "for", true) },
		"suppress":    func(v *yaml.Node) { r.Suppress = p.duration(v, "suppress", false) },
		"severity":    func(v *yaml.Node) { r.Severity = p.str(v) },
		"labels":      func(v *yaml.Node) { r.Labels = p.labels(v) },
		"annotations": func(v *yaml.Node) { r.Annotations = p.annotations(v) },
	}, "alert", "kind")
	for k, v := range conds {
		if k != r.Kind && r.Kind != 0 {
			p.errf(v, "a %s condition in a rule of kind %s", k, r.Kind)
		}
	}
	v := conds[r.Kind]
	if v == nil && r.Kind != 0 {
		p.errf(kindNode, "kind %s needs a %s: condition", r.Kind, r.Kind)
		return r
	}
	switch r.Kind {
	case KindTransition:
		r.Transition = p.transition(v)
	case KindAnomaly:
		r.Anomalies = p.anomalies(v)
	case KindThreshold:
		r.Threshold = p.threshold(v, interval)
		if r.Threshold.Event.distinct() && r.Track == ByFlow {
			p.errf(v, "event %s counts per host: set track to by_src, by_dst or by_pair", r.Threshold.Event)
		}
		if r.Threshold.Event == EventConnState && r.Match.ConnStates == 0 {
			p.errf(v, "event conn_state counts the flows entering match.conn_state: set it")
		}
	case KindVolume:
		r.Volume = p.volume(v, interval)
	case KindDuplicates:
		r.Duplicates = p.duplicates(v, interval)
	case KindWatchlist:
		r.Watchlist = p.watchlist(v)
	case KindNovelty:
		p.mapping(v, map[string]func(*yaml.Node){}) // {}: the match says which flows
	}
	return r
}

func (p *parser) watchlist(n *yaml.Node) Watchlist {
	var w Watchlist
	p.mapping(n, map[string]func(*yaml.Node){
		"list": func(v *yaml.Node) {
			if w.List = p.str(v); w.List == "" {
				p.errf(v, "list: want a watchlist's name")
			}
		},
		"side": func(v *yaml.Node) {
			s, ok := sideNames[p.str(v)]
			if !ok {
				p.errf(v, "unknown side %q (want one of %s)", v.Value, strings.Join(sortedKeys(sideNames), ", "))
			}
			w.Side = s
		},
	}, "list")
	return w
}

func (p *parser) labels(n *yaml.Node) map[string]string {
	m := p.stringMap(n, "labels")
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch {
		case !labelName.MatchString(k.Value):
			p.errf(k, "label name %q must match %s", k.Value, labelName)
		case reservedLabels[k.Value]:
			p.errf(k, "label %q is set by flowmon", k.Value)
		}
	}
	return m
}

// reservedLabels are the labels an alert gets from its rule and key.
var reservedLabels = map[string]bool{"alertname": true, "severity": true, "src": true, "dst": true, "src_port": true, "dst_port": true, "proto": true}

func (p *parser) annotations(n *yaml.Node) map[string]string {
	m := p.stringMap(n, "annotations")
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, err := parseTemplate(k.Value, v.Value); err != nil {
			p.errf(v, "annotation %s: %v", k.Value, err)
		}
	}
	return m
}

func (p *parser) match(n *yaml.Node) Match {
	var m Match
	prefixes := func(what string, dst *[]netip.Prefix) func(*yaml.Node) {
		return func(v *yaml.Node) {
			for _, s := range p.scalars(v) {
				pr, err := parsePrefix(s.Value)
				if err != nil {
					p.errf(s, "%s: bad CIDR %q: %v", what, s.Value, err)
					continue
				}
				*dst = append(*dst, pr)
			}
		}
	}
	ports := func(what string, dst *[]PortRange) func(*yaml.Node) {
		return func(v *yaml.Node) {
			for _, s := range p.scalars(v) {
				for _, f := range strings.Split(s.Value, ",") {
					pr, err := parsePortRange(strings.TrimSpace(f))
					if err != nil {
						p.errf(s, "%s: %v", what, err)
						continue
					}
					*dst = append(*dst, pr)
				}
			}
		}
	}
	p.mapping(n, map[string]func(*yaml.Node){
		"protocol": func(v *yaml.Node) {
			for _, s := range p.scalars(v) {
				pr, ok := protocols[strings.ToLower(s.Value)]
				if !ok {
					n, err := strconv.ParseUint(s.Value, 10, 8)
					if err != nil {
						p.errf(s, "unknown protocol %q (want tcp, udp, icmp, icmp6 or a number 0-255)", s.Value)
						continue
					}
					pr = uint8(n)
				}
				m.Protocols = append(m.Protocols, pr)
			}
		},
		"src":       prefixes("src", &m.Src),
		"dst":       prefixes("dst", &m.Dst),
		"not_src":   prefixes("not_src", &m.NotSrc),
		"not_dst":   prefixes("not_dst", &m.NotDst),
		"src_ports": ports("src_ports", &m.SrcPorts),
		"dst_ports": ports("dst_ports", &m.DstPorts),
		"flags": func(v *yaml.Node) {
			for _, s := range p.scalars(v) {
				name, neg := strings.CutPrefix(strings.TrimSpace(s.Value), "!")
				f, ok := flagNames[strings.ToUpper(name)]
				switch {
				case !ok:
					p.errf(s, "unknown TCP flag %q (want FIN, SYN, RST, PSH, ACK, URG, ECE, CWR or NS, ! before one that must be unset)", s.Value)
				case neg:
					m.FlagsUnset |= f
				default:
					m.FlagsSet |= f
				}
			}
			if m.FlagsSet&m.FlagsUnset != 0 {
				p.errf(v, "flags %s both set and unset", m.FlagsSet&m.FlagsUnset)
			}
		},
		"conn_state": func(v *yaml.Node) { m.ConnStates = p.states(v, "conn_state") },
	})
	m.hasEndpoints = len(m.Src)+len(m.Dst)+len(m.NotSrc)+len(m.NotDst)+len(m.SrcPorts)+len(m.DstPorts) > 0
	return m
}

var protocols = map[string]uint8{"tcp": capture.ProtoTCP, "udp": capture.ProtoUDP, "icmp": capture.ProtoICMP, "icmp6": capture.ProtoICMPv6, "icmpv6": capture.ProtoICMPv6, "sctp": capture.ProtoSCTP, "gre": capture.ProtoGRE, "esp": capture.ProtoESP}

var flagNames = map[string]capture.TCPFlags{"FIN": capture.FIN, "SYN": capture.SYN, "RST": capture.RST, "PSH": capture.PSH, "ACK": capture.ACK, "URG": capture.URG, "ECE": capture.ECE, "CWR": capture.CWR, "NS": capture.NS}

// parsePrefix reads a CIDR or a bare address (a /32 or /128).
func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	pr, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return pr.Masked(), nil
}

// parsePortRange reads "80" or "1000-2000".
func parsePortRange(s string) (PortRange, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	b := a
	var err2 error
	if isRange {
		b, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
	}
	if err1 != nil || err2 != nil {
		return PortRange{}, fmt.Errorf("bad port %q (want a port 0-65535 or a range such as 1000-2000)", s)
	}
	if a > b {
		return PortRange{}, fmt.Errorf("port range %q runs backwards", s)
	}
	return PortRange{uint16(a), uint16(b)}, nil
}

func (p *parser) states(n *yaml.Node, what string) StateSet {
	var set StateSet
	for _, s := range p.scalars(n) {
		c, err := acsm.ParseConnState(s.Value)
		if err != nil || c == acsm.ConnUnknown {
			p.errf(s, "%s: unknown conn_state %q (want Zeek's: S0, S1, SF, REJ, S2, S3, RSTO, RSTR, RSTOS0, RSTRH, SH, SHR, OTH)", what, s.Value)
			continue
		}
		set |= 1 << c
	}
	return set
}

func (p *parser) transition(n *yaml.Node) Transition {
	var t Transition
	p.mapping(n, map[string]func(*yaml.Node){
		"from": func(v *yaml.Node) { t.From = p.states(v, "from") },
		"to": func(v *yaml.Node) {
			if t.To = p.states(v, "to"); v.Kind == yaml.SequenceNode && len(v.Content) == 0 {
				p.errf(v, "to: name at least one conn_state")
			}
		},
	}, "to")
	return t
}

func (p *parser) anomalies(n *yaml.Node) acsm.Anomaly {
	var a acsm.Anomaly
	names := acsm.AnomalyNames()
	for _, s := range p.scalars(n) {
		i := indexOf(names, s.Value)
		if s.Value == "any" {
			a |= 1<<len(names) - 1
			continue
		}
		if i < 0 {
			p.errf(s, "unknown anomaly %q (want any or one of %s)", s.Value, strings.Join(names, ", "))
			continue
		}
		a |= 1 << i
	}
	return a
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

func (p *parser) threshold(n *yaml.Node, interval time.Duration) Threshold {
	t := Threshold{Window: interval}
	p.mapping(n, map[string]func(*yaml.Node){
		"event": func(v *yaml.Node) {
			e, ok := eventNames[p.str(v)]
			if !ok && v.Value != "" {
				p.errf(v, "unknown event %q (want one of %s)", v.Value, strings.Join(sortedKeys(eventNames), ", "))
			}
			t.Event = e
		},
		"above":  func(v *yaml.Node) { t.Above = p.number(v, "above", 0) },
		"window": func(v *yaml.Node) { t.Window = p.duration(v, "window", false) },
		"error":  func(v *yaml.Node) { t.Error = p.errorShare(v) },
	}, "event", "above")
	return t
}

func (p *parser) errorShare(v *yaml.Node) float64 {
	e := p.number(v, "error", 0)
	if e <= 0 || e >= 0.5 {
		p.errf(v, "error %v must be above 0 and below 0.5", v.Value)
	}
	return e
}

func (p *parser) volume(n *yaml.Node, interval time.Duration) Volume {
	vo := Volume{Measure: Packets, Window: interval}
	p.mapping(n, map[string]func(*yaml.Node){
		"measure": func(v *yaml.Node) {
			m, ok := measureNames[p.str(v)]
			if !ok && v.Value != "" {
				p.errf(v, "unknown measure %q (want packets or bytes)", v.Value)
			}
			vo.Measure = m
		},
		"above":  func(v *yaml.Node) { vo.Above = p.number(v, "above", 0) },
		"window": func(v *yaml.Node) { vo.Window = p.duration(v, "window", false) },
		"error":  func(v *yaml.Node) { vo.Error = p.errorShare(v) },
	}, "measure", "above")
	return vo
}

func (p *parser) duplicates(n *yaml.Node, interval time.Duration) Duplicates {
	d := Duplicates{Window: interval, MinPackets: DefaultMinPackets}
	p.mapping(n, map[string]func(*yaml.Node){
		"above": func(v *yaml.Node) {
			d.Above = p.number(v, "above", 0)
			if d.Above >= 1 {
				p.errf(v, "above %v is a share of packets: it must be below 1", v.Value)
			}
		},
		"min_packets": func(v *yaml.Node) { d.MinPackets = uint64(p.number(v, "min_packets", 1)) },
		"window":      func(v *yaml.Node) { d.Window = p.duration(v, "window", false) },
	}, "above")
	return d
}
