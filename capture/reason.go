package capture

// Reason says why a packet could not be decoded into a flow packet. The set
// is fixed, so it can be a metric label and a fixed-size counter array.
type Reason uint8

// Reasons a packet is skipped. ReasonNone means the packet decoded.
// ReasonNotIP and ReasonTunnelDepth are frames that are well formed but
// carry no IP flow flowmon reads (ARP, LLDP, ..., tunnels nested too
// deep); the others are malformed input. The reasons after ReasonNotIP
// come after it so that the eBPF program numbers the ones before the
// same way (bpf/capture.c); it meets none of them (tunnels it hands up
// whole, and it verifies no checksum).
const (
	ReasonNone               Reason = iota
	ReasonLinkTruncated             // shorter than its link-layer header
	ReasonLinkUnsupported           // a link type flowmon does not decode
	ReasonIPTruncated               // shorter than the IP header it announces
	ReasonIPVersion                 // IP version nibble does not match the header
	ReasonIPHeaderLength            // IPv4 IHL below 5
	ReasonIPTotalLength             // IPv4 total length below the header length
	ReasonIPv6ExtTruncated          // an IPv6 extension header runs past the capture
	ReasonTransportTruncated        // transport header cut before its ports (or TCP before its flags)
	ReasonTCPDataOffset             // TCP data offset below 5 words
	ReasonNotIP                     // well-formed frame with no IP payload
	ReasonTunnelTruncated           // a tunnel header (GRE, ERSPAN, VXLAN, VXLAN-GPE, Geneve, GTP, Teredo, AYIYA, 802.11, PPP) cut short
	ReasonGREHeader                 // a GRE version other than 0 and 1, routing or reserved flags, enhanced GRE not carrying PPP
	ReasonTunnelDepth               // more tunnels nested than DecodeOptions.MaxTunnelDepth
	ReasonBadIPChecksum             // IPv4 header checksum wrong (DecodeOptions.VerifyChecksums)
	ReasonBadTCPChecksum            // TCP checksum wrong (DecodeOptions.VerifyChecksums)
	ReasonBadUDPChecksum            // UDP checksum wrong (DecodeOptions.VerifyChecksums)
	ReasonBadICMPChecksum           // ICMP or ICMPv6 checksum wrong (DecodeOptions.VerifyChecksums)
	ReasonAHTruncated               // an IPv4 packet's IPsec authentication header runs past the packet
	ReasonNSHHeader                 // a network service header of a version other than 0, shorter than its base and service path headers, or cut short
	ReasonNFLOGHeader               // an NFLOG header or attribute cut short or of a length below 4, or no payload attribute
	numReasons
)

// NumReasons is how many reasons there are, ReasonNone included: every
// Reason is below it, so it is the length of a counter array by reason.
const NumReasons = int(numReasons)

var reasonNames = [numReasons]string{
	ReasonNone:               "none",
	ReasonLinkTruncated:      "link_truncated",
	ReasonLinkUnsupported:    "link_unsupported",
	ReasonIPTruncated:        "ip_truncated",
	ReasonIPVersion:          "ip_version",
	ReasonIPHeaderLength:     "ip_header_length",
	ReasonIPTotalLength:      "ip_total_length",
	ReasonIPv6ExtTruncated:   "ipv6_ext_truncated",
	ReasonTransportTruncated: "transport_truncated",
	ReasonTCPDataOffset:      "tcp_data_offset",
	ReasonNotIP:              "not_ip",
	ReasonTunnelTruncated:    "tunnel_truncated",
	ReasonGREHeader:          "gre_header",
	ReasonTunnelDepth:        "tunnel_depth",
	ReasonBadIPChecksum:      "bad_ip_checksum",
	ReasonBadTCPChecksum:     "bad_tcp_checksum",
	ReasonBadUDPChecksum:     "bad_udp_checksum",
	ReasonBadICMPChecksum:    "bad_icmp_checksum",
	ReasonAHTruncated:        "ah_truncated",
	ReasonNSHHeader:          "nsh_header",
	ReasonNFLOGHeader:        "nflog_header",
}

// String returns the reason's metric label value.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Error makes a Reason usable as an error value.
func (r Reason) Error() string { return "decode: " + r.String() }

// Malformed reports whether the reason is broken input rather than a frame
// that simply carries no IP flow.
func (r Reason) Malformed() bool {
	return r != ReasonNone && r != ReasonNotIP && r != ReasonTunnelDepth
}

// Reasons lists every reason except ReasonNone, in order.
func Reasons() []Reason {
	rs := make([]Reason, 0, numReasons-1)
	for r := ReasonNone + 1; r < numReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}
