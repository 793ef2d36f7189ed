// Package bpf holds flowmon's eBPF capture program and its loader: the C
// source (capture.c), the objects bpf2go compiles from it for both byte
// orders with their Go bindings (flowmon_bpfel.go, flowmon_bpfeb.go;
// `make generate` rebuilds them and needs clang, building flowmon does
// not), and Load, which loads the program with github.com/cilium/ebpf,
// attaches it at XDP or TC, and gives the ring buffers, the counters and
// the settings to user space.
//
// The program parses each frame as capture.Decode parses an Ethernet
// frame (VLAN and QinQ tags, MPLS, PPPoE, IPv4 with options and fragments,
// IPv6 and its extension headers, TCP, UDP, SCTP, DCCP, UDP-Lite, ICMP and
// ICMPv6) and writes one fixed-size Record per packet into one of several
// BPF ring buffers: the one a symmetric hash of the flow key picks, so a
// flow's packets, both directions, reach one reader. A frame that does
// not parse gets a record too, holding only why (Record.Reason, a
// capture.Reason), so the reader counts every frame as a file reader
// does. The record carries the canonical flow key in capture.Key's
// 40-byte binary layout, the header fields the pipeline reads, and the
// first PayloadMax bytes of the transport payload (what the dedup
// fingerprint reads at most).
//
// Per CPU and ring the program counts the packets it saw, the records it
// emitted, those lost to a full ring, the packets it left out by sampling
// or by the pre-filter, and the frames that did not parse by reason
// (Counters). Sampling keeps 1 flow in N by the flow hash, so a kept
// flow keeps all its packets; the pre-filter keeps packets with an
// address in a CIDR set or a port in a port set. Both are set from user
// space (SetSampling, SetFilter) while the program runs.
//
// The program writes each record without waking the reader unless the
// ring holds WakeupBytes or more: the reader polls with a timeout and
// reads what has gathered, so it is not woken per packet. It always
// passes the packet on (XDP_PASS; TC_ACT_UNSPEC, which lets later TC
// programs run): flowmon observes and never drops.
//
// A second program, the kernel flow state (flowstate.c, LoadState),
// shares the parser (include/parse.h) and keeps each flow in a cell of a
// fixed-size map instead of handing packets up: the ACSM's machine value,
// stepped over the tables user space loads (acsm.MachineTables, given as
// a StateMachine), first, last and end times, packets each way, the first
// packet's uid inputs, the flag anomalies and conn.log's fields
// (include/conn.h ports flowtable.Conn.Observe, in Conn's memory layout),
// each cell updated under its spin lock. It ages flows in packet time as
// the user-space flow table does (idle timeouts by tier, an ended flow's
// linger, interim events at the active timeout), and only flow events go
// up a ring, each with the whole cell: a flow's start, its end, its being
// done (the cell reused by the 5-tuple's next flow) and interims. Its
// replay entry (State.Run) runs a frame with BPF_PROG_TEST_RUN at the
// frame's packet time and says whether the program kept it or left it to
// user space.
//
// The package knows nothing of package capture; its subpackage source
// (bpf/source) is the live source on the program, which turns its records
// into capture.Packet values.
package bpf
