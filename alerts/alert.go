package alerts

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Label is one name=value pair of an alert's identity.
type Label struct{ Name, Value string }

// Labels are an alert's identity, sorted by name (Sort), as Prometheus and
// Alertmanager keep them: two alerts with equal labels are the same alert.
type Labels []Label

// Sort orders ls by name, in place, and returns it.
func (ls Labels) Sort() Labels {
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

// Get returns the value of the label name, or "".
func (ls Labels) Get(name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// Map returns the labels as a map (for JSON and templates).
func (ls Labels) Map() map[string]string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Name] = l.Value
	}
	return m
}

// Flow is the flow that triggered an alert, directed from its originator
// to its responder.
type Flow struct {
	Proto     string     `json:"proto"` // "tcp", "udp", "icmp", ... or the protocol number
	Src       netip.Addr `json:"src"`
	SrcPort   uint16     `json:"src_port"`
	Dst       netip.Addr `json:"dst"`
	DstPort   uint16     `json:"dst_port"`
	ConnState string     `json:"conn_state"` // Zeek's spelling; "-" when unknown
	// CommunityID is the Community ID v1 flow hash ("1:..."), "" if not
	// computed.
	CommunityID string `json:"community_id,omitempty"`
}

// Alert is one alert as the rules raise it and the sinks deliver it. The
// times are packet time (a replay's alerts carry the capture's clock).
type Alert struct {
	Labels      Labels            // alertname, severity, the rule's labels, the tracked key
	Annotations map[string]string // the rule's annotations, expanded
	StartsAt    time.Time         // when the condition first held (after its `for`)
	// EndsAt is zero while the alert fires and set when it resolves.
	EndsAt time.Time
	// Count is how many occurrences folded into the alert (1 when it
	// fires; repeats inside the rule's suppress window add to it).
	Count uint64
	// Value is the measured figure that crossed the rule's threshold
	// (events, packets, bytes or a rate); 0 for event rules.
	Value float64
	Flow  Flow // the flow whose packet raised it
}

// Name returns the alert's alertname label.
func (a *Alert) Name() string { return a.Labels.Get("alertname") }

// Resolved reports whether the alert has ended.
func (a *Alert) Resolved() bool { return !a.EndsAt.IsZero() }
