package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// slowPart is a part that takes its time (a millisecond every 50
// packets), so that periodic snapshots fall in the middle of the trace,
// and that, at its copyAt-th packet of the file, copies the snapshot on
// disk aside as a crash at that moment would leave it.
type slowPart struct {
	*part
	snap, crash string
	copyAt      int
	copied      bool
}

func (p *slowPart) Next(pk *capture.Packet) error {
	if p.n%50 == 0 {
		time.Sleep(time.Millisecond)
	}
	if p.crash != "" && !p.copied && p.n >= p.copyAt {
		if b, err := os.ReadFile(p.snap); err == nil {
			os.WriteFile(p.crash, b, 0o600)
			p.copied = true
		}
	}
	return p.part.Next(pk)
}

// TestCheckpointIsOneInstant runs a live pipeline with periodic snapshots
// and takes the snapshot a crash in the middle of the trace would have
// left, with its mark: the flow log's length and each source's position
// at the snapshot's instant. A second run restores it, keeps the log up
// to the mark (as the agent's rewind does), and reads each source on from
// its position: its records and the first run's before the mark are
// exactly those of one run through the whole trace, none lost and none
// written twice. For each backend, on one and two shards.
func TestCheckpointIsOneInstant(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 3000, Seed: 21, Duration: 10 * time.Second})
	total := tracePackets(t, trace)
	for _, b := range []acsm.BackendKind{acsm.BackendDLeft, acsm.BackendExact} {
		for _, shards := range []int{1, 2} {
			t.Run(b.String()+"/"+string(rune('0'+shards)), func(t *testing.T) {
				var whole bytes.Buffer
				runParts(t, liveConfig(b, &whole), trace, 0, -1, shards, "")

				dir := t.TempDir()
				snap, crash := filepath.Join(dir, "state.snap"), filepath.Join(dir, "crash.snap")
				var log bytes.Buffer
				parts := make([]*slowPart, shards)
				srcs := make([]capture.LiveSource, shards)
				for i := range parts {
					parts[i] = &slowPart{part: openPart(t, trace, 0, -1, i, shards), snap: snap}
					srcs[i] = parts[i]
				}
				parts[0].crash, parts[0].copyAt = crash, total*6/10
				pl, err := NewLivePipeline(liveConfig(b, &log), srcs)
				if err != nil {
					t.Fatal(err)
				}
				marks := 0
				mark := func() ([]byte, error) {
					marks++
					m := binary.LittleEndian.AppendUint64(nil, uint64(log.Len()))
					for _, p := range parts {
						m = binary.LittleEndian.AppendUint64(m, uint64(p.n))
					}
					return m, nil
				}
				opt := LiveOptions{Snapshot: snap, SnapshotEvery: 5 * time.Millisecond, Mark: mark}
				if _, err := RunLive(context.Background(), pl, opt); err != nil {
					t.Fatal(err)
				}
				if !parts[0].copied {
					t.Fatalf("no periodic snapshot within %d of %d packets (%d marks)", total*6/10, total, marks)
				}
				if st := &pl.ckpt.stats; st.written.Load() == 0 || st.failed.Load() != 0 {
					t.Errorf("periodic snapshots: %d written, %d failed", st.written.Load(), st.failed.Load())
				}

				// The restart after the crash: the mark says where each
				// source and the log stood.
				_, secs, err := snapshot.Read(crash, pl.params(), time.Hour, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				var m []byte
				for _, s := range secs {
					if s.Name == markSection {
						m = s.Data
					}
				}
				if len(m) != 8*(1+shards) {
					t.Fatalf("mark of %d bytes", len(m))
				}
				kept := int(binary.LittleEndian.Uint64(m))
				var log2 bytes.Buffer
				log2.Write(log.Bytes()[:kept])
				inside := false
				pl2srcs := make([]capture.LiveSource, shards)
				for i := range shards {
					from := int(binary.LittleEndian.Uint64(m[8*(1+i):]))
					inside = inside || (from > 0 && from < total)
					pl2srcs[i] = openPart(t, trace, from, -1, i, shards)
				}
				t.Logf("%d periodic snapshots; the crash's: log at %d of %d bytes, source 0 at packet %d of %d",
					marks, kept, log.Len(), binary.LittleEndian.Uint64(m[8:]), total)
				if !inside {
					t.Fatalf("the snapshot is not in the middle of the trace: mark %x", m)
				}
				pl2, err := NewLivePipeline(liveConfig(b, &log2), pl2srcs)
				if err != nil {
					t.Fatal(err)
				}
				r, err := pl2.RestoreSnapshot(crash, time.Hour, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(r.Mark, m) {
					t.Fatalf("restored mark %x, saved %x", r.Mark, m)
				}
				if _, err := RunLive(context.Background(), pl2, LiveOptions{}); err != nil {
					t.Fatal(err)
				}
				g, w := sortedLines(log2.String()), sortedLines(whole.String())
				if !slices.Equal(g, w) {
					lost, twice := 0, 0
					for i, l := range g {
						if i > 0 && g[i-1] == l {
							twice++
						}
					}
					for _, l := range w {
						if _, ok := slices.BinarySearch(g, l); !ok {
							lost++
						}
					}
					t.Errorf("records after the crash and restart: %d, of one run: %d (%d of its not there, %d written twice)", len(g), len(w), lost, twice)
				}
			})
		}
	}
}

// TestCheckpointFailureReported: a periodic snapshot that cannot be
// written is counted and reported until one works again, and the run
// goes on.
func TestCheckpointFailureReported(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 500, Seed: 5, Duration: 2 * time.Second})
	dir := t.TempDir()
	snap := filepath.Join(dir, "gone", "state.snap") // no such directory yet
	p := &slowPart{part: openPart(t, trace, 0, -1, 0, 1)}
	pl, err := NewLivePipeline(liveConfig(acsm.BackendDLeft, &bytes.Buffer{}), []capture.LiveSource{p})
	if err != nil {
		t.Fatal(err)
	}
	c := pl.ckpt
	c.n = 1
	opt := LiveOptions{Snapshot: snap}
	f := &feeder{p: pl, s: pl.shards[0], src: p, ckpt: c}
	// One checkpoint by hand, the feeder pausing as it would between batches.
	done := make(chan struct{})
	go func() { defer close(done); pl.checkpointOnce(c, []*feeder{f}, opt) }()
	for !c.pending.Load() {
		time.Sleep(time.Millisecond)
	}
	f.pause(c)
	<-done
	if pl.SnapshotFailing() == nil || c.stats.failed.Load() != 1 {
		t.Fatalf("failing %v, %d failed", pl.SnapshotFailing(), c.stats.failed.Load())
	}
	if err := os.Mkdir(filepath.Dir(snap), 0o700); err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() { defer close(done); pl.checkpointOnce(c, []*feeder{f}, opt) }()
	for !c.pending.Load() {
		time.Sleep(time.Millisecond)
	}
	f.pause(c)
	<-done
	if err := pl.SnapshotFailing(); err != nil || c.stats.written.Load() != 1 {
		t.Fatalf("failing %v, %d written", err, c.stats.written.Load())
	}
	if _, _, err := snapshot.Read(snap, pl.params(), time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
}
