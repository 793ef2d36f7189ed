package alerts

import (
	"context"
	"errors"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/internal/health"
)

// Defaults of an Alertmanager sink.
const (
	DefaultResendInterval = time.Minute
	DefaultMaxFiring      = 10000
)

// amBatch is how many alerts one POST to Alertmanager carries at most.
const amBatch = 64

type amOptions struct {
	urls         []string // each an Alertmanager's base URL
	resendEvery  time.Duration
	maxFiring    int
	generatorURL string
}

// alertmanagerSink posts alerts to Alertmanager's API v2 (POST
// <url>/api/v2/alerts, a JSON array of postableAlert) at every URL, each
// with its own queue, so an Alertmanager that is down holds back none of
// the others. It keeps the firing alerts, keyed by label set, and every
// resend interval posts them all again to each Alertmanager, which would
// otherwise resolve them after its resolve_timeout; a resolved alert is
// posted once, with its endsAt, and forgotten.
//
// The times are packet time: a replay's alerts may have started years
// ago. So a firing alert is posted without endsAt and Alertmanager sets
// its own (now plus resolve_timeout), renewed by each resend; a resolved
// one is posted with its startsAt and endsAt as they are, in the past,
// which Alertmanager takes as resolved.
type alertmanagerSink struct {
	name      string
	targets   []*queue
	maxFiring int

	mu     sync.Mutex
	firing map[string]Alert // by labelsKey
	closed bool

	dropped atomic.Uint64 // firing set full, or closed
}

func newAlertmanagerSink(name string, ao amOptions, ho httpOptions, o queueOptions) (Sink, error) {
	if len(ao.urls) == 0 {
		return nil, errors.New("alertmanager sink: no URL")
	}
	h, err := newHTTPClient(ho)
	if err != nil {
		return nil, err
	}
	s := &alertmanagerSink{name: name, maxFiring: ao.maxFiring, firing: make(map[string]Alert)}
	if s.maxFiring <= 0 {
		s.maxFiring = DefaultMaxFiring
	}
	o.maxBatch = amBatch
	o.resend = s.snapshot
	o.resendEvery = ao.resendEvery
	if o.resendEvery <= 0 {
		o.resendEvery = DefaultResendInterval
	}
	for _, u := range ao.urls {
		t := &amTarget{url: strings.TrimSuffix(u, "/") + "/api/v2/alerts", h: h, generatorURL: ao.generatorURL}
		s.targets = append(s.targets, newQueue(name+":"+redact(u), t, o))
	}
	return s, nil
}

func redact(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return u
}

func (s *alertmanagerSink) Name() string { return s.name }

// Send records a in the firing set (or removes it when resolved) and
// queues it for every Alertmanager. A new firing alert when the set holds
// maxFiring is dropped (counted) rather than posted once and left to
// expire; a resolved one is posted even if its firing was dropped. It
// reports whether every Alertmanager's queue took a.
func (s *alertmanagerSink) Send(a Alert) bool {
	a = cloneAlert(a)
	a.Labels.Sort()
	key := labelsKey(a.Labels)
	s.mu.Lock()
	defer s.mu.Unlock() // held across the pushes: the queues see the set's order
	if s.closed {
		s.dropped.Add(1)
		return false
	}
	if a.Resolved() {
		delete(s.firing, key)
	} else if _, ok := s.firing[key]; ok || len(s.firing) < s.maxFiring {
		s.firing[key] = a
	} else {
		s.dropped.Add(1)
		return false
	}
	ok := true
	for _, q := range s.targets {
		ok = q.push(a) && ok
	}
	return ok
}

// labelsKey is the label set as one string, names and values separated
// by bytes that valid UTF-8 never holds.
func labelsKey(ls Labels) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Name)
		b.WriteByte(0xff)
		b.WriteString(l.Value)
		b.WriteByte(0xfe)
	}
	return b.String()
}

// snapshot returns the firing alerts, for a queue's resend.
func (s *alertmanagerSink) snapshot() []Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Alert, 0, len(s.firing))
	for _, a := range s.firing {
		out = append(out, a)
	}
	return out
}

// Close closes every Alertmanager's queue at once, each flushing until
// ctx ends. The firing alerts are not resolved: they still fire, and
// Alertmanager resolves them after its resolve_timeout.
func (s *alertmanagerSink) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	errs := make([]error, len(s.targets))
	var wg sync.WaitGroup
	for i, q := range s.targets {
		wg.Go(func() { errs[i] = q.close(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Stats sums the Alertmanagers' queues: an alert posted to two counts two
// Sent, and a resend counts again.
// Health returns each Alertmanager's queue's component.
func (s *alertmanagerSink) Health() []*health.Component {
	var out []*health.Component
	for _, q := range s.targets {
		out = append(out, q.health)
	}
	return out
}

func (s *alertmanagerSink) Stats() SinkStats {
	st := SinkStats{Dropped: s.dropped.Load()}
	for _, q := range s.targets {
		st = st.Add(q.stats())
	}
	return st
}

type amTarget struct {
	url          string
	h            *httpClient
	generatorURL string
	buf          []byte
}

func (t *amTarget) deliver(ctx context.Context, batch []Alert) (int, error) {
	t.buf = append(t.buf[:0], '[')
	for i := range batch {
		if i > 0 {
			t.buf = append(t.buf, ',')
		}
		t.buf = appendPostableAlert(t.buf, &batch[i], t.generatorURL)
	}
	t.buf = append(t.buf, ']')
	if err := t.h.post(ctx, t.url, t.buf); err != nil {
		// A 400 means Alertmanager refused at least one alert of the batch
		// (it keeps the valid ones): the batch is counted dropped.
		return 0, err
	}
	return len(batch), nil
}

func (t *amTarget) close() error {
	t.h.close()
	return nil
}

// appendPostableAlert appends a as Alertmanager's postableAlert:
// {"labels":{..},"annotations":{..},"startsAt":..,"endsAt":..,"generatorURL":..}.
// endsAt is left out while a fires (see alertmanagerSink); generatorURL
// when empty. The annotations gain count, value (when not 0) and flow
// (AppendText's spelling), unless the rule set its own of those names,
// so that a notification can say what was seen.
func appendPostableAlert(dst []byte, a *Alert, generatorURL string) []byte {
	dst = append(dst, `{"labels":`...)
	dst = appendLabels(dst, a.Labels)
	dst = append(dst, `,"annotations":`...)
	dst = appendJSONMap(dst, amAnnotations(a))
	dst = append(dst, `,"startsAt":`...)
	dst = appendJSONTime(dst, a.StartsAt)
	if a.Resolved() {
		dst = append(dst, `,"endsAt":`...)
		dst = appendJSONTime(dst, a.EndsAt)
	}
	if generatorURL != "" {
		dst = append(dst, `,"generatorURL":`...)
		dst = appendJSONString(dst, generatorURL)
	}
	return append(dst, '}')
}

func amAnnotations(a *Alert) map[string]string {
	m := make(map[string]string, len(a.Annotations)+3)
	m["count"] = strconv.FormatUint(a.Count, 10)
	if a.Value != 0 {
		m["value"] = strconv.FormatFloat(a.Value, 'g', -1, 64)
	}
	if a.Flow != (Flow{}) {
		m["flow"] = string(appendFlowText(nil, &a.Flow))
	}
	maps.Copy(m, a.Annotations)
	return m
}
