// Package dedup drops duplicate packets before anything counts them, so
// packet and byte counts are exactly-once even when a SPAN port or a
// mirror delivers a packet twice.
//
// # Fingerprint
//
// A packet is identified by what a SPAN port or a router does not change
// and what distinguishes two packets of one flow: the flow hash of the
// canonical key and the direction (the directed 5-tuple), the IP
// identification, the IP total length, the fragment kind, the TCP flags,
// sequence and acknowledgement numbers and window, the transport payload
// length and the first PayloadBytes bytes of the captured payload. It
// ignores the link-layer header, VLAN tags, the TTL or hop limit and the IP
// checksum (which changes with the TTL). The fields are laid out in a fixed
// stack buffer and hashed with capture.HashBytes (XXH3-64, the project
// seed), without allocating.
//
// Two distinct packets with equal fingerprints (an IPv6 or IP-ID-zero UDP
// packet repeating the same first payload bytes and length within the
// window) are indistinguishable here and count once; raising PayloadBytes
// narrows that.
//
// # Window
//
// Fingerprints go into a fingerprint table (package filters/recent): a
// cache line a bucket of fifteen 25-bit fingerprints with the tick they
// were seen in, each bucket a ring overwritten oldest first. A packet is
// remembered for at least Window and at most 1.25·Window of packet time,
// unless its bucket receives fifteen more within that time, which the
// table's sizing (four a bucket at the expected rate) makes a 1.2e-5
// event at the window's end (counted: flowmon_dedup_forgotten_early_total).
// A unique packet is wrongly dropped as a duplicate with probability at
// most 4.5e-7, its fingerprint's; a FPRate below that is refused.
//
// Config.FBF selects the paper's Forgetful Bloom Filter (package
// filters/fbf) instead, with N past filters and refresh period
// Window/(N+1), so a packet is remembered for at least Window (and at most
// Window·(N+2)/(N+1)); its constituent filters are sized from the expected
// packets per window and the false-positive target FPRate. It never
// forgets a packet early and takes any FPRate, in a third less memory at
// the default 1e-6 (and far less at looser targets), but tests three
// filters and sets sixteen bits in two a packet, more than twice the
// table's time (BenchmarkCheckPrint; docs/results/pipeline.md, "What each
// stage costs the whole, and the dedup window").
//
// Optionally a second, longer window marks TCP retransmissions (always an
// FBF: at its looser target and longer window, 1e-4 and 3 s, Bloom
// filters take 25 MB at 1 Mpps where the table would take 60): a TCP
// segment with payload (or SYN or FIN) whose direction, sequence number,
// payload length and SYN/FIN/RST flags were seen within Retrans.Window,
// but which is not a capture duplicate (its IP ID or other fields differ).
// Retransmissions are reported and counted, never dropped.
//
// # Metrics
//
// Metrics returns, for any number of per-worker Dedups, the counters
// flowmon_dedup_packets_total, flowmon_dedup_duplicates_total and
// flowmon_dedup_retransmissions_total, and per window ("duplicate",
// "retransmission") the estimated false-positive ratio and the memory, with
// the table the fingerprints it forgot early, and with the FBF its filter
// count, refresh period and refreshes, read at scrape time from snapshots
// the owners publish; the engine wraps them in its Prometheus collector.
//
// # Concurrency
//
// A Dedup is owned by one goroutine (a worker); Check, CheckPrint and Seen
// are not safe for concurrent use. Stats and Metrics may run on any
// goroutine, and so may Fingerprint, which reads only the configuration.
//
// The check is split in two so that the payload need not travel: the
// goroutine that holds the packet's bytes computes Fingerprint, and the
// worker that owns the packet's flow runs CheckPrint with it. A duplicate
// has the same flow hash as its original, so when the engine shards flows
// by hash over several Dedups (each sized by Config.Share), a packet and
// its duplicates always meet in the same one.
package dedup
