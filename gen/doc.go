// Package gen writes deterministic synthetic packet traces with ground
// truth: a pcap file and a sidecar with one JSON line per flow saying its
// 5-tuple (originator first), its packets each way, the conn_state Zeek
// would report for exactly the packets written, and whether SPAN
// duplicates were added. Real traces with ground truth are scarce; these
// are what flowmon's state machines, filters and detectors are tested
// and evaluated on.
//
// # Traffic model
//
// A trace is a mix of scenarios (Options.Mix, shares of the flow count):
//
//   - normal: client/server flows over TCP, UDP and ICMP echo, IPv4 and
//     IPv6. TCP flows run request/response rounds; the response size in
//     segments is Pareto distributed (scale 1, shape 1.2, capped at 3000),
//     the heavy-tailed flow sizes of backbone traces. Each transfer is
//     sent in windows that double from the initial window (RFC 6928) to 64
//     segments, with one delayed ACK per two segments. Every conn_state
//     outcome appears (weights in plan.go: SF ~69%, S0 6%, REJ 5%, ...),
//     with retransmitted SYNs (1 s, then 2 s backoff; never past Zeek's
//     5 s tcp_attempt_delay, after which a SYN would open a new connection).
//   - heavy: heavy hitters, TCP or UDP flows whose size is Pareto with
//     scale 500 segments (shape 1.3, capped at 100000).
//   - synflood: single SYNs from distinct random (spoofed) unicast IPv4
//     sources to one target's port 80, within a tenth of the window (S0).
//   - scan: episodes of 1000 probes from one source port of one scanner
//     to distinct ports of one target, about 1 ms apart: closed ports
//     answer RST (REJ), filtered ports stay silent (S0, one retransmitted
//     probe), open ports answer SYN-ACK and are reset by the scanner (RSTO).
//
// Flows of each scenario start at the order statistics of uniform draws
// over the window (Options.Duration), generated one at a time: the next
// start after x, with m flows left, is x + (1-x)(1 - V^(1/m)), V uniform.
// Within a flow, a packet that changes direction follows half an RTT
// later (the RTT is log-uniform in 1-100 ms per flow), one in the same
// direction follows an exponential burst gap (mean 150 µs; 60 µs for heavy
// hitters, whose windows grow to 256 segments), rounds are separated by
// think times (1 ms plus an exponential of mean 100 ms for TCP, 50 ms for
// UDP, 5 ms for heavy hitters; capped at 2 s), and
// no gap is under 20 µs.
//
// # Interleaving and memory
//
// Only active flows are held: a binary heap keyed by (next packet time,
// flow creation order) yields packets in time order; each scenario (each
// scan episode) is a source that starts its next flow when its previous
// one writes its first packet. Memory follows the number of concurrent
// flows; finished flows go back to a pool, so producing a packet does not
// allocate. Packets are rendered into one reused buffer.
//
// # Determinism
//
// The same Options give byte-identical output with the same build (float
// maths may round differently on another architecture, e.g. one that
// fuses multiply-adds). Every random draw comes from a PCG (math/rand/v2)
// seeded from Options.Seed: each flow has two streams seeded from (Seed, scenario,
// index): planRNG draws its behaviour (protocol, outcome, sizes) and
// timeRNG its endpoints, header fields and gaps; each source has its own
// stream, and one stream decides SPAN duplicates. Because a flow's packet
// count depends on planRNG alone, Options.Packets is met by simulating
// flows without rendering them and searching for the flow count whose
// packets reach the target.
//
// # conn_state
//
// The packets of each outcome drive Zeek's TCP endpoint states
// (TCPSessionAdapter::UpdateStateMachine) to exactly the conn_state that
// base/protocols/conn/main.zeek reports (C = originator, R = responder):
//
//	S0      C: SYN (1-3 of them)                          C SYN_SENT, R INACTIVE
//	REJ     C: SYN; R: RST-ACK                            R RESET while C SYN_SENT
//	S1      handshake, data, no FIN or RST                both ESTABLISHED
//	SF      handshake, data, FIN each way, last ACK       both CLOSED
//	S2      handshake, data, C: FIN; R: ACK               C CLOSED, R ESTABLISHED
//	S3      handshake, data, R: FIN; C: ACK               R CLOSED, C ESTABLISHED
//	RSTO    handshake, data, C: RST-ACK                   C RESET, R ESTABLISHED
//	RSTR    handshake, data, R: RST-ACK                   R RESET, C ESTABLISHED
//	RSTOS0  C: SYN (1-2), C: RST                          C RESET, R INACTIVE, history "SR"
//	RSTRH   R: SYN-ACK (1-2), R: RST                      R RESET, C INACTIVE
//	SH      C: SYN (1-2), C: FIN                          C CLOSED, R INACTIVE
//	SHR     R: SYN-ACK (1-2), R: FIN-ACK                  R CLOSED, C INACTIVE
//	OTH     C, R: data and ACKs, no SYN, FIN or RST       both PARTIAL
//
// For RSTRH and SHR Zeek first sees a SYN-ACK, so it flips the roles: the
// client that never appears is the originator. OTH flows begin with the
// client's packet. Server ports are well-known ports (Zeek's
// likely_server_ports) and client ports ephemeral (32768-60999), so Zeek's
// port heuristics agree. UDP is SF when both sides send, S0 when only the
// originator does and SHR when only the responder (from port 53 or 123)
// does; ICMP echo is OTH, with orig_p the request type (8, or 128 for
// ICMPv6) and resp_p the reply type (0, or 129), as Zeek logs it.
//
// 5-tuples are unique in either direction by construction (see addr.go),
// so the ground truth is per 5-tuple.
//
// # SPAN duplicates, snaplen, link types
//
// With Options.DupRate, each packet is written again, identical, 1-50 µs
// later (before the flow's next packet), as a SPAN port mirroring both
// directions does; with DupTTLChange the copy's TTL is one lower and the
// IPv4 header checksum is recomputed. Duplicates are not in the packet
// counts; dup_pkts counts them. With Options.Snaplen each record holds the
// first Snaplen bytes and the original length. Ethernet frames (link type
// 1) shorter than 60 bytes are zero padded, as on the wire; raw (link type
// 101) records start with the IP header. The pcap layout is documented in
// pcap.go.
package gen
