//go:build linux

package capture

import (
	"errors"
	"io"
	"os"
)

// FromRecord is fromRecord, for the eBPF tests of package capture_test
// (which import gen, itself importing capture).
var FromRecord = fromRecord

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
