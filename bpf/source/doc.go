// Package source is the eBPF live source: the capture program of package
// bpf, attached to a network interface at XDP or TC, and one ring buffer
// of it per worker, each a Ring, a capture.LiveSource fed to one shard of
// the live pipeline.
//
// The program parses each frame in the kernel as capture.Decode does,
// samples flows and pre-filters by address and port there, and hands user
// space one fixed-size record per packet through the ring its symmetric
// flow hash picks, so a flow's packets, both ways, reach one ring; Next
// turns the record into a capture.Packet by copying fields, with no decode,
// and the packet itself is never copied. Frames the program leaves to user
// space (tunnels, link layers it does not parse) come up whole and are
// decoded with capture's decoder. The settings, their defaults and their
// bounds are Config's (config.go); the rings are source_linux.go.
//
// Use it on a busy receive-only tap or SPAN port (XDP), where copying
// every packet into a ring is the cost, or to sample and pre-filter in the
// kernel before anything reaches user space (Config.Sample, Prefixes,
// Ports); TC when the host's own traffic (egress) matters
// (docs/run.md; the program's time per packet is docs/results/bpf.md).
// The program reads Ethernet frames only, and does not reassemble IP
// fragments, which the AF_PACKET source (capture/afpacket) does: a later
// fragment goes with its addresses and protocol, ports 0.
//
// Requirements: Linux whose kernel has XDP and TC (sched_cls) programs,
// BPF ring buffers, arrays of maps, per-CPU arrays, LPM tries and bounded
// loops (internal/testutil/bpftest asks cilium/ebpf's features package for each);
// TCX links (6.6 and later) or else a clsact qdisc for TC; CAP_BPF and
// CAP_NET_ADMIN (or root) to load and attach the program; no cgo.
// Elsewhere Open fails with an error wrapping capture.ErrNotSupported.
package source
