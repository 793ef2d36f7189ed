package agent

import (
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
	// rot is the live agent's file, nil for a replay's or stdout: what a
	// snapshot marks (rotfile.File.Mark), so that a restore can rewind
	// the log to the records of the state it restores (rotfile.Rewind).
	rot *rotfile.File
}

// openFlowLog opens the flow log name (- for stdout; "" for none), a
// conn.log JSON lines sink in cfg whose failures are logged to log. A
// replay (rot nil) writes a new file; the live agent appends to the one
// it finds, rotated as rot says, so that a restart loses no earlier
// record, after cutting the partial last line a crash in the middle of a
// write leaves, which it says on log.
func openFlowLog(name string, rot *rotfile.Options, stdout, log io.Writer, cfg *pipeline.Config) (flowLog, error) {
	if name == "" {
		return flowLog{close: func() error { return nil }}, nil
	}
	var fl flowLog
	var w io.Writer
	if rot != nil && name != "-" {
		f, cut, err := rotfile.Open(name, *rot)
		if err != nil {
			return flowLog{}, err
		}
		if cut > 0 {
			sinkLogger(cfg, log).Warn("flow log: cut its partial last line (a run stopped in the middle of a write)", "file", name, "bytes", cut)
		}
		w, fl = f, flowLog{close: f.Close, rot: f}
	} else {
		out, err := outfile.Create(name, stdout)
		if err != nil {
			return flowLog{}, err
		}
		w, fl = out, flowLog{close: out.Close}
	}
	cfg.Sinks = append(cfg.Sinks, record.Named{Name: "connlog", Sink: connlog.NewWriter(w)})
	sinkLogger(cfg, log)
	return fl, nil
}

// sinkLogger returns the logger the record sinks' failures go to, made
// on log if cfg has none yet.
func sinkLogger(cfg *pipeline.Config, log io.Writer) *slog.Logger {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	return cfg.Logger
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
