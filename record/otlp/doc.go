// Package otlp exports flow records to an OpenTelemetry collector as
// OTLP logs (the logs signal), over OTLP/HTTP (binary protobuf, gzip)
// or OTLP/gRPC (gzip), compression optional. The wire format is the collector's own generated
// code (go.opentelemetry.io/proto/otlp), marshalled by
// google.golang.org/protobuf and sent by google.golang.org/grpc, so what
// flowmon sends is what a collector decodes.
//
// # One log record a flow record
//
// Each record.Flow becomes one LogRecord: its time is the flow's last
// packet (conn.log's ts + duration), its observed time the export, its
// event name "flowmon.flow", its severity INFO, and its body empty, or
// the flow's conn.log line (record/connlog) as a string
// (Options.Body: the attributes hold the same fields, and the line
// doubles the bytes to send). Its attributes are OpenTelemetry's semantic
// conventions where they have a name for the field, and flowmon.<the
// conn.log field's name> where they do not:
//
//	source.address, source.port            id.orig_h, id.orig_p (the originator)
//	destination.address, destination.port  id.resp_h, id.resp_p
//	network.transport                      proto: tcp, udp, icmp (ICMPv6 too), unknown_transport
//	network.type                           ipv4 or ipv6
//	flowmon.uid                            uid
//	flowmon.ts, flowmon.duration           ts, duration (seconds, doubles)
//	flowmon.orig_bytes, flowmon.resp_bytes orig_bytes, resp_bytes
//	flowmon.conn_state, flowmon.history    conn_state, history ("" for unset)
//	flowmon.missed_bytes                   missed_bytes
//	flowmon.orig_pkts, flowmon.resp_pkts   orig_pkts, resp_pkts
//	flowmon.orig_ip_bytes, ..resp_ip_bytes orig_ip_bytes, resp_ip_bytes
//	flowmon.tunnel_parents                 tunnel_parents (an array; absent when none)
//	flowmon.community_id                   community_id
//	flowmon.confidence                     the ACSM's confidence (record.Flow.Confidence)
//	flowmon.end_reason                     why the record was written: idle, active, end, forced, resources
//	flowmon.interim                        true on an interim record (conn.log's interim); absent otherwise
//
// The semantic conventions have no attribute for a flow's bytes or
// packets by direction (network.io.direction qualifies a metric, not a
// pair of counts in one record), hence flowmon's. An interim record
// carries the flow's counts so far, as its conn.log line does (IPFIX
// sends deltas instead).
//
// The resource is service.name "flowmon", service.version, host.name and,
// for a live run, network.interface.name; the instrumentation scope is
// this package's path.
//
// # Delivery
//
// WriteFlows copies the records into a bounded queue (internal/queue)
// and returns; one goroutine takes batches of up to Options.BatchSize
// records, waiting up to Options.BatchTimeout for a batch to fill, and
// exports each. A request that fails in a way that may pass (no
// connection, HTTP 429, 502, 503 or 504, gRPC Unavailable and the other
// codes the OTLP specification calls retryable, ResourceExhausted with
// a RetryInfo) is sent again after a backoff doubling from 250 ms to
// 30 s, or after the Retry-After (HTTP) or RetryInfo (gRPC) delay when
// that is longer; meanwhile the queue fills, then drops, counted. A
// request refused otherwise (HTTP 400, gRPC InvalidArgument, ...) is
// dropped, counted as rejected, as are the records of a partial
// success. While requests fail the exporter's health component
// ("otlp:ENDPOINT") fails, logged when it starts and when it ends.
package otlp
