package engine

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/dedup"
	"github.com/flowmon/flowmon/internal/flowcount"
)

// Config configures the stages of a pipeline.
type Config struct {
	// Dedup drops capture duplicates before anything counts (NoDedup turns
	// the stage off).
	Dedup   dedup.Config
	NoDedup bool
	// ACSM tracks every flow's TCP state.
	ACSM acsm.Config
	// FlowCount counts packets per flow per window.
	FlowCount flowcount.Options
	// DecodeOnly runs no stage at all: the replay reads, decodes and
	// counts packets by type (flows and conn_states stay empty). It
	// measures the packet path's floor.
	DecodeOnly bool
	// FlowLog, when set, receives one JSON line per flow: when it ends,
	// and for flows still open at the end of the replay.
	FlowLog io.Writer
}

// DefaultConfig is what `flowmon replay` runs without flags.
func DefaultConfig() Config {
	return Config{
		Dedup: dedup.DefaultConfig(),
		// KeepEnded: a flow's last ACK after both FINs must not start a
		// new flow (Zeek keeps a closed connection until it times out).
		ACSM:      acsm.Config{Backend: acsm.BackendKBF, Capacity: 1 << 18, FPRate: 1e-3, KeepEnded: true},
		FlowCount: flowcount.Options{ExpectedFlows: 1 << 18, FPRate: 1e-4},
	}
}

// Pipeline runs one packet at a time through dedup, the ACSM and the flow
// counter. It is owned by one goroutine.
type Pipeline struct {
	dedup   *dedup.Dedup
	tracker *acsm.Tracker
	counter *flowcount.Counter
	flows   *flowTable

	duplicates      uint64
	retransmissions uint64
	unique          uint64
	connStates      map[string]uint64
	pub             published
	decodeOnly      bool
}

// NewPipeline builds the stages from cfg.
func NewPipeline(cfg Config) (*Pipeline, error) {
	p := &Pipeline{connStates: map[string]uint64{}, decodeOnly: cfg.DecodeOnly}
	if cfg.DecodeOnly {
		return p, nil
	}
	var err error
	if !cfg.NoDedup {
		if p.dedup, err = dedup.New(cfg.Dedup); err != nil {
			return nil, fmt.Errorf("build dedup stage: %w", err)
		}
	}
	if p.tracker, err = acsm.New(cfg.ACSM); err != nil {
		return nil, fmt.Errorf("build acsm stage: %w", err)
	}
	if p.counter, err = flowcount.New(cfg.FlowCount); err != nil {
		return nil, fmt.Errorf("build flow counter: %w", err)
	}
	p.flows = newFlowTable(cfg.FlowLog)
	return p, nil
}

// Packet runs one decoded packet through the stages.
func (p *Pipeline) Packet(pk *capture.Packet) {
	if p.decodeOnly {
		return
	}
	if p.dedup != nil {
		switch p.dedup.Check(pk) {
		case dedup.Duplicate:
			p.duplicates++
			return
		case dedup.Retransmission:
			p.retransmissions++
		}
	}
	p.unique++
	ev := p.tracker.Observe(pk)
	p.counter.Add(pk.Hash, pk.Timestamp)
	if ended := p.flows.packet(pk, &ev); ended != "" {
		p.connStates[ended]++
	}
}

// Register registers the pipeline's metrics on reg.
func (p *Pipeline) Register(reg prometheus.Registerer) error {
	if p.decodeOnly {
		return fmt.Errorf("register pipeline metrics: a decode-only pipeline has none")
	}
	if err := reg.Register(&collector{pub: &p.pub}); err != nil {
		return fmt.Errorf("register pipeline metrics: %w", err)
	}
	if err := reg.Register(&stageCollector{dedup: p.dedup, tracker: p.tracker}); err != nil {
		return fmt.Errorf("register stage metrics: %w", err)
	}
	return nil
}

// CCFHandler serves the flow counter's last complete window (GET
// /api/v1/ccf).
func (p *Pipeline) CCFHandler() http.Handler { return flowcount.Handler(p.counter) }

// publish copies the counters metrics read; st is the capture counts so far.
func (p *Pipeline) publish(st *capture.Stats) {
	p.pub.mu.Lock()
	p.pub.capture = *st
	p.pub.unique, p.pub.duplicates, p.pub.retransmissions = p.unique, p.duplicates, p.retransmissions
	if p.counter != nil {
		p.pub.flowcount = p.counter.Stats()
	}
	p.pub.mu.Unlock()
	if p.dedup != nil {
		p.dedup.Publish()
	}
}

// Finish reports the flows still open at the end of the trace (their
// state as the ACSM answers it now) and fills the summary's stage keys.
func (p *Pipeline) Finish(s *Summary, end time.Time) error {
	if p.decodeOnly {
		return nil
	}
	err := p.flows.finish(func(state string) { p.connStates[state]++ })
	p.tracker.Flush(end) // ages to the trace's end and publishes the counters
	s.Flows = p.flows.distinct
	s.UniquePackets = p.unique
	s.Duplicates = p.duplicates
	s.Retransmissions = p.retransmissions
	s.ConnStates = p.connStates
	p.counter.Flush() // the last, partial window becomes the served one
	c := p.tracker.Counts()
	st := p.tracker.Stats()
	s.Anomalies = c.Anomalies
	s.ACSM = acsmSummary(st, c)
	if p.dedup != nil {
		s.DedupMemoryBytes = p.dedup.MemoryBytes()
	}
	return err
}
