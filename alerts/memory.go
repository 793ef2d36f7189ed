package alerts

import (
	"context"
	"slices"
	"sync"

	"github.com/flowmon/flowmon/internal/health"
)

// Memory is a sink that keeps every alert it is sent, in order, for
// programs that judge alerts rather than deliver them (rule tests,
// evaluations). It never drops and never blocks for long; it is unbounded,
// so it is for traces of known size, not for an agent's lifetime.
type Memory struct {
	name string
	mu   sync.Mutex
	all  []Alert
}

// NewMemory returns an empty Memory sink named name.
func NewMemory(name string) *Memory { return &Memory{name: name} }

// Name returns the sink's name.
func (m *Memory) Name() string { return m.name }

// Close does nothing: nothing is queued.
func (m *Memory) Close(context.Context) error { return nil }

// Stats counts every alert kept as sent.
func (m *Memory) Stats() SinkStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return SinkStats{Sent: uint64(len(m.all))}
}

// Health returns nothing: a Memory never fails.
func (m *Memory) Health() []*health.Component { return nil }

// Send keeps a.
func (m *Memory) Send(a Alert) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.all = append(m.all, a)
	return true
}

// Firing returns the alerts sent as firing (not their resolutions), in
// the order they fired.
func (m *Memory) Firing() []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Alert
	for _, a := range m.all {
		if !a.Resolved() {
			out = append(out, a)
		}
	}
	return out
}

// All returns every alert sent, firing and resolved.
func (m *Memory) All() []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.all)
}
