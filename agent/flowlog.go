package agent

import (
	"io"

	"github.com/flowmon/flowmon/internal/outfile"
	"github.com/flowmon/flowmon/pipeline"
)

// openFlowLog opens the flow log name (- for stdout; "" for none) into
// cfg and returns what closes it.
func openFlowLog(name string, stdout io.Writer, cfg *pipeline.Config) (func() error, error) {
	if name == "" {
		return func() error { return nil }, nil
	}
	out, err := outfile.Create(name, stdout)
	if err != nil {
		return nil, err
	}
	cfg.FlowLog = out
	return out.Close, nil
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
