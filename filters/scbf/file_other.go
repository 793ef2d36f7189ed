//go:build !linux

package scbf

import "fmt"

// bootID: no boot id here, so a file left dirty is always rebuilt (and
// files cannot be opened anyway).
var bootID = func() uint64 { return 0 }

// Create is supported on Linux only.
func Create(path string, o Options) (*Filter, error) {
	return nil, fmt.Errorf("create %s: %w", path, ErrNotSupported)
}

// Open is supported on Linux only.
func Open(path string) (*Filter, OpenState, error) {
	return nil, OpenState{}, fmt.Errorf("open %s: %w", path, ErrNotSupported)
}

// The file operations below are never reached: f.file is always nil.

func (f *Filter) resizeFile(int) error { return ErrNotSupported }
func (f *Filter) syncAll() error       { return ErrNotSupported }
func (f *Filter) syncHeader() error    { return ErrNotSupported }
func (f *Filter) release() error       { return ErrNotSupported }
