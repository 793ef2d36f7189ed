package gen

// Outcome weights of normal TCP flows, indexed by ConnState. SF dominates,
// as in backbone traces; every other state is there often enough that a
// few thousand flows show each of them.
var normalTCPStates = [NumConnStates]float64{
	S0: 0.06, S1: 0.04, SF: 0.69, REJ: 0.05, S2: 0.015, S3: 0.015, RSTO: 0.03,
	RSTR: 0.03, RSTOS0: 0.01, RSTRH: 0.01, SH: 0.01, SHR: 0.01, OTH: 0.03,
}

var heavyTCPStates = [NumConnStates]float64{SF: 0.8, S1: 0.1, RSTO: 0.05, RSTR: 0.05}

// Scan probes: closed ports answer RST (REJ), filtered ports stay silent
// (S0, one retransmitted probe), open ports answer SYN-ACK and the
// scanner's kernel resets (RSTO).
var scanStates = [NumConnStates]float64{REJ: 0.8, S0: 0.15, RSTO: 0.05}

var normalUDPStates = [NumConnStates]float64{SF: 0.85, S0: 0.12, SHR: 0.03}

// plan resets f to flow idx of scenario sc and draws its behaviour: the
// protocol, the conn_state outcome and the sizes. Only planRNG is used, so
// a flow's packet counts depend on nothing but (Seed, sc, idx); the
// packet-count search (counter) relies on that.
func (f *flow) plan(o *Options, sc scenario, idx int) {
	f.reset()
	f.seed(o.Seed, sc, idx)
	f.scen, f.scenIndex = sc, idx
	r := f.planRNG
	switch sc {
	case scenNormal:
		u := r.Float64()
		switch {
		case u < o.ICMPShare:
			f.planICMP()
		case u < o.ICMPShare+o.UDPShare:
			f.planUDP(ConnState(weighted(r, normalUDPStates[:])), false)
		default:
			f.planTCP(ConnState(weighted(r, normalTCPStates[:])), false)
		}
	case scenHeavy:
		if r.Float64() < 0.2 {
			f.planUDP(SF, true)
		} else {
			f.planTCP(ConnState(weighted(r, heavyTCPStates[:])), true)
		}
	case scenFlood:
		f.proto, f.state, f.synLeft = protoTCP, S0, 1
	case scenScan:
		f.planTCP(ConnState(weighted(r, scanStates[:])), false)
		if f.state == S0 {
			f.synLeft = 2
		}
		if f.state == RSTO { // SYN, SYN-ACK, RST from the scanner
			f.hsAck, f.rounds = false, 0
			f.closing[0], f.nClose = closeStep{flags: fRST}, 1
		}
	}
}

// planTCP sets the phases that make Zeek report state st (see doc.go for
// the transitions each sequence drives).
func (f *flow) planTCP(st ConnState, heavy bool) {
	r := f.planRNG
	f.proto, f.state = protoTCP, st
	f.reqMax, f.respXm, f.respPareto, f.respCap, f.cwndMax = 40, 1, 1.2, 3000, 64
	if heavy {
		f.respXm, f.respPareto, f.respCap, f.cwndMax = 500, 1.3, 100000, 256
	}
	retx := func(p float64) uint8 { // a retransmitted SYN now and then
		if r.Float64() < p {
			return 2
		}
		return 1
	}
	closeBy := func(steps ...closeStep) { f.nClose = uint8(copy(f.closing[:], steps)) }
	orig := func(fl uint8) closeStep { return closeStep{flags: fl} }
	resp := func(fl uint8) closeStep { return closeStep{resp: true, flags: fl} }
	switch st {
	case S0:
		// At most 3 SYNs (0, 1, 3 s): Zeek drops an unanswered attempt
		// after tcp_attempt_delay (5 s), and a later SYN would open a
		// second connection with the same 5-tuple.
		f.synLeft = 1 + uint8(weighted(r, []float64{0.45, 0.3, 0.25}))
	case REJ:
		f.synLeft = 1
		closeBy(resp(fRST | fACK))
	case RSTOS0:
		f.synLeft = retx(0.3)
		closeBy(orig(fRST))
		f.think = true
	case SH:
		f.synLeft = retx(0.3)
		closeBy(orig(fFIN))
		f.think = true
	case RSTRH:
		f.ackLeft = retx(0.3)
		closeBy(resp(fRST))
		f.think = true
	case SHR:
		f.ackLeft = retx(0.3)
		closeBy(resp(fFIN | fACK))
		f.think = true
	case OTH: // midstream: data and ACKs, no SYN, FIN or RST
		f.ph = phData
		f.rounds = f.drawRounds(heavy)
	default: // established: SF, S1, S2, S3, RSTO, RSTR
		f.synLeft, f.ackLeft, f.hsAck = retx(0.03), 1, true
		f.rounds = f.drawRounds(heavy)
		switch st {
		case SF:
			if r.Float64() < 0.7 {
				closeBy(orig(fFIN|fACK), resp(fFIN|fACK), orig(fACK))
			} else {
				closeBy(resp(fFIN|fACK), orig(fFIN|fACK), resp(fACK))
			}
		case S2:
			closeBy(orig(fFIN|fACK), resp(fACK))
		case S3:
			closeBy(resp(fFIN|fACK), orig(fACK))
		case RSTO:
			closeBy(orig(fRST | fACK))
		case RSTR:
			closeBy(resp(fRST | fACK))
		}
	}
}

// drawRounds draws how many request/response exchanges a connection has.
func (f *flow) drawRounds(heavy bool) int32 {
	if heavy {
		return 1
	}
	n := int32(1)
	for n < 20 && f.planRNG.Float64() < 0.3 {
		n++
	}
	return n
}

// planUDP: SF = both sides send, S0 = only the originator, SHR = only the
// responder (Zeek flips the flow because the sender's port is a server's).
func (f *flow) planUDP(st ConnState, heavy bool) {
	r := f.planRNG
	f.proto, f.state = protoUDP, st
	f.cLen, f.sLen = uint16(20+r.IntN(40)), uint16(40+r.IntN(460))
	f.aPer, f.bPer = 1, 1
	switch {
	case heavy:
		f.rounds = int32(pareto(r, 10, 1.3, 1000)) // a stream: a request per 20-100 datagrams
		f.bPer = 20 + int32(r.IntN(81))
		f.sLen = uint16(1100 + r.IntN(150))
	case st == S0: // retries of an unanswered query
		f.rounds, f.bPer = 1+int32(weighted(r, []float64{0.6, 0.25, 0.15})), 0
	case st == SHR:
		f.rounds, f.aPer = 1+int32(r.IntN(3)), 0
	default:
		f.rounds = 1
		for f.rounds < 50 && r.Float64() < 0.4 {
			f.rounds++
		}
	}
	f.aLeft, f.bLeft = f.aPer, f.bPer
}

// planICMP: echo requests, usually answered. Zeek reports ICMP as OTH.
func (f *flow) planICMP() {
	r := f.planRNG
	f.proto, f.state = protoICMP, OTH
	f.rounds = 1 + int32(r.IntN(8))
	f.aPer, f.bPer = 1, 1
	if r.Float64() < 0.1 {
		f.bPer = 0
	}
	f.aLeft, f.bLeft = f.aPer, f.bPer
	f.cLen = 56
	f.interval = 1000000
	if r.Float64() < 0.2 {
		f.interval = 200000
	}
}
