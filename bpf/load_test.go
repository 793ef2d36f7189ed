//go:build linux

package bpf

import (
	"testing"
)

func TestLoad(t *testing.T) {
	o, err := Load(Options{Rings: 2, RingSize: 1 << 16})
	if err != nil {
		t.Fatalf("%+v", err)
	}
	defer o.Close()
}
