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
	case config.SourcePcap:
		return openPcap(cfg)
	case config.SourceXDP, config.SourceTC:
		ec, err := cfg.EBPFCapture()
		if err != nil {
			return nil, err
		}
		rings, err := capture.OpenEBPF(ec, workers)
		if err != nil {
			return nil, err
		}
		srcs := make([]capture.Source, len(rings))
		for i, r := range rings {
			srcs[i] = r
		}
		return srcs, nil
	}
	return nil, fmt.Errorf("unknown source %q (afpacket, pcap, xdp or tc)", cfg.Source)
}

// attachedAt says where an eBPF source's program is attached ("xdp
// driver", "xdp generic", "tcx"), "" for the other sources.
func attachedAt(srcs []capture.Source) string {
	if len(srcs) > 0 {
		if e, ok := srcs[0].(*capture.EBPF); ok {
			return e.Attached()
		}
	}
	return ""
}
