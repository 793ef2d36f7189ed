//go:build linux

package capture_test

import (
	"testing"

	"github.com/flowmon/flowmon/capture"
)

// checkNextNoAllocs reads all but ten of the packets sent to s, a live
// source, and fails if a Next allocates.
func checkNextNoAllocs(t *testing.T, s capture.Source, packets int) {
	t.Helper()
	var p capture.Packet
	var nerr error
	runs := packets - 10
	allocs := testing.AllocsPerRun(runs, func() {
		if err := s.Next(&p); err != nil && nerr == nil {
			nerr = err
		}
	})
	if nerr != nil {
		t.Fatal(nerr)
	}
	t.Logf("%v allocations per packet over %d packets", allocs, runs+1)
	if allocs != 0 {
		t.Errorf("Next allocates %v times per packet", allocs)
	}
}
