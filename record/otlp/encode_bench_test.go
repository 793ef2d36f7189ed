package otlp

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// BenchmarkEncode is a batch of 1,024 records built and marshalled, a
// record at a time (ns/op is a record's).
func BenchmarkEncode(b *testing.B) {
	e := newEncoder(resource("h", "", ""), "", false)
	in := flows(1024)
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%len(in) == 0 {
			req := e.build(in, 1)
			var err error
			if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf[:0], req); err != nil {
				b.Fatal(err)
			}
		}
	}
}
