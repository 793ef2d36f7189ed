package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"reflect"
	"testing"
	"testing/iotest"
)

// seen is what a test keeps of a packet: its decoded fields and a hash of
// its payload, read before the next call reuses the buffer.
type seen struct {
	p       Packet
	payload uint64
}

// readVia reads a capture through src and returns its packets and how it
// ended (nil for a clean end).
func readVia(t *testing.T, src io.Reader, size int) ([]seen, Stats, error) {
	t.Helper()
	r, err := NewReader(src, "chunked", int64(size))
	if err != nil {
		t.Fatal(err)
	}
	var out []seen
	for {
		var p Packet
		if err := r.Next(&p); err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, *r.Stats(), err
		}
		h := fnv.New64a()
		h.Write(p.Payload)
		p.Payload = nil
		out = append(out, seen{p, h.Sum64()})
	}
}

// chunky returns its bytes in reads of 1 to 700 bytes, varied.
type chunky struct {
	r io.Reader
	n int
}

func (c *chunky) Read(b []byte) (int, error) {
	c.n = (c.n*7 + 13) % 700
	return c.r.Read(b[:min(len(b), c.n+1)])
}

// TestReaderChunkedInput: records are sliced from a window on the bytes
// buffered, and read through the buffer when they are not whole in it.
// However the input arrives (whole, halves, odd chunks, a byte a read),
// a file larger than the buffer reads as the same packets, payloads and
// counts, and a cut one ends at the same record with the same offset.
func TestReaderChunkedInput(t *testing.T) {
	var frames [][]byte
	for i := range 3000 {
		fs := testFrames(t, i%97+1)
		frames = append(frames, fs[len(fs)-1]) // payloads of 0 to 672 bytes
	}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		full := pcapBytes(order, false, 1, frames)
		if len(full) <= bufSize {
			t.Fatalf("the capture (%d bytes) must be larger than the buffer", len(full))
		}
		for _, cut := range []int{len(full), len(full) - 5, len(full)/2 + 3, bufSize + 7} {
			data := full[:cut]
			want, wantSt, wantErr := readVia(t, bytes.NewReader(data), len(data))
			if cut == len(full) && (wantErr != nil || len(want) != len(frames)) {
				t.Fatalf("%v, whole: %d packets, err %v", order, len(want), wantErr)
			}
			if cut < len(full) && wantErr == nil {
				t.Errorf("%v, cut at %d: no error", order, cut)
			}
			for _, in := range []struct {
				name string
				r    io.Reader
			}{
				{"halves", iotest.HalfReader(bytes.NewReader(data))},
				{"chunks", &chunky{r: bytes.NewReader(data)}},
				{"bytes", iotest.OneByteReader(bytes.NewReader(data))},
			} {
				name := fmt.Sprintf("%v, cut at %d, %s", order, cut, in.name)
				got, st, err := readVia(t, in.r, len(data))
				if len(got) != len(want) || st != wantSt {
					t.Errorf("%s: %d packets, stats %+v; want %d, %+v", name, len(got), st, len(want), wantSt)
					continue
				}
				for i := range got {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Errorf("%s: packet %d differs:\n got %+v\nwant %+v", name, i, got[i], want[i])
						break
					}
				}
				var re, wantRE *ReadError
				if errors.As(wantErr, &wantRE) != errors.As(err, &re) || (re != nil && (re.Offset != wantRE.Offset || re.Packets != wantRE.Packets)) {
					t.Errorf("%s: err %v, want %v", name, err, wantErr)
				}
			}
		}
	}
}
