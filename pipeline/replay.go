// Package engine wires flowmon's stages into a pipeline: packets from a
// source are decoded, dropped if they are capture duplicates, then fed to
// the stages that count them, and the result is summarised.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
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

// ReplayOptions configure a run.
type ReplayOptions struct {
	Config   Config
	Progress *Progress // may be nil
	// Pipeline, when set, is used instead of one built from Config (a
	// caller that serves the pipeline's metrics builds it first).
	Pipeline *Pipeline
	// Filter, when set, keeps only the frames it accepts (the replay's
	// --filter); the others are counted in the summary's
	// filtered_packets and nowhere else.
	Filter *capture.Filter
}

// ErrStopped is returned (wrapped) by a run whose context was done.
var ErrStopped = errors.New("replay stopped")

// ErrChanged is matched (errors.Is) by the error of a replay whose capture
// file was cut shorter while it was read.
var ErrChanged = errors.New("capture file changed while read")

// ErrNoInput is matched (errors.Is) by the error of a replay that could
// not read one packet: the error is then the whole result, and the
// summary is nil. Its message is the reader's alone.
var ErrNoInput = errors.New("no packet read")

type noInputError struct{ err error }

func (e noInputError) Error() string        { return e.err.Error() }
func (e noInputError) Unwrap() error        { return e.err }
func (e noInputError) Is(target error) bool { return target == ErrNoInput }

// Replay reads the files in order through the pipeline (Run on
// capture.OpenFiles) and returns the summary.
func Replay(ctx context.Context, files []string, opt ReplayOptions) (*Summary, error) {
	src, err := capture.OpenFiles(files...)
	if err != nil {
		return nil, noInputError{err}
	}
	defer src.Close()
	src.SetFilter(opt.Filter)
	s, err := Run(ctx, src, opt)
	if s != nil {
		s.Files = files
	}
	return s, err
}

// Run reads src through the pipeline until its end, damage, or ctx is
// done, and returns the summary. Damage ends the run: the summary holds
// everything read before it, and the error says where it was. When not
// one packet could be read, the summary is nil and the error (matching
// ErrNoInput) says why. Run does not close src.
func Run(ctx context.Context, src capture.Source, opt ReplayOptions) (*Summary, error) {
	start := time.Now()
	pl := opt.Pipeline
	var err error
	if pl == nil {
		if pl, err = NewPipeline(opt.Config); err != nil {
			return nil, err
		}
	}
	setDecode(src, pl.cfg.Decode)
	if pl.kernel != nil {
		ft, ok := src.(capture.FrameTakerSetter)
		if !ok {
			_ = pl.Finish(&Summary{}, time.Time{})
			return nil, errNoFrames
		}
		ft.SetFrameTaker(pl)
	}
	if err := attachDefrag(&pl.cfg, src); err != nil {
		_ = pl.Finish(&Summary{}, time.Time{}) // stops the workers; err says why
		return nil, err
	}
	s := &Summary{}
	err = feed(ctx, src, s, pl, opt.Progress)
	st := src.Stats()
	if err != nil {
		if st.Packets == 0 && !errors.Is(err, ErrStopped) {
			_ = pl.Finish(s, s.TraceEnd) // stops the workers; err says why
			return nil, noInputError{err}
		}
		s.ReadError = err.Error()
	}
	s.fill(st)
	pl.publish(st)
	if ferr := pl.Finish(s, s.TraceEnd); ferr != nil && err == nil {
		err = ferr
	}
	s.timed(start)
	return s, err
}

// feed hands src's packets to pl until src ends (nil) or fails.
//
// A capture file cut shorter in place while it is read from a mapping (the
// reader maps regular pcap files) faults when the reader or the dedup
// fingerprint touches a page it lost. On this goroutine, the one that
// touches the mapping, such a fault is a panic (debug.SetPanicOnFault),
// which feed returns as the file's damage: the packets before it stay
// counted, and the process goes on to its summary instead of ending on
// SIGBUS.
func feed(ctx context.Context, src capture.Source, s *Summary, pl *Pipeline, prog *Progress) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%w: reading the capture faulted at %#x: the file was cut shorter while it was read", ErrChanged, f.Addr())
		}
	}()
	pr, _ := src.(capture.Progresser)
	var p capture.Packet
	var n uint64
	for {
		if err := src.Next(&p); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if s.TraceStart.IsZero() || p.Timestamp.Before(s.TraceStart) {
			s.TraceStart = p.Timestamp
		}
		if p.Timestamp.After(s.TraceEnd) {
			s.TraceEnd = p.Timestamp
		}
		pl.Packet(&p)
		if n++; n%publishEvery == 0 {
			pl.publish(src.Stats())
			if ctx.Err() != nil {
				return fmt.Errorf("%w after %d packets: %w", ErrStopped, n, context.Cause(ctx))
			}
		}
		if prog != nil && n&4095 == 0 {
			if pr != nil {
				read, all := pr.Progress()
				prog.BytesRead.Store(read)
				prog.BytesAll.Store(all)
			}
			prog.Packets.Store(src.Stats().Packets)
		}
	}
}

// setDecode gives src the decoder's options, when there are some and src
// decodes its frames itself.
func setDecode(src capture.Source, o *capture.DecodeOptions) {
	if d, ok := src.(capture.DecodeOptionsSetter); ok && o != nil {
		d.SetDecodeOptions(*o)
	}
}
