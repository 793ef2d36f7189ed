package capture

import "time"

// DecodeOptions are what a source's decoder does beyond the defaults. The
// zero value is the package-level Decode. Sources take them through
// SetDecodeOptions before their first Next.
type DecodeOptions struct {
	// VerifyChecksums skips a packet whose IPv4 header, TCP, UDP, ICMP or
	// ICMPv6 checksum is wrong, counted by its reason
	// (ReasonBadIPChecksum ...), as Zeek does unless run with -C. Off by
	// default: a capture on a host sees the packets it sends before the
	// NIC fills in their checksums (offload), so they would all be
	// skipped. A segment not captured whole, and a fragment's transport
	// header, are not checked (see verifyTransport).
	VerifyChecksums bool
}

// Decode is the package-level Decode with o's options.
func (o *DecodeOptions) Decode(p *Packet, link uint16, data []byte, wireLen int, ts time.Time) Reason {
	p.reset(ts, link, wireLen, len(data))
	p.verify = o.VerifyChecksums
	return decodeLink(p, link, data)
}

// DecodeConfigurable is a source whose decoder takes DecodeOptions: the
// pcap and pcapng files, AF_PACKET and libpcap. The eBPF source's program
// parses in the kernel and verifies no checksum.
type DecodeConfigurable interface {
	SetDecodeOptions(DecodeOptions)
}
