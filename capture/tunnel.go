package capture

// TunnelKind names a tunnel protocol, as Zeek's Tunnel::Type does.
type TunnelKind uint8

// Tunnel kinds. ERSPAN, PPTP's enhanced GRE and Aruba's GRE are TunnelGRE,
// GRE in UDP too (its OuterKey is the UDP flow), as Zeek types them.
const (
	TunnelNone   TunnelKind = iota
	TunnelIP                // IP in IP: 4in4, 6in4, 4in6, 6in6 (protocols 4 and 41)
	TunnelGRE               // GRE (protocol 47, or UDP)
	TunnelVXLAN             // VXLAN over UDP
	TunnelGeneve            // Geneve over UDP
	TunnelGTP               // GTPv1-U over UDP
	TunnelTeredo            // Teredo over UDP
	TunnelAYIYA             // AYIYA over UDP
	numTunnelKinds

	// tunnelGREOverUDP is how a port list names GRE in UDP; the packet's
	// kind is TunnelGRE.
	tunnelGREOverUDP = numTunnelKinds
)

var tunnelNames = [numTunnelKinds]string{"none", "ip", "gre", "vxlan", "geneve", "gtpv1", "teredo", "ayiya"}

// String returns the kind's name, a metric label value.
func (k TunnelKind) String() string {
	if k < numTunnelKinds {
		return tunnelNames[k]
	}
	return "unknown"
}
