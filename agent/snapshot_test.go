package agent

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/snapshot"
	"github.com/flowmon/flowmon/pipeline"
)

// idleSource is a live source with no packets.
type idleSource struct {
	capture.NoIface
	st capture.Stats
}

func (s *idleSource) Next(*capture.Packet) error             { return io.EOF }
func (s *idleSource) Stats() *capture.Stats                  { return &s.st }
func (s *idleSource) Close() error                           { return nil }
func (s *idleSource) SetDecodeOptions(capture.DecodeOptions) {}

// TestRefusedSnapshotKeptAside: a start that refuses its snapshot says
// so and renames the file to FILE.rejected, replacing an older one, so
// that the run's snapshots do not write over it; a damaged version field
// reads as damage.
func TestRefusedSnapshotKeptAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.snap")
	if err := snapshot.Write(path, snapshot.Header{Saved: time.Now(), Params: "other"}, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copy(data[8:], "[ZZZ") // the version field
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".rejected", []byte("an older one"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := pipeline.DefaultConfig()
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 1<<10, 1<<10, 1<<10
	pl, err := pipeline.NewLivePipeline(cfg, []capture.LiveSource{&idleSource{}})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if m := restoreSnapshot(pl, path, time.Hour, slog.New(slog.NewTextHandler(&log, nil))); m != nil {
		t.Errorf("a refused snapshot gave the mark %x", m)
	}
	if l := log.String(); !strings.Contains(l, "snapshot refused") || !strings.Contains(l, "kept as "+path+".rejected") ||
		!strings.Contains(l, "damaged: checksum mismatch") {
		t.Errorf("the start says %q", l)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the refused snapshot is still at %s: %v", path, err)
	}
	if kept, err := os.ReadFile(path + ".rejected"); err != nil || !bytes.Equal(kept, data) {
		t.Errorf("%s.rejected is not the refused file: %v", path, err)
	}
}
