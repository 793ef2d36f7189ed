package bpf

// Tunnels are the UDP tunnels the programs hand up whole for user space
// to decode: the datagrams to or from one of Ports, and on any port
// those whose payload passes capture.DecodeOptions' DetectTeredo (Teredo)
// or DetectAYIYA (AYIYA) test, which the programs' parser runs as the Go
// decoder does, so that a datagram the decoder takes for a tunnel never
// stays in a flow of the programs'.
type Tunnels struct {
	Ports         []uint16
	Teredo, AYIYA bool
}

// detect is the port_bits map's detect field for t (parse.h's DETECT_*).
func (t Tunnels) detect() uint32 {
	var d uint32
	if t.Teredo {
		d |= 1
	}
	if t.AYIYA {
		d |= 2
	}
	return d
}
