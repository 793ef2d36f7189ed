//go:build linux

package capture

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/flowmon/flowmon/bpf"
)

// FromRecord is fromRecord, and FromSample fromSample, for the eBPF tests
// of package capture_test (which import gen, itself importing capture).
var FromRecord = fromRecord

// FromSample is fromSample with the default decoder options.
func FromSample(p *Packet, sample []byte, monoOff int64) (Reason, bool) {
	return fromSample(p, sample, monoOff, defaultDecodeOptions)
}

// EachFrame calls fn with every frame of a capture file and its link
// type, as Reader reads them.
func EachFrame(name string, fn func(link uint16, data []byte)) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := NewReader(f, name, -1)
	if err != nil {
		return err
	}
	for {
		var data []byte
		link := r.link
		if r.pcap != nil {
			data, err = r.pcap.next()
		} else {
			d, ci, e := r.readNg()
			data, err = d, e
			if err == nil {
				link = r.ngLink(ci.InterfaceIndex)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		fn(link, data)
	}
}

// NewEBPFOn returns a source on ring 0 of objs, attached nowhere, for
// tests that fill the ring with BPF_PROG_TEST_RUN. Closing it closes objs.
func NewEBPFOn(objs *bpf.Objects, timeout time.Duration) (*EBPF, error) {
	rd, err := objs.NewReader(0)
	if err != nil {
		return nil, err
	}
	return newEBPF(&ebpfShared{objs: objs, open: 1, sample: 1}, 0, rd, timeout), nil
}
