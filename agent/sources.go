package agent

import (
	"fmt"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/capture"
)

// openSources opens cfg's capture source: one per worker.
func openSources(cfg *config.Config) ([]capture.Source, error) {
	workers := max(cfg.Pipeline.Workers, 1)
	switch cfg.Source {
	case "", "afpacket":
		a := cfg.AFPacket
		ac := capture.AFPacketConfig{Iface: cfg.Interface, BlockSize: a.BlockSize, BlockCount: a.BlockCount,
			FrameSize: a.FrameSize, BlockTimeout: a.BlockTimeout, Fanout: a.Fanout, Promisc: a.Promisc}
		if a.Filter != "" {
			prog, err := compileFilter(a.Filter)
			if err != nil {
				return nil, fmt.Errorf("afpacket filter: %w", err)
			}
			ac.Filter = prog
		}
		socks, err := capture.OpenAFPacket(ac, workers)
		if err != nil {
			return nil, err
		}
		srcs := make([]capture.Source, len(socks))
		for i, s := range socks {
			srcs[i] = s
		}
		return srcs, nil
	case "pcap":
		return openPcap(cfg)
	}
	return nil, fmt.Errorf("unknown source %q (afpacket or pcap)", cfg.Source)
}
