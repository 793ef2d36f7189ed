package gen

import (
	"regexp"
)

// A small, independent model of how Zeek assigns roles and conn_state
// (packet_analysis/protocol/tcp: WantConnection, UpdateStateMachine;
// base/protocols/conn/main.zeek: conn_state), used to check that the
// packets written for each flow really give the state its truth line says.

type zState uint8

const (
	zInactive zState = iota
	zSynSent
	zSynAckSent
	zPartial
	zEstablished
	zClosed
	zReset
)

// zLikelyServer lists the server ports the generator uses, all of which
// are in Zeek's likely_server_ports.
var zLikelyServer = map[uint16]bool{22: true, 25: true, 53: true, 80: true, 123: true, 143: true, 161: true, 443: true, 993: true, 8080: true}

// zFlip says whether Zeek makes the receiver of a connection's first
// packet the originator (TCPAnalyzer/UDPAnalyzer WantConnection).
func zFlip(proto uint8, sport, dport uint16, flags uint8) bool {
	switch proto {
	case protoTCP:
		if flags&fSYN != 0 && flags&fACK == 0 {
			return false
		}
		if zLikelyServer[sport] {
			if zLikelyServer[dport] {
				return flags&fSYN == 0 && sport < dport
			}
			return true
		}
	case protoUDP:
		return zLikelyServer[sport] && !zLikelyServer[dport]
	}
	return false
}

type zConn struct {
	proto          uint8
	os, rs         zState
	origUDP        bool
	respUDP        bool
	origSz, respSz int
	hist           []byte
	seen           [2]uint16 // history letters recorded, per direction
}

func (c *zConn) history(isOrig bool, code byte) {
	d, bit := 0, uint16(1)<<(code-'A')%16
	if !isOrig {
		d, code = 1, code+('a'-'A')
	}
	if c.seen[d]&bit == 0 {
		c.seen[d] |= bit
		c.hist = append(c.hist, code)
	}
}

// packet feeds one packet, sent by the originator or not.
func (c *zConn) packet(isOrig bool, flags uint8, plen int) {
	switch c.proto {
	case protoUDP:
		if isOrig {
			c.origUDP = true
		} else {
			c.respUDP = true
		}
		return
	case protoTCP:
	default:
		return
	}
	switch {
	case flags&fSYN != 0 && flags&fACK != 0:
		c.history(isOrig, 'H')
	case flags&fSYN != 0:
		c.history(isOrig, 'S')
	}
	if flags&fFIN != 0 {
		c.history(isOrig, 'F')
	}
	if flags&fRST != 0 {
		c.history(isOrig, 'R')
	}
	if plen > 0 {
		c.history(isOrig, 'D')
	} else if flags == fACK {
		c.history(isOrig, 'A')
	}
	if isOrig {
		c.origSz += plen
	} else {
		c.respSz += plen
	}
	ep, peer := &c.os, &c.rs
	if !isOrig {
		ep, peer = &c.rs, &c.os
	}
	syn, ack, fin, rst := flags&fSYN != 0, flags&fACK != 0, flags&fFIN != 0, flags&fRST != 0
	switch *ep {
	case zInactive:
		if syn {
			switch {
			case isOrig && ack:
				*ep = zSynAckSent
			case isOrig:
				*ep = zSynSent
			default:
				if *peer == zSynSent {
					*peer = zEstablished
				}
				*ep = zEstablished
			}
		}
		if fin {
			*ep = zClosed
		}
		if rst {
			*ep = zReset
		}
		if *ep == zInactive {
			switch {
			case !isOrig && plen == 0 && c.os == zSynSent:
			case ack && *peer == zEstablished:
				*ep = zEstablished
			default:
				*ep = zPartial
			}
		}
	case zSynSent, zSynAckSent:
		if fin {
			*ep = zClosed
		}
		if rst {
			*ep = zReset
		}
	case zPartial, zEstablished:
		if syn && *ep == zPartial && *peer == zInactive && !ack {
			*ep = zSynSent
		}
		if fin && !rst {
			*ep = zClosed
		}
		if rst {
			*ep = zReset
		}
	case zClosed:
		if rst {
			*ep = zReset
		}
	}
}

var zRSTOS0 = regexp.MustCompile(`^\^?S[^HAFGIQ]*R.*`)

// state is Zeek's conn_state function.
func (c *zConn) state() string {
	switch c.proto {
	case protoUDP:
		switch {
		case c.origUDP && c.respUDP:
			return "SF"
		case c.origUDP:
			return "S0"
		case c.respUDP:
			return "SHR"
		}
		return "OTH"
	case protoTCP:
	default:
		return "OTH"
	}
	os, rs := c.os, c.rs
	oInactive := os == zInactive || os == zPartial
	rInactive := rs == zInactive || rs == zPartial
	switch {
	case rs == zReset:
		if os == zSynSent || os == zSynAckSent || (os == zReset && c.origSz == 0 && c.respSz == 0) {
			return "REJ"
		}
		if oInactive {
			return "RSTRH"
		}
		return "RSTR"
	case os == zReset:
		if rInactive {
			if zRSTOS0.Match(c.hist) {
				return "RSTOS0"
			}
			return "OTH"
		}
		return "RSTO"
	case rs == zClosed && os == zClosed:
		return "SF"
	case os == zClosed:
		if rInactive {
			return "SH"
		}
		return "S2"
	case rs == zClosed:
		if oInactive {
			return "SHR"
		}
		return "S3"
	case os == zSynSent && rs == zInactive:
		return "S0"
	case os == zEstablished && rs == zEstablished:
		return "S1"
	}
	return "OTH"
}
