package pipeline

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/flowmon/flowmon/internal/snapshot"
)

// A live agent that stops writes what its shards know to a snapshot, and
// the next start takes it over, so a restart loses neither the flows'
// TCP states nor their counts: per shard, the ACSM, the dedup window, the
// flow counter's window and the flow table (its open flows, and the ended
// ones whose records still linger). The snapshot holds the structures as
// they are in memory, so it is restored only into a pipeline built the
// same way: the params name every setting that shapes them, and a
// snapshot whose params differ is refused as incompatible.

// params is the canonical description of the pipeline's shape, compared
// byte for byte with a snapshot's.
func (p *Pipeline) params() string {
	var b strings.Builder
	fmt.Fprintf(&b, "engine-state=%d\n", flowStateVersion)
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

// SaveSnapshot writes the shards' state to path (atomically: a reader
// finds the old snapshot or the new one whole) and marks the pipeline so
// that Finish leaves the open flows to the next run; it returns how many
// open flows the snapshot carries. last is the packet time of the last
// packet. The shards must be stopped (RunLive calls it when its feeders
// are done).
func (p *Pipeline) SaveSnapshot(path string, last time.Time) (uint64, error) {
	var sections []snapshot.Section
	var open uint64
	for i, s := range p.shards {
		add := func(name string, data []byte, err error) error {
			if err != nil {
				return fmt.Errorf("snapshot shard %d's %s: %w", i, name, err)
			}
			sections = append(sections, snapshot.Section{Name: fmt.Sprintf("shard%d/%s", i, name), Data: data})
			return nil
		}
		data, err := s.tracker.AppendState(nil)
		if err := add("acsm", data, err); err != nil {
			return 0, err
		}
		if s.dedup != nil {
			data, err := s.dedup.AppendState(nil)
			if err := add("dedup", data, err); err != nil {
				return 0, err
			}
		}
		data, err = s.counter.AppendState(nil)
		if err := add("flowcount", data, err); err != nil {
			return 0, err
		}
		if err := add("flows", s.flows.appendState(nil), nil); err != nil {
			return 0, err
		}
		open += s.flows.openFlows()
	}
	h := snapshot.Header{Saved: time.Now(), PacketTime: last, Params: p.params()}
	if err := snapshot.Write(path, h, sections); err != nil {
		return 0, err
	}
	p.carried = true
	return open, nil
}

// Restored says what RestoreSnapshot took over.
type Restored struct {
	Saved, PacketTime time.Time
	OpenFlows         uint64
}

// RestoreSnapshot takes over the state a previous run saved at path into
// this pipeline, which must not have seen a packet yet. A snapshot that is
// missing, older than maxAge, damaged, or from a pipeline built
// otherwise is refused with an error that says which (the pipeline then
// starts empty, as it was): errors.Is(err, ErrNoSnapshot) for a missing
// one.
func (p *Pipeline) RestoreSnapshot(path string, maxAge time.Duration, now time.Time) (Restored, error) {
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
				n, err := s.flows.restoreState(b)
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
	return Restored{Saved: h.Saved, PacketTime: h.PacketTime, OpenFlows: open}, nil
}

// ErrNoSnapshot is matched by RestoreSnapshot's error when there is no
// snapshot file: a first start, not a problem.
var ErrNoSnapshot = errors.New("no snapshot")

// openFlows is how many flows the table holds that have not ended.
func (t *flowTable) openFlows() (n uint64) {
	for i := range t.meta {
		if t.meta[i].hash != 0 && !t.slots[t.meta[i].idx].ended {
			n++
		}
	}
	return n
}
