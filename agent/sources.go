package agent

import (
	"fmt"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/bpf/source"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
)

// openSources opens cfg's capture source, chosen by its name (afpacket,
// pcap, xdp or tc): one per worker, one shard each. With the flows kept
// in the kernel (ecfg.KernelState) it loads the kernel flow state's live
// programs, attaches them at xdp or tc, and returns the one source of
// the frames they leave to user space; the state goes to the pipeline
// in ecfg.KernelTable.
func openSources(cfg *config.Config, ecfg *pipeline.Config) ([]capture.LiveSource, error) {
	workers := max(cfg.Pipeline.Workers, 1)
	switch cfg.Source {
	case "", config.SourceAFPacket:
		a := cfg.AFPacket
		ac := afpacket.Config{Iface: cfg.Interface, BlockSize: a.BlockSize, BlockCount: a.BlockCount,
			FrameSize: a.FrameSize, BlockTimeout: a.BlockTimeout, Fanout: a.Fanout, Promisc: a.Promisc}
		if a.Filter != "" {
			prog, err := compileFilter(a.Filter)
			if err != nil {
				return nil, fmt.Errorf("afpacket filter: %w", err)
			}
			ac.Filter = prog
		}
		socks, err := afpacket.Open(ac, workers)
		if err != nil {
			return nil, err
		}
		return live(socks), nil
	case config.SourcePcap:
		return openPcap(cfg)
	case config.SourceXDP, config.SourceTC:
		ec, err := cfg.EBPFCapture()
		if err != nil {
			return nil, err
		}
		if ecfg.KernelState != nil {
			return openKernelState(ec, ecfg)
		}
		rings, err := source.Open(ec, workers)
		if err != nil {
			return nil, err
		}
		return live(rings), nil
	}
	return nil, fmt.Errorf("unknown source %q (afpacket, pcap, xdp or tc)", cfg.Source)
}

// openKernelState loads the kernel flow state for ecfg, attaches it as
// ec says, and returns the source of the frames it leaves to user space.
func openKernelState(ec source.Config, ecfg *pipeline.Config) ([]capture.LiveSource, error) {
	t, err := kernelflows.NewLive(pipeline.KernelConfig(*ecfg), ec.Hook, ec.WithDefaults().RingSize)
	if err != nil {
		return nil, err
	}
	src, err := t.OpenSource(ec)
	if err != nil {
		t.Close()
		return nil, err
	}
	ecfg.KernelTable = t
	return []capture.LiveSource{src}, nil
}

// live returns srcs as the live sources the pipeline takes.
func live[S capture.LiveSource](srcs []S) []capture.LiveSource {
	out := make([]capture.LiveSource, len(srcs))
	for i, s := range srcs {
		out[i] = s
	}
	return out
}

// attachedAt says where an eBPF source's program is attached ("xdp
// driver", "xdp generic", "tcx"), "" for the other sources.
func attachedAt(srcs []capture.LiveSource) string {
	if len(srcs) > 0 {
		if st, ok := srcs[0].EBPFStats(); ok {
			return st.Attached
		}
	}
	return ""
}
