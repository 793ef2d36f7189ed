// Package engine wires flowmon's stages into a pipeline: packets from a
// source are decoded, dropped if they are capture duplicates, then fed to
// the stages that count them, and the result is summarised.
package engine

import (
	"context"
	"errors"
	"fmt"
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
	// Context, when set, stops the replay when done (an operator's
	// interrupt): the summary holds what was read, and the error says so.
	Context context.Context
}

// ErrStopped is returned (wrapped) by a replay whose Context was done.
var ErrStopped = errors.New("replay stopped")

// ErrNoInput is matched (errors.Is) by the error of a replay that could
// not read one packet: the error is then the whole result, and the
// summary is nil. Its message is the reader's alone.
var ErrNoInput = errors.New("no packet read")

type noInputError struct{ err error }

func (e noInputError) Error() string        { return e.err.Error() }
func (e noInputError) Unwrap() error        { return e.err }
func (e noInputError) Is(target error) bool { return target == ErrNoInput }

// Replay reads the files in order through the pipeline and returns the
// summary. A damaged file ends the replay: the summary holds everything
// read before the damage, and the error says where it was. When the
// first file cannot be read at all, the summary is nil and the error
// (wrapping ErrNoInput) says why.
func Replay(files []string, opt ReplayOptions) (*Summary, error) {
	start := time.Now()
	pl := opt.Pipeline
	var err error
	if pl == nil {
		if pl, err = NewPipeline(opt.Config); err != nil {
			return nil, err
		}
	}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	s := &Summary{Files: files}
	var total capture.Stats
	for _, name := range files {
		var st *capture.Stats
		st, err = replayFile(ctx, name, s, pl, &total, opt.Progress)
		if st != nil {
			total.Add(st)
		}
		if err != nil {
			if total.Packets == 0 && !errors.Is(err, ErrStopped) {
				pl.Finish(s, s.TraceEnd) // stops the workers
				return nil, noInputError{err}
			}
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

func replayFile(ctx context.Context, name string, s *Summary, pl *Pipeline, before *capture.Stats, prog *Progress) (*capture.Stats, error) {
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
			if ctx.Err() != nil {
				return r.Stats(), fmt.Errorf("%w after %d packets of %s: %w", ErrStopped, n, name, context.Cause(ctx))
			}
		}
		if prog != nil && n&4095 == 0 {
			read, all := r.Progress()
			prog.BytesRead.Store(read)
			prog.BytesAll.Store(all)
			prog.Packets.Store(r.Stats().Packets)
		}
	}
}
