package kbf

import (
	"testing"
	"unsafe"
)

// TestLineQueryOffsets pins the offsets lines_amd64.s reads.
func TestLineQueryOffsets(t *testing.T) {
	var lq lineQuery
	var lp lineParams
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"line", unsafe.Offsetof(lq.line), 0},
		{"mask", unsafe.Offsetof(lq.mask), 32},
		{"x", unsafe.Offsetof(lq.x), 48},
		{"status", unsafe.Offsetof(lq.status), 52},
		{"high", unsafe.Offsetof(lp.high), 0},
		{"ctrMask", unsafe.Offsetof(lp.ctrMask), 8},
		{"sh", unsafe.Offsetof(lp.sh), 12},
		{"loMask", unsafe.Offsetof(lp.loMask), 16},
		{"values", unsafe.Offsetof(lp.values), 20},
		{"q", unsafe.Offsetof(lp.q), 24},
		{"g", unsafe.Offsetof(lp.g), 28},
		{"all", unsafe.Offsetof(lp.all), 32},
		{"spread", unsafe.Offsetof(lp.spread), 36},
		{"logP", unsafe.Offsetof(lp.logP), 56},
		{"logT", unsafe.Offsetof(lp.logT), 64},
		{"root", unsafe.Offsetof(lp.root), 72},
		{"exp", unsafe.Offsetof(lp.exp), 80},
		{"cells", unsafe.Offsetof(lp.cells), 88},
		{"pair", unsafe.Offsetof(lp.pair), 96},
	} {
		if c.got != c.want {
			t.Errorf("offset of %s is %d, lines_amd64.s has %d", c.name, c.got, c.want)
		}
	}
}
