//go:build pcap && linux

package main

import "testing"

// TestRunPcapMatchesReplay: flowmon run --source pcap (one libpcap handle,
// one shard) sees what flowmon replay reads in the trace.
func TestRunPcapMatchesReplay(t *testing.T) {
	testRunMatchesReplay(t, "pcap", "1")
}
