//go:build linux

package source

import (
	"errors"
	"io"
	"time"

	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/capture"
)

// FromRecord is fromRecord, and FromSample fromSample, for the tests of
// package source_test (which import gen, itself importing capture).
var FromRecord = fromRecord

// FromSample is fromSample with the default decoder options.
func FromSample(p *capture.Packet, sample []byte, monoOff int64) (capture.Reason, bool) {
	return fromSample(p, sample, monoOff, defaultDecode)
}

// EachFrame calls fn with every frame of a capture file and its link
// type, as a capture.Reader reads them.
func EachFrame(name string, fn func(link uint16, data []byte)) error {
	r, err := capture.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	var f capture.Frame
	for {
		if err := r.NextFrame(&f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		fn(f.Link, f.Data)
	}
}

// NewRingOn returns a source on ring 0 of objs, attached nowhere, for
// tests that fill the ring with BPF_PROG_TEST_RUN. Closing it closes objs.
func NewRingOn(objs *bpf.Objects, timeout time.Duration) (*Ring, error) {
	rd, err := objs.NewReader(0)
	if err != nil {
		return nil, err
	}
	return newRing(&shared{objs: objs, open: 1, sample: 1}, 0, rd, timeout), nil
}
