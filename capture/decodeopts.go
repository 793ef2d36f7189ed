package capture

import (
	"fmt"
	"time"
)

// DecodeOptions are the decoder's settings: which UDP ports carry which
// tunnel, and how deep tunnels nest. The zero value decapsulates the
// IP-level tunnels (GRE, IP in IP) only; DefaultDecodeOptions are Zeek's
// defaults. A DecodeOptions is read, never written, by Decode, so one value
// may serve several goroutines.
type DecodeOptions struct {
	// UDP ports of each tunnel. A UDP packet to one of them (or, failing
	// that, from one) is decapsulated; an empty list turns that tunnel off.
	VXLANPorts      []uint16
	VXLANGPEPorts   []uint16 // VXLAN-GPE, which Zeek does not decode
	GenevePorts     []uint16
	GTPPorts        []uint16 // GTPv1; only G-PDUs (type 255) carry a packet
	TeredoPorts     []uint16
	AYIYAPorts      []uint16
	GREOverUDPPorts []uint16
	// DetectTeredo and DetectAYIYA look for Teredo and AYIYA on any UDP
	// port, by the header tests Zeek's protocol detection makes: Teredo
	// relays answer from ports of their own.
	DetectTeredo bool
	DetectAYIYA  bool
	// MaxTunnelDepth is how many tunnels may nest; a packet inside more
	// is skipped with ReasonTunnelDepth. 0 means DefaultMaxTunnelDepth.
	MaxTunnelDepth int

	// VerifyChecksums skips a packet whose IPv4 header, TCP, UDP, ICMP or
	// ICMPv6 checksum is wrong, counted by its reason
	// (ReasonBadIPChecksum ...), as Zeek does unless run with -C. Off by
	// default: a capture on a host sees the packets it sends before the
	// NIC fills in their checksums (offload), so they would all be
	// skipped. A segment not captured whole, and a fragment's transport
	// header, are not checked (see verifyTransport).
	VerifyChecksums bool

	// ports, when set (compiled), is the port lists as a table, so that
	// a UDP datagram's tunnel is a load for each port instead of a walk
	// of the lists; without it the lists are walked. The sources set it
	// on their copy, once, when they are given the options.
	ports *portTable
}

// portTable is the port lists compiled: a bit a port, which every UDP
// datagram tests for both its ports (8 KiB, so it stays in cache
// whatever ports the traffic uses), and for the ports that have it set,
// the tunnel they name, read only for a datagram on a tunnel port.
type portTable struct {
	bits [1 << 16 / 64]uint64
	// kinds holds in its low four bits the tunnel of the first list that
	// holds the port, which a destination port names, and in its high
	// four the last list's, which a source port names, as the lists are
	// read (udpTunnelByPort): they differ only for a port in two lists,
	// which Validate refuses.
	kinds [1 << 16]uint8
}

func (t *portTable) has(port uint16) bool { return t.bits[port>>6]&(1<<(port&63)) != 0 }

// byPort is the tunnel a datagram's ports name, TunnelNone for none.
func (t *portTable) byPort(sport, dport uint16) TunnelKind {
	switch {
	case t.has(dport):
		return TunnelKind(t.kinds[dport] & 0x0F)
	case t.has(sport):
		return TunnelKind(t.kinds[sport] >> 4)
	}
	return TunnelNone
}

// Compiled returns a copy of o with its port set made, which a source decodes
// with (DecodeOptions.Decode reads the lists without it). The lists must not
// change afterwards.
func (o *DecodeOptions) Compiled() *DecodeOptions {
	c := *o
	t := new(portTable)
	for _, l := range c.portLists() {
		for _, port := range l.ports {
			if !t.has(port) {
				t.bits[port>>6] |= 1 << (port & 63)
				t.kinds[port] = uint8(l.kind)
			}
			t.kinds[port] = t.kinds[port]&0x0F | uint8(l.kind)<<4
		}
	}
	c.ports = t
	return &c
}

// DefaultMaxTunnelDepth is Zeek's Tunnel::max_depth.
const DefaultMaxTunnelDepth = 4

// MaxMaxTunnelDepth bounds MaxTunnelDepth, so a packet's decoding work is
// bounded whatever the settings.
const MaxMaxTunnelDepth = 8

// Zeek's default tunnel ports (its vxlan_ports, geneve_ports,
// gtpv1_ports, teredo_ports, ayiya_ports and gre_ports).
const (
	PortVXLAN      = 4789
	PortVXLANGPE   = 4790 // IANA's; Zeek has no VXLAN-GPE analyzer
	PortGeneve     = 6081
	PortGTPU       = 2152
	PortGTPC       = 2123
	PortTeredo     = 3544
	PortAYIYA      = 5072
	PortGREOverUDP = 4754
)

// DefaultDecodeOptions are Zeek's: every tunnel on its registered ports,
// Teredo and AYIYA detected on any port, four tunnels deep at most; and
// VXLAN-GPE on its registered port, which Zeek does not decapsulate (a
// datagram to it is a UDP flow in Zeek's conn.log), as tshark does.
func DefaultDecodeOptions() DecodeOptions {
	return DecodeOptions{
		VXLANPorts:      []uint16{PortVXLAN},
		VXLANGPEPorts:   []uint16{PortVXLANGPE},
		GenevePorts:     []uint16{PortGeneve},
		GTPPorts:        []uint16{PortGTPU, PortGTPC},
		TeredoPorts:     []uint16{PortTeredo},
		AYIYAPorts:      []uint16{PortAYIYA},
		GREOverUDPPorts: []uint16{PortGREOverUDP},
		DetectTeredo:    true,
		DetectAYIYA:     true,
		MaxTunnelDepth:  DefaultMaxTunnelDepth,
	}
}

// defaultDecodeOptions are what Decode and the sources use until they are
// given others.
var defaultDecodeOptions = func() *DecodeOptions {
	o := DefaultDecodeOptions()
	return o.Compiled()
}()

// Validate checks the options: a port in one list only, a depth within
// bounds.
func (o *DecodeOptions) Validate() error {
	if o.MaxTunnelDepth < 0 || o.MaxTunnelDepth > MaxMaxTunnelDepth {
		return fmt.Errorf("max tunnel depth %d must be from 0 (default %d) to %d", o.MaxTunnelDepth, DefaultMaxTunnelDepth, MaxMaxTunnelDepth)
	}
	seen := map[uint16]string{}
	for _, l := range o.portLists() {
		for _, port := range l.ports {
			if port == 0 {
				return fmt.Errorf("%s ports: port 0 is not a port", l.name)
			}
			if other, ok := seen[port]; ok && other != l.name {
				return fmt.Errorf("port %d is both a %s and a %s port", port, other, l.name)
			}
			seen[port] = l.name
		}
	}
	return nil
}

// UDPTunnelPorts lists every port of o's tunnel lists: the datagrams the
// eBPF program hands up whole for Decode to decapsulate.
func (o *DecodeOptions) UDPTunnelPorts() []uint16 {
	var ports []uint16
	for _, l := range o.portLists() {
		ports = append(ports, l.ports...)
	}
	return ports
}

type namedPorts struct {
	name  string
	kind  TunnelKind
	ports []uint16
}

func (o *DecodeOptions) portLists() [7]namedPorts {
	return [7]namedPorts{
		{"vxlan", TunnelVXLAN, o.VXLANPorts},
		{"vxlan-gpe", TunnelVXLANGPE, o.VXLANGPEPorts},
		{"geneve", TunnelGeneve, o.GenevePorts},
		{"gtp", TunnelGTP, o.GTPPorts},
		{"teredo", TunnelTeredo, o.TeredoPorts},
		{"ayiya", TunnelAYIYA, o.AYIYAPorts},
		{"gre-over-udp", tunnelGREOverUDP, o.GREOverUDPPorts},
	}
}

// Decode fills p from one captured frame of the given link type, in place
// and without allocating. wireLen is the frame's length on the wire and ts
// its capture time. It returns ReasonNone when p holds a flow packet, or
// why not; p's contents are unspecified then, except the tunnel fields
// (Tunnels > 0: the Carriers, the outer flows, are known). Decode never
// panics, whatever the bytes.
func (o *DecodeOptions) Decode(p *Packet, link uint16, data []byte, wireLen int, ts time.Time) Reason {
	p.reset(ts, link, wireLen, len(data))
	p.verify = o.VerifyChecksums
	switch link {
	case LinkEthernet:
		return o.decodeEthernet(p, data)
	case LinkRaw, linkRawAlt, linkRawAlt14:
		return o.decodeIPByVersion(p, data)
	case LinkIPv4:
		return o.decodeIPv4(p, data)
	case LinkIPv6:
		return o.decodeIPv6(p, data)
	}
	return o.decodeOtherLink(p, link, data)
}
