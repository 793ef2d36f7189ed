// Package report draws a replay: `flowmon replay --report FILE.html`, one
// HTML page that fetches nothing, and the top flows, talkers and ports of
// `--top N` and `flowmon flows`.
//
// # What is collected, and where
//
// A Collector attaches to the pipeline's three seams. On each shard, a
// pipeline.Consumer adds every packet past dedup into the bucket of its
// packet time (packets, wire bytes, tunnelled packets; the duplicates
// dedup drops through pipeline.DuplicateConsumer): a subtraction, a
// shift, a compare and a few adds, no allocation. The flows kept in the
// kernel bring no packets: their final records' packets and bytes are
// spread evenly over the buckets of their lives (pipeline.FlowConsumer),
// so for them the series shows average rates. A record.Sink takes
// every flow record once, on the pipeline's delivery goroutine: the
// buckets of its first and last packet (flows started and ended, and its
// final conn_state), and the tops. An alerts.Sink keeps the alerts' times.
// What the page shows besides (the counts by reason, the ACSM's error and
// memory, every summary key) is the pipeline.Summary the JSON summary
// prints, so the page's figures and `--json`'s are one.
//
// # Buckets
//
// A series is Buckets buckets of 2^k ns of packet time, from an origin
// that is a multiple of the width. A time past the last bucket (or before
// the first) doubles the width until the span fits, adding the buckets in
// pairs, in place: the series holds between Buckets/2 and Buckets
// buckets whatever the trace's length, and each bucket's count is exactly
// that of the packets within its bounds. Origins aligned to the width
// make two series of one width agree bucket by bucket, so the shards'
// series merge by bringing them to the coarser width and adding. Open
// flows per bucket come from two counts that add up the same way: open(b)
// = started up to b - ended before b.
//
// # Tops
//
// The top flows by bytes and by packets are two min-heaps of N records.
// Ports are counted exactly (every port of each conn.log protocol, in
// blocks made on first use). Addresses are unbounded, so each talker
// table is Space-Saving (Metwally, Agrawal and El Abbadi, "Efficient
// computation of frequent and top-k elements in data streams", ICDT 2005)
// by bytes over TopCapacity addresses: exact while there are no more;
// past it a new address takes the lightest one's place and weight, which
// becomes its error, so every address with more than 1/TopCapacity of the
// bytes is held and a held address's bytes are over the truth by at most
// its error. The tables by packets rank the same held addresses.
// Records and flow log lines (Tops.AddRecord, Tops.AddLine) give the same
// figures, so `flowmon flows` on a replay's log prints what `--top`
// printed.
package report
