package agent

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/flowmon/flowmon/internal/outfile"
	"github.com/flowmon/flowmon/internal/rotfile"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

// A flowLog is an open flow log.
type flowLog struct {
	close func() error
	// live is the live agent's file, nil for a replay's or stdout.
	live *liveLog
}

// A liveLog is the live agent's flow log: a file appended to and
// rotated, opened (openAt) only once the snapshot is restored, since a
// restore rewinds the log first to where the snapshot's state stood.
type liveLog struct {
	name string
	opt  rotfile.Options
	log  *slog.Logger
	f    *rotfile.File // nil until openAt
	w    lateWriter
}

// lateWriter writes to w, set before the first record comes.
type lateWriter struct{ w io.Writer }

func (l *lateWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

// openFlowLog opens the flow log name (- for stdout; "" for none), a
// conn.log JSON lines sink in cfg, whose failures cfg.Logger hears. A
// replay (rot nil) writes a new file; the live agent's (rot set) file is
// opened by liveLog.openAt.
func openFlowLog(name string, rot *rotfile.Options, stdout io.Writer, cfg *pipeline.Config) (flowLog, error) {
	if name == "" {
		return flowLog{close: func() error { return nil }}, nil
	}
	var fl flowLog
	var w io.Writer
	if rot != nil && name != "-" {
		l := &liveLog{name: name, opt: *rot, log: orDiscard(cfg.Logger)}
		w, fl = &l.w, flowLog{live: l, close: l.close}
	} else {
		out, err := outfile.Create(name, stdout)
		if err != nil {
			return flowLog{}, err
		}
		w, fl = out, flowLog{close: out.Close}
	}
	cfg.Sinks = append(cfg.Sinks, record.Named{Name: "connlog", Sink: connlog.NewWriter(w)})
	return fl, nil
}

// openAt opens the live flow log to append to, so that a restart loses
// no earlier record, after cutting the partial last line a crash in the
// middle of a write leaves. With mark, the Mark a restored snapshot
// holds, the log is first rewound to it: what was written after that
// state was taken (before a crash) goes, and is written again as the
// restored flows end, so that no record is there twice. A mark the log
// no longer has (rotated away) rewinds nothing, which is said.
func (l *liveLog) openAt(mark []byte) error {
	if mark != nil {
		var m rotfile.Mark
		dropped, err := int64(0), m.UnmarshalBinary(mark)
		if err == nil {
			dropped, err = rotfile.Rewind(l.name, l.opt, m)
		}
		switch {
		case errors.Is(err, rotfile.ErrMarkGone), errors.Is(err, rotfile.ErrBadMark), errors.Is(err, rotfile.ErrNotSupported):
			l.log.Warn("flow log: not rewound to the restored snapshot's end of it; records written after it may come twice", "file", l.name, "err", err)
		case err != nil:
			return fmt.Errorf("flow log: %w", err)
		case dropped > 0:
			l.log.Warn("flow log: cut the records written after the restored snapshot (the last run did not stop cleanly); they are written again as their flows end",
				"file", l.name, "bytes", dropped)
		}
	}
	f, cut, err := rotfile.Open(l.name, l.opt)
	if err != nil {
		return err
	}
	if cut > 0 {
		l.log.Warn("flow log: cut its partial last line (a run stopped in the middle of a write)", "file", l.name, "bytes", cut)
	}
	l.f, l.w.w = f, f
	return nil
}

// mark is where the log ends now, synced, for a snapshot to keep.
func (l *liveLog) mark() ([]byte, error) {
	m, err := l.f.Mark()
	if err != nil {
		return nil, err
	}
	return m.MarshalBinary()
}

func (l *liveLog) close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// orDiscard is log, or a logger that says nothing for nil.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// closer runs what closes an agent's parts, last opened first, and
// returns the first error.
type closer []func() error

func (c *closer) add(f func() error) { *c = append(*c, f) }

func (c closer) close() error {
	var err error
	for i := len(c) - 1; i >= 0; i-- {
		if cerr := c[i](); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}
