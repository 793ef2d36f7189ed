// Package kernelflows keeps flows in the kernel: the eBPF flow state
// (bpf.State, bpf/flowstate.c) holds each flow's cell (the ACSM's value,
// packets each way, first and last times, and the conn.log fields in
// flowtable.Conn's layout) and sends only flow events up. A Table here
// turns the events and the cells into flow records as the user-space
// flow table (pipeline/flowtable) writes them, with the same code for
// the conn.log fields (flowtable.Conn.Fill) and the uids
// (flowtable.UIDSeed), so that downstream of the records nothing tells
// where a flow was kept.
//
// What a flow's record waits for, and when it is written:
//   - an end the machine sees (FIN, RST): the program sends an end event
//     and goes on counting the flow's stragglers; the record is written
//     from the cell flowtable.Linger later, and the cell removed;
//   - an idle timeout: a packet that finds its flow idle past its
//     timeout makes the program send the old flow's cell (a done event)
//     and start a new flow in it; a flow that gets no more packets is
//     found by the sweep over the cells, every sweepEvery of packet
//     time;
//   - a 5-tuple reused by a SYN after a side closed: a done event, as
//     for an idle flow;
//   - the active timeout: an interim event carrying the counts so far.
//
// A flow that started in S0 and leaves it (answered, or reset) makes the
// program send an answered event, once: Config.Events gets a
// record.FlowAnswered, so that the rules' half-open count learns of the
// answer when the packet path would.
//
// With Config.DedupSlots the program keeps a duplicate window in the
// dedup stage's place (pipeline/dedup's fingerprint table, in a fixed
// array map): a frame whose fingerprint it holds is counted
// (Stats.Duplicates) and applied to no cell.
//
// In a replay (Table.TakeFrame) the program runs each Ethernet frame
// with BPF_PROG_TEST_RUN at the frame's packet time, so timeouts fall
// where they fall in user space; the replay program takes frames of
// several buffers, up to bpf.MaxRunFrame (GRO's and TSO's included). The
// frames it leaves to user space (tunnels, fragments, what it does not
// parse) go on to the Go decoder and the shards, and their dedup stage,
// as in a replay without it.
package kernelflows
