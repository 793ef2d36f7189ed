package otlp

import (
	"encoding/json"
	"reflect"
	"testing"

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
