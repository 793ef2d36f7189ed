// Package defrag reassembles IPv4 and IPv6 datagrams from their
// fragments, in fixed memory, for the capture sources: a Reassembler is
// a capture.Defragmenter, which a source (the file reader, an AF_PACKET
// socket, a libpcap handle) hands every fragment Decode finds. A
// fragment alone says little (a later one carries no ports, so it is
// keyed on its addresses only); Zeek sees the datagram, and so, with a
// Reassembler, does flowmon: one packet, decoded from the reassembled
// bytes and keyed on its full 5-tuple, when the last piece comes.
//
// # Memory
//
// New allocates everything: a table of Config.MaxDatagrams datagrams in
// progress (about 1 KiB each: 64 block indexes, up to 128 covered ranges,
// the first fragment's header), a hash index of twice as many chains,
// Config.MaxBytes of data in 1 KiB blocks, and one output buffer of 64
// KiB and a header. A fragment's data is copied into the blocks its
// offsets fall in, so a datagram is laid out as it will be delivered and
// reassembly is one copy out; nothing is allocated per fragment
// (TestAddNoAllocs). The output buffer holds the last datagram until the
// next Add: the packet's Payload points into it.
//
// # What is a datagram
//
// Fragments are of one datagram when they share RFC 791's (source,
// destination, protocol, identification) for IPv4, RFC 8200's (source,
// destination, identification) for IPv6. The header of the fragment at
// offset 0 becomes the datagram's (IPv4: its options; IPv6: the
// extension headers before the fragment header, the fragment header
// removed and its next header named by the one before); the IPv4 total
// length, or the IPv6 payload length, and the IPv4 checksum are
// rewritten, the flags cleared but DF. The datagram takes the time of
// the fragment that completes it, and the link type and VLAN count of
// that fragment's frame. Its end is the last fragment's (no "more
// fragments"); where fragments disagree, it is the furthest data seen,
// and the datagram is whole once its data runs without a hole from 0
// to at least the end: what Zeek's FragReassembler does with the same
// inconsistencies. A first fragment too short for its transport header
// (a tiny fragment: the TCP header split over two) is a piece like any
// other; the sources hand it over though Decode finds it truncated. An
// IPv6 atomic fragment (offset 0, no more) is no fragment to Decode, as
// to Zeek (RFC 6946): it never comes here.
//
// # Overlaps
//
// Config.Policy says whose bytes a datagram keeps where fragments
// overlap: First (the default: Zeek, whose reassembler only fills holes;
// Windows, Solaris, Mac OS) or Last (Cisco IOS). Snort's frag3 and
// Suricata name these target-based policies after the systems
// (Novak, "Target-Based Fragmentation Reassembly", 2005).
//
// # Time and overload
//
// Time is packet time: a datagram not whole Config.Timeout after its
// first fragment (30 s by default, Linux's IPv4 ipfrag_time; Zeek holds
// fragments forever unless frag_timeout is set, Suricata 60 s) is
// dropped at the next fragment the source reads. Nothing is dropped
// unseen: each fragment taken in is, at any time, in a datagram handed
// on, counted dropped by reason (capture.DefragDrop: timeout; table_full
// and bytes_full, the oldest datagram evicted for a new one;
// too_large, a datagram over 65,535 bytes; too_many_fragments, over 128;
// invalid, an IPv6 header before the fragment header longer than 216
// bytes), or held (capture.DefragStats.Held). A fragment cut short by
// the snaplen cannot be reassembled and is handed on as Decode made it
// (capture.DefragStats.Passed). Eviction is of the oldest datagram, so
// that a datagram whole within milliseconds outlives a flood of pieces
// that never complete.
//
// A Reassembler is not safe for concurrent use: each source has its own,
// on the goroutine that reads it.
package defrag
