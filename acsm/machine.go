package acsm

import (
	"fmt"

	"github.com/flowmon/flowmon/capture"
)

// MachineKind selects the state machine.
type MachineKind uint8

// Machines.
const (
	// MachineZeek keeps Zeek's two TCP endpoint states (plus orientation and
	// two history bits) and answers Zeek's conn_state.
	MachineZeek MachineKind = iota
	// MachineFlags is the kBF paper's machine (Section VI): the state is the
	// last TCP flag combination seen on the flow.
	MachineFlags
)

func (m MachineKind) String() string {
	switch m {
	case MachineZeek:
		return "zeek"
	case MachineFlags:
		return "flags"
	}
	return fmt.Sprintf("MachineKind(%d)", uint8(m))
}

// ParseMachine reads "zeek" or "flags".
func ParseMachine(s string) (MachineKind, error) {
	switch s {
	case "zeek", "":
		return MachineZeek, nil
	case "flags":
		return MachineFlags, nil
	}
	return 0, fmt.Errorf("parse machine %q: %w", s, ErrConfig)
}

// numInputs is the size of the input alphabet: a packet is reduced to one
// byte, isOrig<<7 | payload<<6 | flags&0x3F (FIN SYN RST PSH ACK URG).
const numInputs = 256

func inputOf(isOrig, data bool, f capture.TCPFlags) uint8 {
	in := uint8(f & 0x3F)
	if data {
		in |= 1 << 6
	}
	if isOrig {
		in |= 1 << 7
	}
	return in
}

// trans is one cell of a compiled transition table.
type trans struct {
	next    uint16  // value after the packet
	anomaly Anomaly // stateful anomalies
	ends    bool    // the flow ended with this packet
}

// machine is a state machine compiled to tables over a dense numbering of
// its reachable values 0..values-1: the numbers are what backends store.
type machine struct {
	kind      MachineKind
	values    int
	next      []trans // [value*numInputs + input]
	conn      []ConnState
	tier      []Tier
	origIsDst []bool
	terminal  []bool
	// closed says a side has closed or reset (Zeek's IsClosed): a SYN
	// then starts a new connection on the 5-tuple.
	closed []bool
	// start[kind][origIsDst][rstos0] is a new flow's value before its first
	// packet is applied.
	start [3][2][2]uint16
	zs    []zstate // zeek machine: the unpacked values
	// tables is the digest of the tables a state's params carry, taken
	// once when the machine is compiled: the tables never change, and
	// taking it reads every transition.
	tables string
}

var (
	zeekMachine  = compileZeek()
	flagsMachine = compileFlags()
)

func machineFor(k MachineKind) *machine {
	if k == MachineFlags {
		return flagsMachine
	}
	return zeekMachine
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compileZeek numbers every zstate reachable from a start state and fills
// the tables by running zeekStepTCP / zeekStepOther on each.
func compileZeek() *machine {
	m := &machine{kind: MachineZeek}
	index := map[zstate]uint16{}
	var queue []zstate
	add := func(s zstate) uint16 {
		if i, ok := index[s]; ok {
			return i
		}
		i := uint16(len(m.zs))
		index[s] = i
		m.zs = append(m.zs, s)
		queue = append(queue, s)
		return i
	}
	for k := kindTCP; k <= kindOther; k++ {
		for d := 0; d < 2; d++ {
			for r := 0; r < 2; r++ {
				s := zstate{kind: k, origIsDst: d == 1, rstos0: r == 1 && k == kindTCP}
				m.start[k][d][r] = add(s)
			}
		}
	}
	type edge struct {
		from uint16
		in   int
		to   zstate
		an   Anomaly
	}
	var edges []edge
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		from := index[s]
		for in := 0; in < numInputs; in++ {
			isOrig, data, f := in&0x80 != 0, in&0x40 != 0, capture.TCPFlags(in&0x3F)
			var ns zstate
			var an Anomaly
			if s.kind == kindTCP {
				ns, an, _ = zeekStepTCP(s, isOrig, f, data)
			} else {
				ns = zeekStepOther(s, isOrig)
			}
			add(ns)
			edges = append(edges, edge{from, in, ns, an})
		}
	}
	m.values = len(m.zs)
	m.next = make([]trans, m.values*numInputs)
	for _, e := range edges {
		to := index[e.to]
		m.next[int(e.from)*numInputs+e.in] = trans{next: to, anomaly: e.an,
			ends: !m.zs[e.from].terminal() && e.to.terminal()}
	}
	m.conn = make([]ConnState, m.values)
	m.tier = make([]Tier, m.values)
	m.origIsDst = make([]bool, m.values)
	m.terminal = make([]bool, m.values)
	m.closed = make([]bool, m.values)
	for i, s := range m.zs {
		m.conn[i], m.tier[i], m.origIsDst[i], m.terminal[i] = s.connState(), s.tier(), s.origIsDst, s.terminal()
		m.closed[i] = s.kind == kindTCP && (s.orig == Closed || s.orig == Reset || s.resp == Closed || s.resp == Reset)
	}
	m.tables = m.digest()
	return m
}

// Flag machine values: bits 0-5 the last flags, bit 6 the orientation.
const flagsValues = 128

// compileFlags builds the paper's machine: the value is the last TCP flag
// combination (FIN SYN RST PSH ACK URG) and the orientation. A flow ends
// with a RST, or with a FIN when the previous packet also carried a FIN
// (both sides closing).
func compileFlags() *machine {
	m := &machine{kind: MachineFlags, values: flagsValues}
	m.next = make([]trans, flagsValues*numInputs)
	m.conn = make([]ConnState, flagsValues)
	m.tier = make([]Tier, flagsValues)
	m.origIsDst = make([]bool, flagsValues)
	m.terminal = make([]bool, flagsValues)
	m.closed = m.terminal
	for v := 0; v < flagsValues; v++ {
		f := capture.TCPFlags(v & 0x3F)
		m.origIsDst[v] = v&0x40 != 0
		m.conn[v] = flagsConnState(f)
		m.terminal[v] = f&fR != 0
		switch {
		case f&(fF|fR) != 0:
			m.tier[v] = TierClosed
		case f&fA != 0:
			m.tier[v] = TierEstablished
		default:
			m.tier[v] = TierNew
		}
		for in := 0; in < numInputs; in++ {
			nf := capture.TCPFlags(in & 0x3F)
			next := uint16(v&0x40) | uint16(nf)
			ends := nf&fR != 0 || (nf&fF != 0 && f&fF != 0)
			m.next[v*numInputs+in] = trans{next: next, ends: ends && !m.terminal[v]}
		}
	}
	for k := 0; k < 3; k++ {
		for d := 0; d < 2; d++ {
			m.start[k][d][0] = uint16(d << 6)
			m.start[k][d][1] = uint16(d << 6)
		}
	}
	m.tables = m.digest()
	return m
}

// flagsConnState maps a last-flags value to the nearest conn_state. The
// paper's machine does not know which side sent the flags, so this is only
// indicative: a SYN alone reads S0, a RST RSTO, a FIN SF, anything else S1.
func flagsConnState(f capture.TCPFlags) ConnState {
	switch {
	case f&fR != 0:
		return RSTO
	case f&fF != 0:
		return SF
	case f&(fS|fA) == fS:
		return S0
	case f == 0:
		return OTH
	}
	return S1
}

// likelyServerPort is flowmon's stand-in for Zeek's likely_server_ports,
// the ports its loaded analyzers register: a fixed list of well-known
// service ports (serverPorts), TCP and UDP alike.
func likelyServerPort(p uint16) bool { return serverPortSet[p>>6]&(1<<(p&63)) != 0 }

// serverPorts are the ports of Zeek's usual analyzers (DNS, DHCP, HTTP,
// TLS, SSH, FTP, SMTP, POP3, IMAP, LDAP, Kerberos, SMB, DCE-RPC, NTP, SNMP,
// syslog, RADIUS, SIP, MySQL, Redis, Modbus, DNP3, IRC, XMPP, RDP, QUIC)
// and the tunnels it decapsulates (Teredo, AYIYA, GTP, VXLAN, Geneve).
var serverPorts = []uint16{
	20, 21, 22, 23, 25, 53, 67, 68, 69, 80, 81, 88, 110, 111, 123, 135, 137, 138, 139, 143, 161, 162,
	389, 443, 445, 465, 500, 502, 514, 563, 585, 587, 614, 636, 853, 989, 990, 992, 993, 994, 995,
	1080, 1194, 1433, 1812, 1813, 2049, 2123, 2152, 3128, 3268, 3269, 3306, 3389, 3544, 4500, 4789,
	5060, 5061, 5072, 5222, 5223, 5269, 5353, 5355, 5432, 5900, 6081, 6379, 6666, 6667, 6668, 6669,
	8000, 8080, 8081, 8443, 8888, 20000,
}

var serverPortSet = func() (s [1024]uint64) {
	for _, p := range serverPorts {
		s[p>>6] |= 1 << (p & 63)
	}
	return s
}()

// flipNew decides, from a flow's first packet, whether its sender is the
// responder: a first SYN-ACK is flipped; a first TCP packet without SYN
// from a likely server port to an unlikely one (or to a higher likely
// one) is flipped, as Zeek's WantConnection heuristic does; a first UDP
// packet from a likely server port is flipped unless it goes to a
// broadcast or multicast address, as the dhcp.pcap baseline shows Zeek
// doing.
func flipNew(p *capture.Packet) bool {
	src, dst := p.Key.SrcPort, p.Key.DstPort
	if p.Reversed {
		src, dst = dst, src
	}
	switch p.Key.Proto {
	case capture.ProtoTCP:
		f := p.Flags
		if f&(fS|fA|fR|fF) == fS|fA {
			return true
		}
		if f&fS != 0 || !likelyServerPort(src) {
			return false
		}
		if likelyServerPort(dst) {
			return src < dst
		}
		return true
	case capture.ProtoUDP:
		// Never towards a broadcast or multicast address (a server does not
		// answer there); between two likely ports, the lower one serves.
		d := p.Key.Dst
		if p.Reversed {
			d = p.Key.Src
		}
		if d.IsMulticast() || (d.Is4() && d.As4() == [4]byte{255, 255, 255, 255}) {
			return false
		}
		return likelyServerPort(src) && (!likelyServerPort(dst) || src < dst)
	}
	return false
}

func kindOf(proto uint8) flowKind {
	switch proto {
	case capture.ProtoTCP:
		return kindTCP
	case capture.ProtoUDP:
		return kindUDP
	}
	return kindOther
}
