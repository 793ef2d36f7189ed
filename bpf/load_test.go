//go:build linux

package bpf

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/flowmon/flowmon/internal/testutil/bpftest"
)

// TestLoad: the verifier accepts the three programs, with one ring and
// with the most rings.
func TestLoad(t *testing.T) {
	bpftest.Require(t)
	for _, rings := range []int{1, MaxRings} {
		o, err := Load(Options{Rings: rings, RingSize: 1 << 16})
		if err != nil {
			t.Fatalf("rings %d: %+v", rings, err)
		}
		if err := o.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestRecordLayout: the Go Record has the C struct record's fields at
// the offsets and sizes the object's BTF gives, and its size.
func TestRecordLayout(t *testing.T) {
	spec, err := loadFlowmon()
	if err != nil {
		t.Fatal(err)
	}
	var st *btf.Struct
	if err := spec.Types.TypeByName("record", &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != uint32(RecordSize) {
		t.Errorf("C record is %d bytes, Go Record %d", st.Size, RecordSize)
	}
	gt := reflect.TypeOf(Record{})
	var fields []reflect.StructField
	for i := range gt.NumField() {
		if f := gt.Field(i); f.Name != "_" {
			fields = append(fields, f)
		}
	}
	if len(fields) != len(st.Members) {
		t.Fatalf("C record has %d members, Go Record %d fields", len(st.Members), len(fields))
	}
	for i, m := range st.Members {
		f := fields[i]
		size, err := btf.Sizeof(m.Type)
		if err != nil {
			t.Fatal(err)
		}
		if name := strings.ReplaceAll(m.Name, "_", ""); !strings.EqualFold(name, f.Name) {
			t.Errorf("member %d: C %s, Go %s", i, m.Name, f.Name)
		}
		if uintptr(m.Offset.Bytes()) != f.Offset || uintptr(size) != f.Type.Size() {
			t.Errorf("%s: C offset %d size %d, Go offset %d size %d", m.Name, m.Offset.Bytes(), size, f.Offset, f.Type.Size())
		}
	}
	if n := len(Record{}.Payload); n != PayloadMax {
		t.Errorf("record payload %d bytes, PayloadMax %d", n, PayloadMax)
	}
}
