package alerts

import (
	"context"
	"fmt"

	"github.com/flowmon/flowmon/internal/health"
)

// A Sink delivers alerts somewhere: a terminal, a file, a webhook, an
// Alertmanager. Every sink of this package queues what it is given and
// delivers it from its own goroutine (queue.go), so its methods are safe
// for concurrent use and Send never waits for the destination.
type Sink interface {
	// Name is the sink's configured name, unique among a Config's sinks.
	Name() string
	// Send queues a copy of a (its labels and annotations too, so the
	// caller may reuse them) and returns at once; it reports false, and
	// counts a drop, when the queue is full or the sink is closed. It
	// never blocks: the caller is on a packet path.
	Send(a Alert) bool
	// Close delivers what is queued until ctx ends, then stops the sink's
	// goroutine and releases its file or connections. It returns an error
	// naming how many alerts were left undelivered, if any. Close may be
	// called more than once; Send after Close drops.
	Close(ctx context.Context) error
	// Stats returns the sink's counts so far.
	Stats() SinkStats
	// Health returns the components of the sink's destinations
	// ("alerts:NAME"; an Alertmanager sink's, "alerts:NAME:URL", one
	// for each URL), each failing while its deliveries fail, for the
	// agent's health registry.
	Health() []*health.Component
}

// SinkStats are a sink's counts, which the engine exports as metrics.
type SinkStats struct {
	// Sent is how many alerts reached the destination (an Alertmanager
	// sink counts each target and each resend).
	Sent uint64
	// Failed is how many delivery attempts failed (an attempt carries one
	// alert to a webhook, a batch of up to 64 to the others); a
	// destination that is down adds one per retry.
	Failed uint64
	// Dropped is how many alerts will never be delivered: the queue was
	// full, the sink closed, the destination rejected them for good (HTTP
	// 4xx other than 408 and 429), or Alertmanager's firing set was full.
	Dropped uint64
	// Queued is how many alerts wait in the queue now, the one being
	// delivered included.
	Queued uint64
	// Failing is the error of the failure in progress (the attempts
	// since the last that worked have all failed), nil while it delivers.
	Failing error
}

// Add returns the sum of s and o (Queued included), for a sink made of
// several queues, failing with the first one's error that is.
func (s SinkStats) Add(o SinkStats) SinkStats {
	failing := s.Failing
	if failing == nil {
		failing = o.Failing
	}
	return SinkStats{s.Sent + o.Sent, s.Failed + o.Failed, s.Dropped + o.Dropped, s.Queued + o.Queued, failing}
}

// Format is how a writer or file sink spells an alert.
type Format uint8

const (
	// FormatJSON is one AppendJSON object a line (JSON lines).
	FormatJSON Format = iota
	// FormatText is one AppendText line an alert.
	FormatText
)

func (f Format) String() string {
	switch f {
	case FormatJSON:
		return "json"
	case FormatText:
		return "text"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat returns the Format named s ("json" or "text").
func ParseFormat(s string) (Format, error) {
	switch s {
	case "json":
		return FormatJSON, nil
	case "text":
		return FormatText, nil
	}
	return 0, fmt.Errorf("unknown format %q (want json or text)", s)
}

// appendLine appends a in format f and a newline.
func (f Format) appendLine(dst []byte, a *Alert) []byte {
	if f == FormatText {
		dst = AppendText(dst, a)
	} else {
		dst = AppendJSON(dst, a)
	}
	return append(dst, '\n')
}
