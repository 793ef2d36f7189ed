//go:build !linux

package kernelflows

import (
	"fmt"
	"time"

	"github.com/flowmon/flowmon/bpf/source"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/flowtable"
	"github.com/flowmon/flowmon/record"
)

// Table is the kernel's flow state, which only Linux has: New fails.
type Table struct{}

// New fails: eBPF is Linux's.
func New(Config) (*Table, error) {
	return nil, fmt.Errorf("the kernel flow state is Linux's eBPF: %w", capture.ErrNotSupported)
}

// NewLive fails: eBPF is Linux's.
func NewLive(Config, string, int) (*Table, error) { return New(Config{}) }

func (t *Table) Close() error                                   { return nil }
func (t *Table) TakeFrame(*capture.Frame) (bool, error)         { return false, capture.ErrNotSupported }
func (t *Table) Finish() error                                  { return nil }
func (t *Table) States() map[string]uint64                      { return nil }
func (t *Table) Stats() (Stats, error)                          { return Stats{}, nil }
func (t *Table) SetOutputs(flowtable.Out, func(*record.Event))  {}
func (t *Table) ReadEvents(time.Duration) (int, error)          { return 0, capture.ErrNotSupported }
func (t *Table) Tick() error                                    { return nil }
func (t *Table) Detach() error                                  { return nil }
func (t *Table) Live() bool                                     { return false }
func (t *Table) OpenSource(source.Config) (*source.Ring, error) { return nil, capture.ErrNotSupported }
