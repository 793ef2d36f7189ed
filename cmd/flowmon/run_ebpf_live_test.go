//go:build linux

package main

import (
	"testing"

	"github.com/flowmon/flowmon/internal/bpftest"
)

// TestRunXDPMatchesReplay: flowmon run --source xdp on one end of a veth
// pair, with one and two workers (rings), sees what flowmon replay reads
// in the trace sent into the other end.
func TestRunXDPMatchesReplay(t *testing.T) {
	bpftest.Require(t)
	testRunMatchesReplay(t, "xdp", "1", "2")
}

// TestRunTCMatchesReplay: the same with the program at TC (TCX links).
func TestRunTCMatchesReplay(t *testing.T) {
	bpftest.Require(t)
	testRunMatchesReplay(t, "tc", "1", "2")
}
