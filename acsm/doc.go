// Package acsm is an approximate concurrent state machine (ACSM): it tracks
// the TCP state of every flow in a fixed amount of memory, in the
// vocabulary of Zeek's conn_state, with a choice of five backends. It
// implements Section VI of "kBF: a Bloom Filter for Key-Value Storage with
// an Application on Approximate State Machines" (the kBF as an ACSM for
// TCP flows), and the two structures that paper compares against, from
// Bonomi et al., "Beyond Bloom Filters: From Approximate Membership Checks
// to Approximate State Machines" (SIGCOMM 2006).
//
// # Machines
//
// MachineZeek keeps, per flow, Zeek's endpoint state for each side
// (inactive, SYN sent, SYN-ACK sent, partial, established, closed, reset),
// which side is the originator, and two history bits; the conn_state is
// derived from them on demand by Zeek's own rules (conn_state in
// base/protocols/conn/main.zeek): responder reset gives REJ, RSTRH or RSTR;
// originator reset RSTOS0, OTH or RSTO; then SF, SH/S2, SHR/S3, S0, S1,
// OTH. The transitions are the rows of zeekRules, transcribed from Zeek's
// TCP session adapter (UpdateInactiveState, UpdateSYN_SentState,
// UpdateEstablishedState, UpdateClosedState), applied to a packet in
// Zeek's order: SYN part, FIN part, RST part, then the no-flag part. UDP
// flows are SF (both sides sent), S0 (originator only) or SHR (responder
// only); other protocols OTH.
//
// MachineFlags is the paper's machine: the state is the last TCP flag
// combination, so its experiment can be rerun as published.
//
// Each machine is compiled at start-up into tables over a dense numbering
// of its reachable values (276 for Zeek's, 128 for the flag machine): a
// packet becomes one input byte (direction, payload present, six flags)
// and a transition is one table read. The value a backend stores is that
// number, so the orientation is part of it.
//
// # Where flowmon differs from Zeek
//
//   - No sequence numbers: Zeek's sizes are sequence-space extents;
//     flowmon keeps one bit, "payload seen", for the REJ rule on a reset
//     originator. SYN_seq_jump, window and gap checks are not made.
//   - Zeek's "FIN after RST turns the RST back into a close" (peer
//     prev_state) is not kept: it needs one more state per side.
//   - The RSTOS0 history pattern ^?S[^HAFGIQ]*R is kept as one bit
//     (content gaps, G, are not seen).
//   - Zeek's likely_server_ports are the ports its loaded analyzers
//     register; flowmon uses a fixed list of those ports (serverPorts).
//     A first SYN-ACK always makes its sender the responder (only the
//     answering side sends one); Zeek itself flips a SYN-ACK only by port.
//   - Zeek starts a new connection (uid) when a SYN arrives on a 5-tuple
//     one side of which has closed or reset (TCPSessionAdapter::IsReuse,
//     IsClosed), and at any packet once a closed connection is removed,
//     tcp_close_delay (5 s) after its close. With KeepEnded flowmon does
//     the first (Event.Reused), and the pipeline's flow table the second
//     (ForgetEnded at the end of a flow's linger); when ended flows are
//     deleted the next packet starts a new flow anyway. Zeek's reuse of an
//     open connection by a SYN with another initial sequence number is not
//     made: the tracker keeps no sequence numbers.
//   - A flow ends (and, by default, is deleted) when both sides closed, a
//     side reset, or one side closed while the other never spoke (Zeek's
//     close_complete). Zeek reports the state only when the connection is
//     removed, seconds later; flowmon reports it at the end packet.
//   - Bad-checksum packets reach the tracker unless the decoder verifies
//     checksums (capture.DecodeOptions, the pipeline's verify-checksums),
//     as Zeek drops them unless run with -C.
//
// # Anomalies
//
// Each Event carries the flag anomalies of its packet: SYN+FIN, SYN+RST,
// FIN+RST, NULL, XMAS (FIN+PSH+URG), from the header alone; FIN before any
// handshake (Zeek's spontaneous_FIN / inappropriate_FIN), data while the
// handshake is open (data_before_established), and RST after FIN, from the
// flow's state.
//
// # Backends
//
// All five implement Backend over the 64-bit flow hash: kbf (the kBF
// filter, default), sbf (Bonomi's stateful Bloom filter, acsm/sbf), fcf
// (Bonomi's fingerprint-compressed d-left filter, acsm/fcf), exact (a
// map with a hard cap: the ground truth, and the only backend whose memory
// grows) and dleft (acsm/dleft: Bonomi's d-left fingerprint table in
// 64-byte buckets with an aging tag in each cell, 5 bytes per flow, one
// probe per packet). Approximate backends are sized when built from the expected
// number of concurrent flows n and the target error p, and never grow: a
// flood past n raises the error, not the heap. The errors an ACSM makes
// are those of Section VI: a false positive (a new flow found as
// existing), a false negative (no state, or "don't know", for a live
// flow), an incorrect state.
//
// # Aging
//
// Flows that end are deleted. Flows that never end (S0 floods, S1, OTH)
// age out: each tier (new 60 s, established 3600 s, closed 120 s by
// default, after Suricata) has two generations of its backend; inserts go
// to the current one, a flow found in the older one moves to the current
// one, and when the current generation is older than the tier's timeout
// the older one is emptied wholesale in place (Backend.Reset: its flows
// expire, its memory is kept, nothing is allocated) and becomes current.
// A flow idle for between one and two timeouts is forgotten.
// Lookups try the six filters in turn, so each is built for p/6 (a union
// bound keeps a new flow's false-positive chance near p); generation t of
// a tier is sized for n times the tier's share (1/2, 1/2, 1/4). Aged-out
// flows cannot be reported (a filter cannot list its keys). NoAging gives
// one backend and no expiry, the paper's setting.
//
// The dleft backend ages in place instead: the tracker keeps one table,
// each cell's state says its tier, and its 4-bit tag of packet time (a
// tick of timeout/8) expires it lazily when a lookup or an insert meets
// it, or when an incremental sweep passes. A flow idle for its timeout is
// kept, one idle for 9/8 of it is gone; a packet reads two cache lines,
// whatever the tier.
//
// # Shadow accuracy
//
// With ShadowRate N (1024 by default), an exact backend follows 1 in N
// flows (chosen by hash) beside the approximate one; every packet of those
// flows is compared, and false positives, false negatives and wrong
// states are counted (Stats().Shadow, and flowmon_acsm_shadow_* through
// the engine's metrics collector). The agent measures its own accuracy
// while it runs.
//
// # Concurrency
//
// A Tracker belongs to one goroutine (one per worker shard): Observe,
// Query, QueryHash and Flush are not safe for concurrent use. Counts,
// Stats and Samples read atomics and may be called from any goroutine.
// Observe allocates nothing (the kbf backend reallocates a generation when
// it rotates, once per timeout).
package acsm
