//go:build !linux

package kernelflows

import (
	"fmt"

	"github.com/flowmon/flowmon/capture"
)

// Table is the kernel's flow state, which only Linux has: New fails.
type Table struct{}

// New fails: eBPF is Linux's.
func New(Config) (*Table, error) {
	return nil, fmt.Errorf("the kernel flow state is Linux's eBPF: %w", capture.ErrNotSupported)
}

func (t *Table) Close() error                           { return nil }
func (t *Table) TakeFrame(*capture.Frame) (bool, error) { return false, capture.ErrNotSupported }
func (t *Table) Advance(int64) error                    { return nil }
func (t *Table) Finish() error                          { return nil }
func (t *Table) States() map[string]uint64              { return nil }
func (t *Table) Stats() (Stats, error)                  { return Stats{}, nil }
