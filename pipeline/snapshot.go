package pipeline

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/flowmon/flowmon/internal/snapshot"
	"github.com/flowmon/flowmon/pipeline/flowtable"
)

// A live agent that stops writes what its shards know to a snapshot, and
// the next start takes it over, so a restart loses neither the flows'
// TCP states nor their counts: per shard, the ACSM, the dedup window, the
// flow counter's window and the flow table. At the stop the flows that
// ended are written first, their linger cut short, so the stopping run's
// log and summary hold every connection it saw end, and the snapshot's
// mark comes after their records: a restore that rewinds the log to the
// mark keeps them. Their stragglers, if any come after the restart, start
// new flows, as Zeek's next connection on the 5-tuple would. A periodic
// snapshot (checkpoint.go) is taken while the run goes on: it holds the
// ended flows whose records still linger as well, which a restore then
// writes when their linger ends. The snapshot holds the structures as
// they are in memory, so it is restored only into a pipeline built the
// same way: the params name every setting that shapes them, and a
// snapshot whose params differ is refused as incompatible.

// params is the canonical description of the pipeline's shape, compared
// byte for byte with a snapshot's.
func (p *Pipeline) params() string {
	var b strings.Builder
	fmt.Fprintf(&b, "engine-state=%d\n", flowtable.StateVersion)
	fmt.Fprintf(&b, "arch=%s\n", runtime.GOARCH)
	fmt.Fprintf(&b, "shards=%d\n", len(p.shards))
	fmt.Fprintf(&b, "acsm=%+v\n", p.cfg.ACSM)
	if p.cfg.NoDedup {
		fmt.Fprintf(&b, "dedup=off\n")
	} else {
		fmt.Fprintf(&b, "dedup=%+v\n", p.cfg.Dedup.WithDefaults())
	}
	fmt.Fprintf(&b, "flowcount=%+v\n", p.cfg.FlowCount)
	fmt.Fprintf(&b, "max-flows=%d\n", p.cfg.MaxFlows)
	return b.String()
}

// SaveSnapshot writes the records of the flows that ended, then the
// shards' state to path (atomically: a reader finds the old snapshot or
// the new one whole), and marks the pipeline so that Finish leaves the
// open flows to the next run; it returns how many open flows the snapshot
// carries. last is the packet time of the last packet; mark, when set, is
// called once every record written so far, the ended flows' included, is
// delivered to the sinks, and what it returns is kept in the snapshot
// (Restored.Mark). The shards must be stopped (RunLive calls it when its
// feeders are done).
func (p *Pipeline) SaveSnapshot(path string, last time.Time, mark func() ([]byte, error)) (uint64, error) {
	var sections []snapshot.Section
	var open uint64
	for i, s := range p.shards {
		var err error
		s.flows.EndLingers()
		if s.out != nil {
			s.out.flush()
		}
		if sections, err = s.appendSections(i, sections); err != nil {
			return 0, err
		}
		open += s.flows.OpenFlows()
	}
	sections, err := p.appendMark(sections, mark)
	if err != nil {
		return 0, err
	}
	h := snapshot.Header{Saved: time.Now(), PacketTime: last, Params: p.params()}
	if err := snapshot.Write(path, h, sections); err != nil {
		return 0, err
	}
	p.carried = true
	return open, nil
}

// appendSections appends shard i's state to sections, one section a
// structure, reusing the Data of the sections beyond len(sections) (a
// periodic snapshot keeps its buffers from one to the next). It only
// reads the shard, on the shard's goroutine.
func (s *shard) appendSections(i int, sections []snapshot.Section) ([]snapshot.Section, error) {
	add := func(name string, appendState func([]byte) ([]byte, error)) error {
		var buf []byte
		if n := len(sections); n < cap(sections) {
			buf = sections[:n+1][n].Data[:0]
		}
		data, err := appendState(buf)
		if err != nil {
			return fmt.Errorf("snapshot shard %d's %s: %w", i, name, err)
		}
		sections = append(sections, snapshot.Section{Name: fmt.Sprintf("shard%d/%s", i, name), Data: data})
		return nil
	}
	if err := add("acsm", s.tracker.AppendState); err != nil {
		return sections, err
	}
	if s.dedup != nil {
		if err := add("dedup", s.dedup.AppendState); err != nil {
			return sections, err
		}
	}
	if err := add("flowcount", s.counter.AppendState); err != nil {
		return sections, err
	}
	err := add("flows", func(b []byte) ([]byte, error) { return s.flows.AppendState(b), nil })
	return sections, err
}

// markSection names the snapshot's section that holds the caller's mark.
const markSection = "mark"

// appendMark delivers every record queued so far to the sinks, flushes
// them, and appends the section mark returns (nothing without mark).
func (p *Pipeline) appendMark(sections []snapshot.Section, mark func() ([]byte, error)) ([]snapshot.Section, error) {
	if mark == nil {
		return sections, nil
	}
	if p.sinks != nil {
		p.sinks.flush()
		p.sinks.wait()
	}
	m, err := mark()
	if err != nil {
		return sections, fmt.Errorf("snapshot: mark the flow records: %w", err)
	}
	return append(sections, snapshot.Section{Name: markSection, Data: m}), nil
}

// Restored says what RestoreSnapshot took over.
type Restored struct {
	Saved, PacketTime time.Time
	OpenFlows         uint64
	// Mark is what the saving run's mark returned (SaveSnapshot), nil
	// when it had none: where its records ended when the state was taken.
	Mark []byte
}

// RestoreSnapshot takes over the state a previous run saved at path into
// this pipeline, which must not have seen a packet yet. A snapshot that is
// missing, older than maxAge, damaged, or from a pipeline built
// otherwise is refused with an error that says which (the pipeline then
// starts empty, as it was): errors.Is(err, ErrNoSnapshot) for a missing
// one. A live pipeline counts the outcome in its metrics
// (flowmon_snapshot_restores_total).
func (p *Pipeline) RestoreSnapshot(path string, maxAge time.Duration, now time.Time) (Restored, error) {
	r, err := p.restoreSnapshot(path, maxAge, now)
	if p.ckpt != nil {
		res := restored
		switch {
		case errors.Is(err, ErrNoSnapshot):
			res = noSnapshot
		case err != nil:
			res = refused
		}
		p.ckpt.stats.restores[res].Add(1)
	}
	return r, err
}

func (p *Pipeline) restoreSnapshot(path string, maxAge time.Duration, now time.Time) (Restored, error) {
	h, sections, err := snapshot.Read(path, p.params(), maxAge, now)
	if err != nil {
		var se *snapshot.Error
		if errors.As(err, &se) && se.Reason == snapshot.Missing {
			return Restored{}, fmt.Errorf("%w: %w", ErrNoSnapshot, err)
		}
		return Restored{}, err
	}
	byName := make(map[string][]byte, len(sections))
	for _, s := range sections {
		byName[s.Name] = s.Data
	}
	var open uint64
	for i, s := range p.shards {
		restore := func(name string, into func([]byte) error) error {
			data, ok := byName[fmt.Sprintf("shard%d/%s", i, name)]
			if !ok {
				return fmt.Errorf("snapshot %s: no state of shard %d's %s", path, i, name)
			}
			if err := into(data); err != nil {
				return fmt.Errorf("snapshot %s: shard %d's %s: %w", path, i, name, err)
			}
			return nil
		}
		err := restore("acsm", s.tracker.RestoreState)
		if err == nil && s.dedup != nil {
			err = restore("dedup", s.dedup.RestoreState)
		}
		if err == nil {
			err = restore("flowcount", s.counter.RestoreState)
		}
		if err == nil {
			err = restore("flows", func(b []byte) error {
				n, err := s.flows.RestoreState(b)
				open += n
				return err
			})
		}
		if err != nil {
			// A structure refused its part: what the others took over is
			// undone by building the stages again, empty.
			return Restored{}, errors.Join(err, p.rebuild())
		}
	}
	p.restored = &open
	return Restored{Saved: h.Saved, PacketTime: h.PacketTime, OpenFlows: open, Mark: byName[markSection]}, nil
}

// ErrNoSnapshot is matched by RestoreSnapshot's error when there is no
// snapshot file: a first start, not a problem.
var ErrNoSnapshot = errors.New("no snapshot")
