package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// readOut is all a reader returned: the packets (their payloads apart,
// copied), the counters, the error that ended the read and the progress.
type readOut struct {
	pkts     []Packet
	payloads [][]byte
	stats    Stats
	err      string
	read     int64
}

func drainReader(t *testing.T, r *Reader) readOut {
	t.Helper()
	var o readOut
	for {
		var p Packet
		err := r.Next(&p)
		if err != nil {
			o.err = err.Error()
			if r.Next(&p) != err {
				t.Fatalf("the end is not sticky")
			}
			break
		}
		o.payloads = append(o.payloads, bytes.Clone(p.Payload))
		p.Payload = nil
		o.pkts = append(o.pkts, p)
	}
	o.stats = *r.Stats()
	o.read, _ = r.Progress()
	return o
}

// readBoth reads the file name with Open and its bytes with NewReader, the
// read path, and fails the test unless both return the same; it returns
// what Open's reader returned.
func readBoth(t *testing.T, name string) readOut {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var want, got readOut
	r, err := NewReader(bytes.NewReader(data), name, int64(len(data)))
	if err != nil {
		want.err = err.Error()
	} else {
		want = drainReader(t, r)
	}
	r, err = Open(name)
	if err != nil {
		got.err = err.Error()
	} else {
		got = drainReader(t, r)
		if err := r.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
	}
	if got.err != want.err || len(got.pkts) != len(want.pkts) {
		t.Fatalf("%s: Open read %d packets, then %q; the read path %d, then %q", name, len(got.pkts), got.err, len(want.pkts), want.err)
	}
	for i := range got.pkts {
		if !reflect.DeepEqual(got.pkts[i], want.pkts[i]) || !bytes.Equal(got.payloads[i], want.payloads[i]) {
			t.Fatalf("%s: packet %d differs:\nOpen      %+v\nread path %+v", name, i, got.pkts[i], want.pkts[i])
		}
	}
	// Progress counts what was read ahead too, which is a read buffer on
	// one path and a window on the other: they agree once all is read.
	if !reflect.DeepEqual(got.stats, want.stats) || want.read == int64(len(data)) && got.read != want.read {
		t.Fatalf("%s: Open's stats %+v, progress %d; the read path's %+v, %d", name, got.stats, got.read, want.stats, want.read)
	}
	return got
}

// mapTestFrames are frames of every size class the readers treat apart:
// small ones, one of half the read buffer, one that just fits it, the
// longest libpcap reads, and one after it.
func mapTestFrames(t *testing.T) [][]byte {
	fs := testFrames(t, 12)
	for _, payload := range []int{bufSize / 2, bufSize - 16 - 54, maxRecord - 54, 500} {
		fs = append(fs, frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolTCP),
			tcp(uint16(2000+len(fs)), 80, true, false), gopacket.Payload(make([]byte, payload))))
	}
	return append(fs, testFrames(t, 5)...)
}

// TestMappedMatchesReadPath reads files whole, cut short at every kind of
// place, and damaged in the middle, through Open (a mapping, where the
// platform has mmap) and through the read path, and wants the same
// packets, counters and error, byte offset included.
func TestMappedMatchesReadPath(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fs := mapTestFrames(t)
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, nanos := range []bool{false, true} {
			full := pcapBytes(order, nanos, 1, fs)
			name := fmt.Sprintf("%v-%v", order, nanos)
			if o := readBoth(t, write(name+".pcap", full)); len(o.pkts) != len(fs) || o.err != io.EOF.Error() {
				t.Fatalf("%s: %d of %d packets, %s", name, len(o.pkts), len(fs), o.err)
			}
			first, recs := walkRecords(t, full)
			cuts := []int{0, 1, 4, 20, 23, first}
			for _, r := range recs {
				cuts = append(cuts, r.start+1, r.start+8, r.start+15, r.data, r.data+1, (r.data+r.end)/2, r.end-1)
			}
			for _, n := range cuts {
				readBoth(t, write(fmt.Sprintf("%s-cut%d.pcap", name, n), full[:n]))
			}
			// A record claiming more than libpcap reads, in the middle.
			bad := bytes.Clone(full)
			order.PutUint32(bad[recs[5].start+8:], maxRecord+1)
			if o := readBoth(t, write(name+"-bad.pcap", bad)); len(o.pkts) != 5 {
				t.Fatalf("%s damaged at record 5: %d packets, %s", name, len(o.pkts), o.err)
			}
		}
	}
}

// TestMappedManyWindows reads a file several windows long, whose records
// straddle the windows' ends, both ways.
func TestMappedManyWindows(t *testing.T) {
	fs := testFrames(t, 300)
	one := pcapBytes(binary.LittleEndian, true, 1, fs)
	big := bytes.Clone(one)
	for len(big) < 3*mapWindow+mapWindow/2 {
		big = append(big, one[24:]...)
	}
	name := filepath.Join(t.TempDir(), "big.pcap")
	if err := os.WriteFile(name, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := readBoth(t, name); o.stats.Packets == 0 || o.read != int64(len(big)) {
		t.Fatalf("%d packets, progress %d of %d", o.stats.Packets, o.read, len(big))
	}
}

// FuzzReaderMapped writes arbitrary bytes to a file and reads it through
// Open (a mapping, where the platform has mmap) and through the read path:
// both must return the same packets, counters and error.
func FuzzReaderMapped(f *testing.F) {
	full := pcapBytes(binary.LittleEndian, false, 1, testFrames(f, 3))
	f.Add(full)
	f.Add(full[:len(full)-5])
	f.Add(full[:24+9])
	f.Add(pcapBytes(binary.BigEndian, true, 101, [][]byte{{0x45, 0, 0, 20}}))
	name := filepath.Join(f.TempDir(), "fuzz.pcap")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		readBoth(t, name)
	})
}
