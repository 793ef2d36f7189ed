package otlp

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// equalRecords compares two conn.log records field by field, addresses
// unmapped.
func equalRecords(a, b connlog.Record) bool {
	a.OrigH, a.RespH = a.OrigH.Unmap(), a.RespH.Unmap()
	b.OrigH, b.RespH = b.OrigH.Unmap(), b.RespH.Unmap()
	return reflect.DeepEqual(a, b)
}

// TestEncodeAllocs: a batch after the first allocates only the strings
// its records spell (addresses, uid, history, community ID, body).
func TestEncodeAllocs(t *testing.T) {
	e := newEncoder(resource("h", "", ""), "", true)
	in := flows(256)
	e.build(in, 1)
	allocs := testing.AllocsPerRun(20, func() { e.build(in, 1) })
	if perRecord := allocs / float64(len(in)); perRecord > 7 {
		t.Errorf("%.1f allocations a record, want at most 7", perRecord)
	}
}

// FuzzDecode: any log record, as protobuf bytes (seeded with records
// this package made), decodes or errs (wrapping ErrNotFlow) without a
// panic.
func FuzzDecode(f *testing.F) {
	e := newEncoder(resource("", "", ""), "", false)
	for _, fl := range flows(3) {
		req := e.build([]record.Flow{fl}, 1)
		b, err := proto.Marshal(req.ResourceLogs[0].ScopeLogs[0].LogRecords[0])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var lr logspb.LogRecord
		if proto.Unmarshal(b, &lr) != nil {
			return
		}
		if _, err := Decode(&lr); err != nil && !errors.Is(err, ErrNotFlow) {
			t.Fatalf("error %v does not wrap ErrNotFlow", err)
		}
	})
}
