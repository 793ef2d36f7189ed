//go:build !pcap

package agent

import (
	"errors"
	"fmt"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/capture"
)

func openPcap(*config.Config) ([]capture.LiveSource, error) {
	return nil, errors.New("source pcap: this flowmon was built without libpcap (build it with -tags pcap)")
}

// compileFilter reads a classic BPF program as tcpdump -ddd prints it: a
// filter expression needs libpcap to compile (a build with -tags pcap).
func compileFilter(s string) ([]capture.SockFilter, error) {
	if !config.IsBPF(s) {
		return nil, fmt.Errorf("%q is a tcpdump expression, which needs libpcap to compile (a build with -tags pcap): give its program, tcpdump -ddd %q (with -r FILE, for that capture's link type): %w", s, s, capture.ErrBPF)
	}
	prog, err := capture.ParseBPF(s)
	if err != nil {
		return nil, fmt.Errorf("%w (this flowmon reads tcpdump -ddd output; filter expressions need a build with -tags pcap)", err)
	}
	return prog, nil
}
