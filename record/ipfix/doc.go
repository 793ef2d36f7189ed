// Package ipfix exports flow records (record.Flow) as IPFIX (RFC 7011,
// information elements of RFC 7012 and IANA's registry, biflows of
// RFC 5103) over UDP or TCP to one or more collectors: an Exporter is a
// record.Sink.
//
// # Messages
//
// Every number is big endian. A message is a 16-byte header and sets:
//
//	version (2) = 10 | length (2) | export time (4, seconds, wall clock)
//	sequence number (4) | observation domain ID (4)
//
// and each set is a 4-byte header, set ID (2) and length (2, header
// included), then its records. Set ID 2 holds template records:
//
//	template ID (2, 256 or 257) | field count (2) | field specifiers
//
// a specifier being an element ID (2) and a length (2), followed by a
// 4-byte enterprise number when the ID's top bit (the enterprise bit) is
// set. A data set's ID is its template's, and its records are the
// template's fields in order, with no gap. An element of length 65535 is
// of variable length: in a record it is a length octet and the bytes, or
// for 255 bytes and more the octet 255, a 2-byte length and the bytes.
// A data set is padded with zeros to a multiple of 4 bytes, fewer than
// its smallest record (the RFC allows any padding shorter than a record;
// the alignment keeps the next set's header aligned).
//
// A message holds as many records as fit in the largest message the MTU
// allows (MTU less the IP and UDP or TCP headers); a batch's records go
// out at the end of the batch, in a part-full message if need be, so no
// record waits in the exporter for the next batch. The sequence number
// is the count, modulo 2^32, of data records sent to that collector
// from the observation domain before the message (template records are
// not counted): a collector that misses a message sees the gap.
//
// # Templates
//
// Template 256 is for IPv4 flows and 257 for IPv6, with the fields in
// this order:
//
//	sourceIPv4Address (8) or sourceIPv6Address (27)
//	destinationIPv4Address (12) or destinationIPv6Address (28)
//	sourceTransportPort (7), destinationTransportPort (11): 0 for ICMP
//	icmpTypeCodeIPv4 (32) or icmpTypeCodeIPv6 (139): type·256 + code, 0 but for ICMP
//	protocolIdentifier (4)
//	tcpControlBits (6, 2 bytes as RFC 7125 has it)
//	flowStartMilliseconds (152), flowEndMilliseconds (153)
//	packetDeltaCount (2), octetDeltaCount (1): IP packets and IP bytes
//	flowEndReason (136)
//	ingressInterface (10): only when Options.IngressInterface is set
//
// In biflow mode (ModeBiflow, RFC 5103) one record is one flow, in the
// originator's direction (the source is Zeek's id.orig_h), followed by
// the reverse elements (the same element IDs with the enterprise bit and
// the reverse PEN, 29305) reversePacketDeltaCount, reverseOctetDeltaCount
// and reverseTcpControlBits for the responder's side. In compat mode
// (ModeCompat) the templates have no reverse elements, and a flow is two
// one-way records, the originator's then the responder's (the latter
// only when the responder sent packets), each with its own counts and
// flags and the flow's start and end times (a record does not know a
// direction's own): collectors that map only some of RFC 5103's reverse
// elements (nfdump and goflow2 among them) then count both directions.
//
// tcpControlBits is the union of the flags the direction's packets had
// (record.Flow's OrigTCPFlags and RespTCPFlags, which the pipeline keeps
// per side; capture.TCPFlags has RFC 7125's bits).
//
// flowEndReason is the record's (record.Flow.EndReason: idle timeout,
// active timeout for an interim record, end of flow, forced end at the
// end of a run, lack of resources at the flow table's cap); a record
// without one gets endOfFlowDetected (3) when its conn_state says it
// ended with a FIN or an RST, idleTimeout (1) otherwise.
//
// The counts are delta counts: an interim record of a flow still open
// (active timeout) carries the flow's counts since its start, and the
// exporter sends what it adds to the flow's records sent before, keeping
// the counts sent for each flow with interim records until its last
// record (at most the flows open, which the flow table bounds).
//
// # Enterprise elements
//
// With Options.EnterpriseNumber set (the operator's own private
// enterprise number: flowmon has none, and claims none by default), both
// templates end with three elements under that number:
//
//	1 connState:  string, variable length: Zeek's conn_state ("SF", "-")
//	2 history:    string, variable length: Zeek's history letters
//	3 confidence: float32: record.Flow.Confidence
//
// # Delivery
//
// Each collector has its own goroutine, connection, encoder and queue of
// up to Options.Queue records: WriteFlows copies the records into each
// queue and does not wait (but with Options.WaitForRoom, for a collector
// that is not failing); a full queue drops the records, counted
// (flowmon_ipfix_records_dropped_total{reason="queue_full"}). A UDP
// collector is sent at most Options.Rate data records a second, the
// goroutine sleeping between messages: UDP tells the sender nothing of
// the datagrams a collector's full socket buffer drops, so the exporter
// sends no faster than the collector reads. TCP is not paced: its flow
// control does that. UDP templates go out before the first data, again
// every TemplateRefresh, and before data after a second without a
// message (a collector gone meanwhile then answers unreachable before
// the data go). TCP templates go out at every (re)connect. A collector
// that refuses the connection (TCP) or whose port answers unreachable
// (UDP) is retried with a doubling backoff up to a bound, the records of
// the message whose write failed, and those after it, staying queued
// (the sequence number counts only what was sent). Each collector is a
// health.Component, "ipfix:ADDR": its failure is logged when it starts
// and when it ends, counted, flowmon_component_up says which, and the
// agent's /healthz names it, whether or not records flow meanwhile.
// WriteFlows and Flush report the records lost as a record.LossError
// (naming the collectors failing then), which the pipeline counts.
package ipfix
