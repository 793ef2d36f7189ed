package health

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestComponent: a failure is logged once when it starts and once when
// it ends, with its length, counted once, and read the same way by the
// registry and its metrics.
func TestComponent(t *testing.T) {
	var log bytes.Buffer
	c := New("ipfix:127.0.0.1:4739", slog.New(slog.NewTextHandler(&log, nil)))
	clock := time.Unix(1000, 0)
	c.now = func() time.Time { return clock }
	r := NewRegistry()
	r.Add(c, New("snapshot", nil))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)

	if f := r.Failing(); len(f) != 0 {
		t.Fatalf("new: failing %v", f)
	}
	c.Fail(errors.New("connection refused"))
	clock = clock.Add(1500 * time.Millisecond)
	c.Fail(errors.New("connection reset"))
	f := r.Failing()
	if len(f) != 1 || f[0].Name != c.Name() || f[0].Err.Error() != "connection reset" || !f[0].Since.Equal(time.Unix(1000, 0)) || f[0].Failures != 1 {
		t.Fatalf("failing: %+v", f)
	}
	if s := f[0].String(); !strings.HasPrefix(s, "ipfix:127.0.0.1:4739 failing since 1970-01-01T00:16:40Z") || !strings.HasSuffix(s, ": connection reset") {
		t.Errorf("String: %q", s)
	}
	if up, n := metricsOf(t, reg, c.Name()); up != 0 || n != 1 {
		t.Errorf("metrics while failing: up %v, failures %v", up, n)
	}
	if up, n := metricsOf(t, reg, "snapshot"); up != 1 || n != 0 {
		t.Errorf("metrics of a working one: up %v, failures %v", up, n)
	}
	c.OK()
	c.OK()
	if f := r.Failing(); len(f) != 0 {
		t.Fatalf("recovered: failing %v", f)
	}
	if up, n := metricsOf(t, reg, c.Name()); up != 1 || n != 1 {
		t.Errorf("metrics after recovery: up %v, failures %v", up, n)
	}
	logged := log.String()
	if strings.Count(logged, "level=WARN msg=\"component failing\" component=ipfix:127.0.0.1:4739 err=\"connection refused\"") != 1 ||
		strings.Count(logged, "level=INFO msg=\"component recovered\" component=ipfix:127.0.0.1:4739 after=1.5s") != 1 ||
		strings.Count(logged, "\n") != 2 {
		t.Errorf("logged:\n%s", logged)
	}
	c.Fail(nil)
	if s := c.Status(); s.Failures != 2 || s.Err == nil {
		t.Errorf("a second failure: %+v", s)
	}
}

// metricsOf gathers reg and returns flowmon_component_up and
// flowmon_component_failures_total of the component name.
func metricsOf(t *testing.T, reg *prometheus.Registry, name string) (up, failures float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	up, failures = -1, -1
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() != name {
				continue
			}
			switch mf.GetName() {
			case "flowmon_component_up":
				up = m.GetGauge().GetValue()
			case "flowmon_component_failures_total":
				failures = m.GetCounter().GetValue()
			}
		}
	}
	return up, failures
}

// TestRegistryReplaceRemove: a component of a name taken replaces the
// old one; a removed one is no longer read; a nil registry says nothing
// fails.
func TestRegistryReplaceRemove(t *testing.T) {
	r := NewRegistry()
	a, b := New("alerts:hook", nil), New("alerts:hook", nil)
	a.Fail(errors.New("500"))
	r.Add(a)
	r.Add(b)
	if st := r.Statuses(); len(st) != 1 || st[0].Err != nil {
		t.Fatalf("replaced: %+v", st)
	}
	r.Remove(b)
	if st := r.Statuses(); len(st) != 0 {
		t.Fatalf("removed: %+v", st)
	}
	var nilr *Registry
	nilr.Add(a)
	if nilr.Failing() != nil {
		t.Error("a nil registry says something fails")
	}
}

// TestBackoff: the waits double from Min to Max, each in the upper half
// of its step, and Reset starts again at Min.
func TestBackoff(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	steps := []int64{100, 200, 400, 800, 1000, 1000} // milliseconds
	for round := range 2 {
		for i, s := range steps {
			step := time.Duration(s) * time.Millisecond
			for range 1 {
				d := b.Next()
				if d < step/2 || d > step {
					t.Fatalf("round %d attempt %d: wait %v outside [%v, %v]", round, i, d, step/2, step)
				}
			}
		}
		b.Reset()
	}
	var zero Backoff
	if d := zero.Next(); d != 0 {
		t.Errorf("zero Backoff waits %v", d)
	}
	// The jitter spreads: 200 waits of one step are not all alike.
	seen := map[time.Duration]bool{}
	for range 200 {
		b.Reset()
		seen[b.Next()] = true
	}
	if len(seen) < 100 {
		t.Errorf("200 waits took %d values", len(seen))
	}
}
