//go:build !unix

package flowtable

import "errors"

// mapAnon is not available here: the table goes on the Go heap.
func mapAnon(int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapAnon([]byte) error { return nil }
