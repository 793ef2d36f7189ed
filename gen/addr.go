package gen

import (
	"math/rand/v2"
	"net/netip"
)

// Address plan. Ranges are disjoint, so a flow's 5-tuple can be made
// unique by construction instead of by a set of every tuple seen:
//
//	clients      10.0.0.0/8, 2001:db8:c000::/48  one 24-bit client id each
//	servers      198.18.0.0/15, 2001:db8:5e00::/48  4096 servers, Zipf-like popularity
//	spoofed      any other unicast IPv4 address, not link-local (SYN flood sources)
//
// Client ids: normal TCP/UDP flows come in groups of 16 sharing a client,
// each flow with its own slice of the ephemeral port range; normal ICMP
// flows, heavy hitters and scanners get a client of their own. A client
// never talks to the same server port twice, so no two flows share a
// 5-tuple in either direction (servers never originate, and client ports
// are ephemeral while server ports are well known).
const (
	mask24      = 1<<24 - 1
	serverPool  = 4096
	ephemeralLo = 32768 // Linux ip_local_port_range
	ephemeralN  = 61000 - ephemeralLo
	groupSize   = 16
	groupPorts  = ephemeralN / groupSize
)

// perm24 is a bijection of [0, 2^24): odd multiplications and xorshifts
// are each invertible modulo 2^24.
func perm24(x, key uint32) uint32 {
	x = (x ^ key) & mask24
	x = (x * 0x9E3779B1) & mask24
	x ^= x >> 13
	x = (x * 0x85EBCA6B) & mask24
	x ^= x >> 11
	return x
}

// perm32 is a bijection of the 32-bit integers (lowbias32).
func perm32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

func clientAddr(id int, v6 bool, key uint32) netip.Addr {
	x := perm24(uint32(id), key)
	if v6 {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0xc0, 0x00, 13: byte(x >> 16), 14: byte(x >> 8), 15: byte(x)})
	}
	return netip.AddrFrom4([4]byte{10, byte(x >> 16), byte(x >> 8), byte(x)})
}

func serverAddr(k int, v6 bool) netip.Addr {
	k++
	if v6 {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0x5e, 0x00, 14: byte(k >> 8), 15: byte(k)})
	}
	return netip.AddrFrom4([4]byte{198, 18 + byte(k>>16), byte(k >> 8), byte(k)})
}

// spoofAddr maps flood flow idx to a distinct unicast IPv4 address outside
// the client and server ranges: idx is first placed in 11.0.0.0/8 (a valid
// address), then perm32 is applied until the result is valid again (cycle
// walking), which permutes the valid addresses.
func spoofAddr(idx int, key uint32) netip.Addr {
	x := perm32(11<<24 | (uint32(idx)^key)&mask24)
	for !validSpoof(x) {
		x = perm32(x)
	}
	return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
}

func validSpoof(x uint32) bool {
	a := x >> 24
	return a != 0 && a != 10 && a != 127 && a < 224 && x>>16 != 169<<8|254 && x>>17 != (198<<24|18<<16)>>17
}

// Server ports: well-known ports that Zeek lists in likely_server_ports,
// so its role heuristics agree with the generator's originator.
var (
	tcpPorts   = []uint16{443, 80, 22, 25, 993, 8080, 53, 143}
	tcpWeights = []float64{0.5, 0.28, 0.05, 0.05, 0.04, 0.04, 0.02, 0.02}
	udpPorts   = []uint16{53, 443, 123, 161}
	udpWeights = []float64{0.6, 0.2, 0.15, 0.05}
)

// endpoints draws f's addresses, ports and per-direction header fields
// (from timeRNG, so the plan's packet counts do not depend on them).
func (g *Generator) endpoints(f *flow) {
	r, src, idx := f.timeRNG, f.src, f.scenIndex
	server := func() int { return int(logUniform(r, 1, serverPool+1)) - 1 }
	switch f.scen {
	case scenNormal:
		if f.proto == protoICMP {
			f.v6 = r.Float64() < g.opt.IPv6Share
			f.cAddr = clientAddr(g.idBase[scenNormal]+idx, f.v6, g.addrKey)
		} else {
			grp := idx / groupSize
			f.v6 = float64(splitmix64(g.opt.Seed^0x76360000^uint64(grp))>>11)/(1<<53) < g.opt.IPv6Share
			f.cAddr = clientAddr(grp, f.v6, g.addrKey)
			f.cPort = uint16(ephemeralLo + idx%groupSize*groupPorts + r.IntN(groupPorts))
		}
		f.sAddr = serverAddr(server(), f.v6)
		f.sPort = pickPort(r, f.proto, f.state)
	case scenHeavy:
		f.v6 = r.Float64() < g.opt.IPv6Share
		f.cAddr = clientAddr(g.idBase[scenHeavy]+idx, f.v6, g.addrKey)
		f.cPort = uint16(ephemeralLo + r.IntN(ephemeralN))
		f.sAddr = serverAddr(server(), f.v6)
		f.sPort = 443
		if f.proto == protoTCP && r.Float64() < 0.3 {
			f.sPort = 80
		}
	case scenFlood:
		f.cAddr = spoofAddr(idx, g.addrKey)
		f.cPort = uint16(1024 + r.IntN(65536-1024))
		f.sAddr, f.sPort = src.target, src.targetPort
	case scenScan:
		f.cAddr, f.cPort = src.scanner, src.sport
		f.sAddr, f.sPort = src.target, src.scanPort(idx-src.first)
	}
	if f.proto == protoICMP {
		// Zeek's ICMP "ports": orig_p the request type, resp_p the type of
		// its reply (echo reply 0 for ICMP, 129 for ICMPv6), as the
		// capture decoder keys them too.
		f.cPort, f.sPort = 8, 0
		if f.v6 {
			f.proto, f.cPort, f.sPort = protoICMPv6, 128, 129
		}
		f.icmpID = uint16(r.Uint32())
	}
	f.cRaw, f.sRaw = f.cAddr.As16(), f.sAddr.As16()
	if !f.v6 {
		c4, s4 := f.cAddr.As4(), f.sAddr.As4()
		copy(f.cRaw[:4], c4[:])
		copy(f.sRaw[:4], s4[:])
	}
	f.cTTL, f.sTTL = initialTTL(r)-uint8(1+r.IntN(20)), initialTTL(r)-uint8(1+r.IntN(20))
	f.cWin, f.sWin = []uint16{64240, 65535, 29200}[r.IntN(3)], []uint16{65160, 28960, 65535}[r.IntN(3)]
	f.cIPID, f.sIPID = uint16(r.Uint32()), uint16(r.Uint32())
	f.cISN, f.sISN = r.Uint32(), r.Uint32()
	f.cNext, f.sNext = f.cISN+1, f.sISN+1
	f.label = r.Uint32() & 0xfffff
	f.salt = r.Uint32()
	f.mss = 1460
	if f.v6 {
		f.mss = 1440
	}
	f.rtt = int64(logUniform(r, 1000, 100000))
	f.burst, f.thinkMean = 150, 100000
	switch f.scen {
	case scenHeavy:
		f.rtt, f.burst, f.thinkMean = int64(logUniform(r, 1000, 50000)), 60, 5000
	case scenFlood:
		f.cTTL, f.cWin = uint8(32+r.IntN(224)), uint16(r.Uint32())
	case scenScan:
		f.cWin = 1024
	}
	if f.proto == protoUDP && f.scen != scenHeavy {
		f.thinkMean = 50000
	}
}

func initialTTL(r *rand.Rand) uint8 {
	return [...]uint8{64, 64, 64, 128, 128, 255}[r.IntN(6)]
}

// pickPort draws a server port. States that Zeek has to flip (the first
// packet comes from the responder: SHR, RSTRH) or guess (OTH) use ports
// every Zeek install lists as likely server ports.
func pickPort(r *rand.Rand, proto uint8, st ConnState) uint16 {
	switch proto {
	case protoTCP:
		if st == SHR || st == RSTRH || st == OTH {
			return tcpPorts[r.IntN(4)]
		}
		return tcpPorts[weighted(r, tcpWeights)]
	case protoUDP:
		if st == SHR {
			return []uint16{53, 123}[r.IntN(2)]
		}
		return udpPorts[weighted(r, udpWeights)]
	}
	return 0
}
