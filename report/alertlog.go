package report

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/internal/health"
)

// MaxAlerts is how many alerts a report draws: a replay's alerts are
// counted by rule however many there are, and the first MaxAlerts are
// kept with their times, so a flood of them keeps the report's memory
// and size bounded.
const MaxAlerts = 1000

// Alert is one alert on the report's timeline.
type Alert struct {
	Rule     string    `json:"rule"`
	Severity string    `json:"severity"`
	Key      string    `json:"key"` // the labels beside alertname and severity
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"` // zero while it fires at the end of the replay
	Value    float64   `json:"value"`
	Count    uint64    `json:"count"` // occurrences folded into it, as far as its resolution says
}

// alertLog is the alerts kept and counted (under Collector.mu).
type alertLog struct {
	kept   []Alert
	byRule map[string]uint64
	open   map[string]int // a kept firing alert's identity to its index
}

// alertSink is the collector as an alerts.Sink.
type alertSink Collector

func (c *alertSink) Name() string                { return "report" }
func (c *alertSink) Close(context.Context) error { return nil }

// Health is none: the sink keeps alerts in memory and cannot fail.
func (c *alertSink) Health() []*health.Component { return nil }
func (c *alertSink) Stats() alerts.SinkStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n uint64
	for _, v := range c.alerts.byRule {
		n += v
	}
	return alerts.SinkStats{Sent: n}
}

// Send keeps a firing alert (the manager sends each once, as its rule's
// count in the summary counts it) and sets the end of the one a
// resolution names.
func (c *alertSink) Send(a alerts.Alert) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := &c.alerts
	if l.byRule == nil {
		l.byRule, l.open = map[string]uint64{}, map[string]int{}
	}
	key := alertKey(&a)
	id := a.Name() + "\x00" + key + "\x00" + strconv.FormatInt(a.StartsAt.UnixNano(), 10)
	if a.Resolved() {
		if i, ok := l.open[id]; ok {
			l.kept[i].End, l.kept[i].Count, l.kept[i].Value = a.EndsAt, a.Count, a.Value
			delete(l.open, id)
		}
		return true
	}
	l.byRule[a.Name()]++
	if len(l.kept) < MaxAlerts {
		l.open[id] = len(l.kept)
		l.kept = append(l.kept, Alert{Rule: a.Name(), Severity: a.Labels.Get("severity"), Key: key,
			Start: a.StartsAt, Value: a.Value, Count: a.Count})
	}
	return true
}

// alertKey spells the labels that tell a rule's alerts apart.
func alertKey(a *alerts.Alert) string {
	var b strings.Builder
	for _, l := range a.Labels {
		if l.Name == "alertname" || l.Name == "severity" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(l.Name + "=" + l.Value)
	}
	return b.String()
}
