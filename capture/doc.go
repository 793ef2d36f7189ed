// Package capture is where packets enter flowmon: capture files are read,
// each frame is decoded in place into a Packet carrying its canonical flow
// Key and the one hash every later stage derives its indexes from, and
// what does not decode is counted by reason and skipped.
//
// # Pieces
//
//   - Source (source.go) is the seam the engine reads: Next, Stats, Close.
//     Reader is one capture file, Files several in turn (OpenFiles).
//   - Live sources (live.go) satisfy it too, returning ErrNoPacket when a
//     poll times out and keeping the kernel's counts (KernelStats):
//     AFPacket (afpacket*.go), one TPACKET_V3 ring per worker in a fanout
//     group, read in place; PcapLive (pcaplive.go, -tags pcap), libpcap;
//     EBPF (ebpf*.go), a ring of the eBPF program. Each is an IfaceSource:
//     it says whether its interface is up, down or gone (deleted, or
//     made again with a new index), and reopens itself on the interface
//     that has its name again (live.go says what each sees).
//   - Reader (reader.go, pcapfile.go) reads classic pcap with its own reader
//     (records are slices of the read buffer, returned from a window on
//     its buffered bytes without a call into it; either byte order, micro- or
//     nanosecond timestamps, caplen above len as libpcap allows) and pcapng
//     through gopacket's pcapgo; gzip is undone first, "-" is standard
//     input. A damaged or truncated file yields every packet before the
//     damage, then a *ReadError naming the byte offset; a record cut short
//     is damage, not a packet (capinfos and tcpdump count the same).
//   - Decode (decode.go) fills a Packet from one frame of a link type
//     (Ethernet with VLAN, QinQ, MPLS and PPPoE; raw IP, IPv4 and IPv6;
//     Linux SLL and SLL2; BSD null, OpenBSD loop) without allocating and
//     never panics: it
//     returns ReasonNone for a flow packet, or the Reason it is not one.
//   - Key (key.go) is the 5-tuple in canonical form (the endpoint that
//     sorts first is Src; Packet.Reversed gives the direction), with a
//     fixed 40-byte layout shared with other agents and the eBPF side, and
//     Hash, XXH3-64 of that layout with HashSeed (hash.go), pinned by
//     TestHashPinned because filters built from it are exchanged.
//   - Fragments (defrag.go): a DefragSource (the file reader, AF_PACKET,
//     libpcap) given a Defragmenter (package capture/defrag) hands it
//     every fragment Decode marks, and returns the datagram once whole,
//     decoded from the reassembled bytes; Decode notes where a fragment's
//     IP packet lies in its frame (Packet.FragmentIP), and Stats.Defrag
//     counts what was taken, reassembled, dropped, held and passed.
//   - Reason (reason.go) is the fixed set of why a frame was not a flow
//     packet, a metric label; Stats (stats.go) counts packets, bytes, link,
//     network and transport classes and reasons.
//
// Decode and a classic pcap Reader's Next allocate nothing per packet
// (TestDecodeNoAllocs, BenchmarkReaderNext); a Source is used by one
// goroutine.
package capture
