// Package afpacket is the AF_PACKET live source: one socket per worker on
// a network interface, each with a TPACKET_V3 receive ring, joined in a
// PACKET_FANOUT group so that the kernel splits the traffic between them
// by flow, both directions of a flow to one socket. Each Socket is a
// capture.LiveSource, fed to one shard of the live pipeline.
//
// Use it to capture on Linux: it is flowmon's default live source, the
// one to take whenever something else reads the same traffic or the
// interface is not Ethernet (docs/run.md says when the eBPF program,
// bpf/source, is the better choice). The ring
// is read in place through golang.org/x/sys/unix rather than gopacket's
// afpacket package: each frame is decoded straight from the mapped block,
// with no copy and no allocation per packet, and the fanout mode and
// flags, the classic BPF filter (capture.ParseBPF; pcaplive.CompileBPF
// compiles a tcpdump expression) and the kernel's statistics are set and
// read directly. The settings, their defaults and their bounds are
// Config's (config.go); the socket and its ring are afpacket_linux.go.
//
// Requirements: Linux (elsewhere Open fails with an error wrapping
// capture.ErrNotSupported), and CAP_NET_RAW (or root) to open the
// sockets; no cgo. The sockets stay in the network namespace of the
// thread that opened them; a reopen after the interface was deleted and
// made again enters it again, which needs CAP_SYS_ADMIN when the reading
// thread is elsewhere.
package afpacket
