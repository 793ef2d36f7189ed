package health

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Component is one part's failure record: whether it fails now, since
// when and why, and how many failures it has had. It is safe for
// concurrent use.
type Component struct {
	name string
	log  *slog.Logger
	now  func() time.Time

	mu       sync.Mutex
	err      error     // the current failure's last error; nil while it works
	since    time.Time // when the current failure began
	failures uint64
}

// New returns a working component called name that logs to log (nil:
// nowhere); log may carry attributes that say more of the part (a file,
// an interface).
func New(name string, log *slog.Logger) *Component {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Component{name: name, log: log, now: time.Now}
}

// Name is the component's name.
func (c *Component) Name() string { return c.name }

// Fail records that the part failed with err (nil counts as an unnamed
// failure). The first Fail of a failure logs its start and counts it;
// later ones only keep err as the failure's latest error.
func (c *Component) Fail(err error) {
	if err == nil {
		err = errFailed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.since = c.now()
		c.failures++
		c.log.Warn("component failing", "component", c.name, "err", err)
	}
	c.err = err
}

// OK records that the part works. The first OK after a failure logs its
// end with how long it lasted and its last error.
func (c *Component) OK() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return
	}
	c.log.Info("component recovered", "component", c.name, "after", c.now().Sub(c.since).Round(time.Millisecond).String(), "err", c.err)
	c.err = nil
}

// Err is the current failure's latest error, nil while the part works.
func (c *Component) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Failing says whether the part fails now.
func (c *Component) Failing() bool { return c.Err() != nil }

// Status is a component's state at one instant.
type Status struct {
	Name string
	// Err is the current failure's latest error, nil while it works.
	Err error
	// Since is when the current failure began (zero while it works).
	Since time.Time
	// Failures counts the failures started.
	Failures uint64
}

// Status returns the component's state.
func (c *Component) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Status{Name: c.name, Err: c.err, Failures: c.failures}
	if c.err != nil {
		s.Since = c.since
	}
	return s
}

// String says what fails and since when, as /healthz does:
// "NAME failing since 2006-01-02T15:04:05Z (3s): ERR".
func (s Status) String() string {
	if s.Err == nil {
		return s.Name + " ok"
	}
	return fmt.Sprintf("%s failing since %s (%s): %v", s.Name, s.Since.UTC().Format(time.RFC3339),
		time.Since(s.Since).Round(time.Second), s.Err)
}

var errFailed = failedError{}

type failedError struct{}

func (failedError) Error() string { return "failed" }

// Registry holds the components that health reads, and exports them as
// a prometheus.Collector. The zero value is not usable: use NewRegistry.
// A nil *Registry takes no components and says nothing fails, so parts
// built without one (a replay's) still keep their own records.
type Registry struct {
	mu    sync.Mutex
	comps []*Component
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Add adds components; a component whose name is taken replaces the one
// holding it (a part made again, as an alert sink by a reload).
func (r *Registry) Add(cs ...*Component) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		if i := slices.IndexFunc(r.comps, func(o *Component) bool { return o.name == c.name }); i >= 0 {
			r.comps[i] = c
			continue
		}
		r.comps = append(r.comps, c)
	}
}

// Remove removes components (those of parts gone, as alert sinks a
// reload dropped).
func (r *Registry) Remove(cs ...*Component) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.comps = slices.DeleteFunc(r.comps, func(o *Component) bool { return slices.Contains(cs, o) })
}

// Statuses returns every component's state, sorted by name.
func (r *Registry) Statuses() []Status {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	comps := slices.Clone(r.comps)
	r.mu.Unlock()
	out := make([]Status, len(comps))
	for i, c := range comps {
		out[i] = c.Status()
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Failing returns the state of each component failing now, by name.
func (r *Registry) Failing() []Status {
	return slices.DeleteFunc(r.Statuses(), func(s Status) bool { return s.Err == nil })
}

var (
	descUp = prometheus.NewDesc("flowmon_component_up",
		"1 while a part of the agent works, 0 while it fails (/healthz names it): a record or alert sink, an IPFIX collector, the periodic snapshot, a capture source, the web config file, the kernel's drops.",
		[]string{"component"}, nil)
	descFailures = prometheus.NewDesc("flowmon_component_failures_total",
		"Failures a part of the agent started (each logged when it starts and ends).", []string{"component"}, nil)
)

// Describe implements prometheus.Collector.
func (r *Registry) Describe(ch chan<- *prometheus.Desc) {
	ch <- descUp
	ch <- descFailures
}

// Collect implements prometheus.Collector.
func (r *Registry) Collect(ch chan<- prometheus.Metric) {
	for _, s := range r.Statuses() {
		up := 1.0
		if s.Err != nil {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, s.Name)
		ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, float64(s.Failures), s.Name)
	}
}
