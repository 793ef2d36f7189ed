// Package pcaplive is the libpcap live source: one libpcap handle on a
// network interface, through gopacket's pcap package, a
// capture.LiveSource fed to one shard of the live pipeline (libpcap has
// no fanout, so one shard whatever the workers). It also compiles tcpdump
// filter expressions into classic BPF programs (CompileBPF), for the
// AF_PACKET source's filter and a replay's.
//
// Use it where AF_PACKET is not there (a platform other than Linux), or
// to read what libpcap reads; on Linux the AF_PACKET source
// (capture/afpacket) is faster, with one socket per worker.
//
// Requirements: cgo and libpcap (its headers to build, the library to
// run), and the build tag pcap: without it the package is empty and the
// agent's pcap source says how to build it. Capturing needs the rights
// libpcap needs (CAP_NET_RAW on Linux, or root).
package pcaplive
