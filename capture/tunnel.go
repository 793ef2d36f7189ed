package capture

// TunnelKind names a tunnel protocol, as Zeek's Tunnel::Type does.
type TunnelKind uint8

// Tunnel kinds. ERSPAN, PPTP's enhanced GRE and Aruba's GRE are TunnelGRE,
// GRE in UDP too (its Carriers.Outer is the UDP flow), as Zeek types them.
const (
	TunnelNone     TunnelKind = iota
	TunnelIP                  // IP in IP: 4in4, 6in4, 4in6, 6in6 (protocols 4 and 41)
	TunnelGRE                 // GRE (protocol 47, or UDP)
	TunnelVXLAN               // VXLAN over UDP
	TunnelGeneve              // Geneve over UDP
	TunnelGTP                 // GTPv1-U over UDP
	TunnelTeredo              // Teredo over UDP
	TunnelAYIYA               // AYIYA over UDP
	TunnelVXLANGPE            // VXLAN-GPE over UDP (draft-ietf-nvo3-vxlan-gpe), with or without NSH inside
	numTunnelKinds

	// tunnelGREOverUDP is how a port list names GRE in UDP; the packet's
	// kind is TunnelGRE.
	tunnelGREOverUDP = numTunnelKinds
)

var tunnelNames = [numTunnelKinds]string{"none", "ip", "gre", "vxlan", "geneve", "gtpv1", "teredo", "ayiya", "vxlan-gpe"}

// String returns the kind's name, a metric label value.
func (k TunnelKind) String() string {
	if k < numTunnelKinds {
		return tunnelNames[k]
	}
	return "unknown"
}

// Carriers are the flows that carried a tunnelled packet
// (Packet.Carriers). They are set whatever Decode's Reason, so the outer
// flow of an inner packet that does not decode can still be counted.
type Carriers struct {
	// Outer carried the innermost tunnel, from the innermost
	// encapsulating IP header (and UDP header, for the UDP tunnels; ports
	// 0 and the IP protocol, 4, 41 or 47, for the others).
	Outer Carrier
	// Outermost, when Packet.Tunnels > 1, carried the outermost tunnel:
	// with Outer, every carrier of a packet two tunnels deep (a third's
	// in between is not kept).
	Outermost Carrier
}

// Carrier is one flow that carried a tunnel.
type Carrier struct {
	// Key is the flow's canonical key, Hash its Key.Hash(); Reversed says
	// the packet travelled from Key.Dst to Key.Src.
	Key  Key
	Hash uint64
	// Len is the UDP payload length (0 for the IP-level tunnels): the
	// bytes the carrier's flow counts.
	Len      uint32
	Reversed bool
}

// Directed returns the carrier's key in the direction the packet
// travelled.
func (c *Carrier) Directed() Key {
	if c.Reversed {
		return c.Key.Reverse()
	}
	return c.Key
}
