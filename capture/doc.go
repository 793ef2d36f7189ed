// Package capture is where packets enter flowmon: capture files are read,
// each frame is decoded in place into a Packet carrying its canonical flow
// Key and the one hash every later stage derives its indexes from, and
// what does not decode is counted by reason and skipped.
//
// # Pieces
//
//   - Source (source.go) is the seam the engine reads: Next, Stats, Close.
//     Reader is one capture file, Files several in turn (OpenFiles).
//   - LiveSource (live.go) is what a live source provides beyond Source:
//     ErrNoPacket when a poll times out, the decoder's options, the
//     kernel's counts (KernelStats), whether its interface is up, down or
//     gone (deleted, or made again with a new index) and a reopen on the
//     interface that has its name again (live.go says what each source
//     sees), and the eBPF program's counts where one feeds it. Each live
//     source is a package of its own, which imports this one:
//     capture/afpacket (one TPACKET_V3 ring per worker in a fanout group,
//     read in place), capture/pcaplive (libpcap, -tags pcap) and
//     bpf/source (a ring of the eBPF program, beside it).
//   - Classic BPF programs (sockfilter.go, filter.go): ParseBPF reads
//     tcpdump -ddd's output for an AF_PACKET socket's filter, and Filter
//     runs one on a file's frames in user space.
//   - Reader (reader.go, pcapfile.go) reads classic pcap with its own reader
//     (records are slices of what holds the file's bytes, returned from a
//     window on them without a call a record; either byte order, micro- or
//     nanosecond timestamps, caplen above len as libpcap allows) and pcapng
//     through gopacket's pcapgo; gzip is undone first, "-" is standard
//     input. A regular, uncompressed classic pcap file is read in place
//     from a mapping, a 2 MiB window resident at a time (pcapmap.go,
//     Linux); the rest through a read buffer filled by read(2), as is a
//     file mmap fails on and the part of a file written after it was
//     mapped. A damaged or truncated file yields every packet before the
//     damage, then a *ReadError naming the byte offset; a record cut short
//     is damage, not a packet (capinfos and tcpdump count the same).
//   - Decode (decode.go) fills a Packet from one frame of a link type
//     (Ethernet with VLAN, QinQ, MPLS, PPPoE, PBB (802.1ah), VN-tag,
//     Cisco FabricPath and NSH; raw IP, IPv4 and IPv6; Linux SLL and
//     SLL2; BSD null, OpenBSD loop; Linux NFLOG) without allocating and
//     never panics: it returns ReasonNone for a flow packet, or the
//     Reason it is not one. See "Headers on the way" below.
//     DecodeOptions.Decode is the same with the options a source was
//     given (decodeopts.go: the tunnels' UDP ports and depth bound).
//   - Tunnels (decode_tunnel.go) are taken off as Zeek takes them off, and
//     the innermost packet is the flow (Key, Hash, ports, TCP fields, TTL,
//     IP lengths); see "Tunnels" below.
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
// # Tunnels
//
// Decode takes off, to DecodeOptions.MaxTunnelDepth tunnels (Zeek's
// Tunnel::max_depth, 4; deeper is ReasonTunnelDepth):
//
//   - GRE (IP protocol 47; RFC 2784 and 2890: checksum, key and sequence
//     fields, and PPTP's acknowledgement): version 0 carrying IPv4, IPv6,
//     MPLS or any EtherType the link walk reads, transparent Ethernet
//     bridging (0x6558), ERSPAN type I (0x88BE without the sequence bit:
//     Ethernet at once), type II (0x88BE, an 8-byte header) and type III
//     (0x22EB, 12 bytes and the 8-byte platform subheader when its O bit
//     is set), and Aruba's types (0x8200-0x82F0, 0x8300-0x8370, 0x9000:
//     an 802.11 data frame, LLC/SNAP, an EtherType; of an A-MSDU the
//     first subframe, where Zeek counts each as a packet); version 1
//     (PPTP's enhanced GRE, 0x880B) carrying PPP with IPv4 or IPv6. Other
//     versions, the routing bit and the reserved flags are
//     ReasonGREHeader, as Zeek drops them.
//   - IP in IP (protocols 4 and 41 in IPv4 or IPv6: 4in4, 6in4, 4in6,
//     6in6).
//   - UDP tunnels on their ports (DecodeOptions; Zeek's defaults): GRE in
//     UDP (4754), VXLAN (4789; Ethernet), VXLAN-GPE (4790, which Zeek
//     does not decode, tshark does; draft-ietf-nvo3-vxlan-gpe: IPv4,
//     IPv6, Ethernet or NSH by its next protocol), Geneve (6081; its options
//     skipped; Ethernet, IPv4 or IPv6 by its protocol type), GTPv1 (2152
//     and 2123; the optional sequence, N-PDU and next-type fields and the
//     extension header chain; only a G-PDU, type 255, carries a packet),
//     Teredo (3544; authentication and origin indication headers, then
//     an IPv6 packet as long as the rest of the datagram) and AYIYA
//     (5072; identity and signature skipped; a forward of IPv4 or IPv6).
//     Zeek decapsulates on the connection's responder port; a decoder of
//     single packets takes the destination port, then the source port.
//     Teredo and AYIYA are also recognised on any port by the tests of
//     Zeek's protocol detection (DetectTeredo, DetectAYIYA), as Teredo
//     relays answer from ports of their own.
//
// A UDP datagram on a tunnel port that carries no packet (GTP signalling,
// a Teredo bubble, an AYIYA message that is not a forward, ARP in VXLAN, a
// header that is not the protocol's) is the UDP flow it is, with the
// tunnels outside it, as Zeek logs it. A tunnel header cut short is
// ReasonTunnelTruncated.
//
// # Headers on the way
//
// Some headers are neither a link nor a tunnel: the decoder passes them
// and the flow is the packet after them, with no carrier.
//
//   - IPsec AH (RFC 4302; IP protocol 51): its length is its payload
//     length field plus 2, in 4-byte words, and its next header names
//     what follows, as the IPv6 extension header walk reads it; in IPv4
//     too, so that AH then TCP is the TCP flow (Arkime does the same;
//     Zeek and tshark's Community ID key an IPv4 packet with AH on
//     protocol 51) and AH then IP in IP is a tunnel. A header running
//     past the packet is ReasonAHTruncated.
//   - IPsec ESP (protocol 50) hides its ports: it is a flow of protocol
//     50 without ports, Zeek's unknown_transport, whose Community ID
//     has no ports, as the spec has it for protocols without them.
//   - NSH (RFC 8300; EtherType 0x894F, or VXLAN-GPE's next protocol 4):
//     the base, service path and context headers, as long as its length
//     field (4-byte words) says, then IPv4, IPv6, Ethernet, NSH or MPLS
//     by its next protocol. Another version, a length below 2 words or a
//     header cut short is ReasonNSHHeader.
//   - Linux NFLOG (link type 239): the family, version and resource id,
//     then attributes (a length and a type in the logging host's byte
//     order, padded to 4 bytes); the packet is the payload attribute's,
//     IPv4 or IPv6 by the family. An attribute cut short or shorter than
//     its header, or no payload, is ReasonNFLOGHeader.
//
// # What Zeek logs for the outer side
//
// Packet.Tunnels counts the tunnels passed, Packet.Tunnel is the
// innermost's kind, and Packet.Carriers the flows that carried it:
// Carriers.Outer (key, hash, direction and UDP payload length) the flow
// of the innermost tunnel (its IP addresses with the UDP ports for the
// UDP tunnels, or ports 0 and protocol 4, 41 or 47), Carriers.Outermost
// the flow of the outermost tunnel when there are two or more. They are
// set whatever the Reason. The carriers live outside the Packet, which
// the pipeline copies for every packet: the decoder writes them, only for
// a tunnelled packet, into a Carriers the Packet keeps from one packet to
// the next, so they are valid until the Packet is decoded into again.
// Zeek's conn.log, whose baselines the tests compare with, has:
//
//   - for a UDP tunnel (VXLAN, VXLAN-GPE, Geneve, GTP, Teredo, AYIYA,
//     GRE in UDP)
//     the carrying UDP flow as a connection of its own, counting every
//     packet of the tunnel (Carriers.Outer, and Carriers.Outermost when
//     nested);
//   - for GRE and IP in IP no connection for the carrier: it is in
//     tunnel.log only;
//   - in the inner connection's tunnel_parents the uid of the innermost
//     encapsulation: the carrying UDP connection's for VXLAN, Geneve,
//     GTP, Teredo and AYIYA; for GRE (also in UDP) and IP in IP, a tunnel
//     uid per outer address pair and tunnel type, which is not a
//     connection's (Carriers.Outer's addresses and Tunnel name it).
//     It is the set of such uids over the connection's packets (an ICMP
//     flow reaching a Teredo host through two relays has two), and a
//     carrying connection inside another tunnel has that tunnel's as its
//     own (VXLAN in Geneve: the VXLAN flow's parent is the Geneve flow).
//
// Decode and a classic pcap Reader's Next allocate nothing per packet,
// tunnels included (a Packet's Carriers are made once, at the first
// tunnelled packet decoded into it), read from a buffer or a mapping
// (TestDecodeNoAllocs, TestDecodeTunnelsNoAllocs, TestMappedNextNoAllocs,
// BenchmarkReaderNext); a Source is used by one goroutine. A packet's
// Payload is a slice of the frame, valid until the next Next: the mapped
// reader drops the pages behind it as it goes, and nothing downstream
// keeps a frame's bytes (the pipeline copies packets into its batches
// without their payload, the defragmenter copies what it holds). The eBPF
// program parses as Decode does without the tunnels (it walks the PBB,
// VN-tag and FabricPath headers as Decode does) and hands a tunnel's
// frames up whole for Decode.
package capture
