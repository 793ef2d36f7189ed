package alerts

import (
	"context"
	"log/slog"
)

// NewLogSink returns a sink that logs each alert to log, with a queue of
// size alerts (1..MaxQueue): the live agent's alerts on its standard
// error when no other output is named, so that they come in the log's
// format (text or JSON) among its other lines. The message is fixed
// ("alert"), at Warn while it fires and Info once resolved; the alert is
// in the attributes: state (FIRING, RESOLVED), alertname, severity, the
// other labels as the group labels, count, value (when not 0), flow
// (AppendText's form, when set), summary, and starts_at or ends_at.
func NewLogSink(name string, log *slog.Logger, size int) Sink {
	o := queueOptions{size: min(max(size, 1), MaxQueue), maxBatch: writeBatch}
	return newQueueSink(name, &logTarget{log: log}, o)
}

type logTarget struct{ log *slog.Logger }

func (t *logTarget) deliver(ctx context.Context, batch []Alert) (int, error) {
	for i := range batch {
		a := &batch[i]
		level, state, at := slog.LevelWarn, "FIRING", slog.Time("starts_at", a.StartsAt.UTC())
		if a.Resolved() {
			level, state, at = slog.LevelInfo, "RESOLVED", slog.Time("ends_at", a.EndsAt.UTC())
		}
		attrs := []slog.Attr{slog.String("state", state), slog.String("alertname", a.Name())}
		if sev := a.Labels.Get("severity"); sev != "" {
			attrs = append(attrs, slog.String("severity", sev))
		}
		var labels []any
		for _, l := range a.Labels {
			if l.Name != "alertname" && l.Name != "severity" {
				labels = append(labels, slog.String(l.Name, l.Value))
			}
		}
		if len(labels) > 0 {
			attrs = append(attrs, slog.Group("labels", labels...))
		}
		attrs = append(attrs, slog.Uint64("count", a.Count))
		if a.Value != 0 {
			attrs = append(attrs, slog.Float64("value", a.Value))
		}
		if a.Flow != (Flow{}) {
			attrs = append(attrs, slog.String("flow", string(appendFlowText(nil, &a.Flow))))
		}
		summary := a.Annotations["summary"]
		if summary == "" {
			summary = a.Annotations["description"]
		}
		if summary != "" {
			attrs = append(attrs, slog.String("summary", summary))
		}
		attrs = append(attrs, at)
		t.log.LogAttrs(ctx, level, "alert", attrs...)
	}
	return len(batch), nil
}

func (t *logTarget) close() error { return nil }
