package kbf

import (
	"bytes"
	"fmt"
	"testing"
)

func TestDictionary(t *testing.T) {
	for _, enc := range []EncoderKind{Greedy, Sidon} {
		d, err := NewDictionary(200, 1e-2, enc)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 2; round++ { // second round finds every value
			for i := 0; i < 200; i++ {
				val := []byte(fmt.Sprintf("state-%d", i))
				v, err := d.Number(val)
				if err != nil || v != uint32(i) {
					t.Fatalf("%v: %q numbered %d, %v", enc, val, v, err)
				}
				if back, ok := d.Value(v); !ok || !bytes.Equal(back, val) {
					t.Fatalf("value %d = %q", v, back)
				}
			}
		}
		if _, err := d.Number([]byte("one too many")); err == nil {
			t.Error("201st value accepted")
		}
		if _, ok := d.Lookup([]byte("never")); ok {
			t.Error("lookup of unknown value")
		}
	}
}
