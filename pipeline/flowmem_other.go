//go:build !unix

package pipeline

import "errors"

// mapAnon is not available here: the table goes on the Go heap.
func mapAnon(int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapAnon([]byte) error { return nil }
