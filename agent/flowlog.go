package agent

import (
	"io"
	"log/slog"

	"github.com/flowmon/flowmon/internal/outfile"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

// openFlowLog opens the flow log name (- for stdout; "" for none), a
// conn.log JSON lines sink in cfg whose failures are logged to log, and
// returns what closes it. A replay writes a new file; the live agent
// (appendLog) appends to the one it finds, so that a restart loses no
// earlier record, after cutting the partial last line a crash in the
// middle of a write leaves, which it says on log.
func openFlowLog(name string, appendLog bool, stdout, log io.Writer, cfg *pipeline.Config) (func() error, error) {
	if name == "" {
		return func() error { return nil }, nil
	}
	var out *outfile.File
	var err error
	if appendLog {
		var cut int64
		out, cut, err = outfile.AppendLines(name, stdout)
		if err == nil && cut > 0 {
			sinkLogger(cfg, log).Warn("flow log: cut its partial last line (a run stopped in the middle of a write)", "file", name, "bytes", cut)
		}
	} else {
		out, err = outfile.Create(name, stdout)
	}
	if err != nil {
		return nil, err
	}
	cfg.Sinks = append(cfg.Sinks, record.Named{Name: "connlog", Sink: connlog.NewWriter(out)})
	sinkLogger(cfg, log)
	return out.Close, nil
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
