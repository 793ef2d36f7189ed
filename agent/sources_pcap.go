//go:build pcap

package agent

import (
	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/pcaplive"
)

// openPcap opens the interface with libpcap: one handle, so one shard
// (libpcap has no fanout), whatever the workers setting.
func openPcap(cfg *config.Config) ([]capture.LiveSource, error) {
	p := cfg.Pcap
	src, err := pcaplive.Open(cfg.Interface, p.Snaplen, p.Promisc, p.Filter, p.Timeout)
	if err != nil {
		return nil, err
	}
	return []capture.LiveSource{src}, nil
}

// compileFilter takes tcpdump -ddd output as it is and compiles anything
// else as a tcpdump filter expression for Ethernet.
func compileFilter(s string) ([]capture.SockFilter, error) {
	if config.IsBPF(s) {
		return capture.ParseBPF(s)
	}
	return pcaplive.CompileBPF(s, 1, 262144) // DLT_EN10MB
}
