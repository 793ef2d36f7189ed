// Package engine wires flowmon's stages into a pipeline: packets from a
// source are decoded, dropped if they are capture duplicates, then fed to
// the stages that count them, and the result is summarised.
package engine

import (
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/capture"
)

// Progress is read by another goroutine while a replay runs.
type Progress struct {
	Packets   atomic.Uint64
	BytesRead atomic.Int64 // of the current file
	BytesAll  atomic.Int64 // size of the current file, -1 when unknown
}

// ReplayOptions configure a replay.
type ReplayOptions struct {
	Config   Config
	Progress *Progress // may be nil
	// Pipeline, when set, is used instead of one built from Config (a
	// caller that serves the pipeline's metrics builds it first).
	Pipeline *Pipeline
}

// Replay reads the files in order through the pipeline and returns the
// summary. A damaged file ends the replay: the summary holds everything
// read before the damage, and the error says where it was.
func Replay(files []string, opt ReplayOptions) (*Summary, error) {
	start := time.Now()
	pl := opt.Pipeline
	var err error
	if pl == nil {
		if pl, err = NewPipeline(opt.Config); err != nil {
			return nil, err
		}
	}
	s := &Summary{Files: files}
	var total capture.Stats
	for _, name := range files {
		var st *capture.Stats
		st, err = replayFile(name, s, pl, &total, opt.Progress)
		if st != nil {
			total.Add(st)
		}
		if err != nil {
			s.ReadError = err.Error()
			break
		}
	}
	s.fill(&total)
	pl.publish(&total)
	if ferr := pl.Finish(s, s.TraceEnd); ferr != nil && err == nil {
		err = ferr
	}
	s.RunSeconds = time.Since(start).Seconds()
	if s.RunSeconds > 0 {
		s.PacketsPerSecond = float64(s.Packets) / s.RunSeconds
	}
	return s, err
}

func replayFile(name string, s *Summary, pl *Pipeline, before *capture.Stats, prog *Progress) (*capture.Stats, error) {
	r, err := capture.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var p capture.Packet
	var n uint64
	for {
		err := r.Next(&p)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return r.Stats(), err
		}
		if s.TraceStart.IsZero() || p.Timestamp.Before(s.TraceStart) {
			s.TraceStart = p.Timestamp
		}
		if p.Timestamp.After(s.TraceEnd) {
			s.TraceEnd = p.Timestamp
		}
		pl.Packet(&p)
		if n++; n%publishEvery == 0 {
			sum := *before
			sum.Add(r.Stats())
			pl.publish(&sum)
		}
		if prog != nil && n&4095 == 0 {
			read, all := r.Progress()
			prog.BytesRead.Store(read)
			prog.BytesAll.Store(all)
			prog.Packets.Store(r.Stats().Packets)
		}
	}
}
