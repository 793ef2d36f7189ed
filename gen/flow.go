package gen

import (
	"github.com/flowmon/flowmon/internal/hashmix"
	"math"
	"math/rand/v2"
	"net/netip"
)

// scenario is the traffic pattern a flow belongs to.
type scenario uint8

const (
	scenNormal scenario = iota
	scenHeavy
	scenFlood
	scenScan
	numScenarios
)

var scenarioNames = [numScenarios]string{"normal", "heavy", "synflood", "scan"}

func (s scenario) String() string { return scenarioNames[s] }

// ConnState is a Zeek conn_state outcome (base/protocols/conn/main.zeek).
type ConnState uint8

// The Zeek conn_state values, in the order Zeek documents them.
const (
	S0 ConnState = iota
	S1
	SF
	REJ
	S2
	S3
	RSTO
	RSTR
	RSTOS0
	RSTRH
	SH
	SHR
	OTH
	NumConnStates
)

var connStateNames = [NumConnStates]string{"S0", "S1", "SF", "REJ", "S2", "S3", "RSTO", "RSTR", "RSTOS0", "RSTRH", "SH", "SHR", "OTH"}

// String returns Zeek's name of the state.
func (s ConnState) String() string {
	if s < NumConnStates {
		return connStateNames[s]
	}
	return "invalid"
}

// ParseConnState returns the state Zeek names s.
func ParseConnState(s string) (ConnState, bool) {
	for i, n := range connStateNames {
		if n == s {
			return ConnState(i), true
		}
	}
	return 0, false
}

// Protocol numbers the generator writes.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

// TCP flag bits as they sit in the header's flags byte.
const (
	fFIN = 0x01
	fSYN = 0x02
	fRST = 0x04
	fPSH = 0x08
	fACK = 0x10
)

// pkt describes one packet of a flow; render turns it into bytes. A flow
// keeps the packet it wrote last so that a SPAN duplicate can be rendered
// again bit for bit.
type pkt struct {
	resp     bool   // sent by the responder
	flags    uint8  // TCP flags
	synOpts  bool   // TCP header carries MSS, SACK-permitted and window-scale options
	plen     uint16 // transport payload length
	ipid     uint16 // IPv4 identification (set when written)
	seq, ack uint32 // TCP sequence/ack; ICMP: ack holds the echo identifier, seq the echo sequence
}

// phase is the part of a TCP conversation a flow is in.
type phase uint8

const (
	phSyn phase = iota
	phSynAck
	phHsAck
	phData
	phClose
	phDone
)

// closeStep is one packet of a TCP flow's ending.
type closeStep struct {
	resp  bool
	flags uint8
}

// flow is one generated connection: its plan (drawn from planRNG, so its
// packet counts depend on nothing else), its endpoints and timing (drawn
// from timeRNG) and its progress. Flows are pooled and reused.
type flow struct {
	t  int64  // heap key: time of the next event, µs after the trace start
	id uint64 // creation order, breaks ties in the heap

	planPCG, timePCG rand.PCG
	planRNG, timeRNG *rand.Rand

	src   *source
	scen  scenario
	state ConnState
	proto uint8
	v6    bool

	cAddr, sAddr netip.Addr
	cRaw, sRaw   [16]byte // addresses as they go on the wire (IPv4 in the first 4 bytes)
	cPort, sPort uint16
	cTTL, sTTL   uint8
	cWin, sWin   uint16
	cIPID, sIPID uint16
	label        uint32 // IPv6 flow label
	salt         uint32 // offsets the flow's payload bytes in payloadTable
	mss          uint16
	rtt          int64 // µs
	burst        int64 // mean gap between back-to-back packets, µs

	// TCP progress.
	ph                 phase
	synLeft, synSent   uint8
	ackLeft, ackSent   uint8 // SYN-ACKs
	hsAck              bool
	cISN, sISN         uint32
	cNext, sNext       uint32
	rounds             int32 // request/response rounds left
	xfer               uint8 // 0 none, 1 request (originator sends), 2 response
	segs, win, acks    int32 // segments left in the transfer, in the window; ACKs owed
	winSize, cwnd      int32
	cwndMax            int32
	winStart           uint32 // sender's sequence number at the window's start
	ackK               int32  // ACKs sent for the current window
	lastLen            uint16
	reqMax             int32
	closing            [3]closeStep
	nClose, closeIdx   uint8
	think              bool // the next packet comes after a think time
	respPareto, respXm float64
	respCap            float64

	// UDP / ICMP progress.
	aPer, bPer, aLeft, bLeft int32
	cLen, sLen               uint16
	seq                      int32 // datagram / echo sequence number
	icmpID                   uint16
	interval                 int64 // ping interval, µs (0: not ICMP)

	// Timing state.
	retx      uint8   // which retransmission the next gapRetx is
	thinkMean float64 // mean think time, µs

	// Accounting.
	scenIndex  int
	started    bool
	done       bool
	dupPending bool
	first      int64 // time of the first packet
	last       int64 // time of the last packet written (duplicates included)
	pendingAt  int64 // time of the pending packet
	origPkts   int64
	respPkts   int64
	dupPkts    int64
	pending    pkt // the next packet to write
	prev       pkt // the packet written last, for its SPAN duplicate
}

// newFlow returns a flow with its two random sources wired.
func newFlow() *flow {
	f := &flow{}
	f.planRNG = rand.New(&f.planPCG)
	f.timeRNG = rand.New(&f.timePCG)
	return f
}

// splitmix64 is SplitMix64's output function: one step of its sequence.
func splitmix64(x uint64) uint64 { return hashmix.Mix(x + hashmix.Golden) }

// seed resets both random sources for flow idx of scenario sc.
func (f *flow) seed(seed uint64, sc scenario, idx int) {
	k := uint64(sc)<<56 ^ uint64(idx)
	f.planPCG.Seed(splitmix64(seed^0x706c616e), splitmix64(k))
	f.timePCG.Seed(splitmix64(seed^0x74696d65), splitmix64(k^0x5555555555555555))
}

// reset clears everything but the random sources.
func (f *flow) reset() {
	planPCG, timePCG, planRNG, timeRNG := f.planPCG, f.timePCG, f.planRNG, f.timeRNG
	*f = flow{}
	f.planPCG, f.timePCG, f.planRNG, f.timeRNG = planPCG, timePCG, planRNG, timeRNG
}

// pareto draws from a Pareto distribution with scale xm and shape alpha,
// capped at max.
func pareto(r *rand.Rand, xm, alpha, max float64) float64 {
	u := 1 - r.Float64() // (0, 1]
	return math.Min(xm/math.Pow(u, 1/alpha), max)
}

// weighted picks an index with probability proportional to w.
func weighted(r *rand.Rand, w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	u := r.Float64() * total
	for i, x := range w {
		if u < x {
			return i
		}
		u -= x
	}
	return len(w) - 1
}

// logUniform draws from [lo, hi] with a uniform logarithm.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return lo * math.Exp(r.Float64()*math.Log(hi/lo))
}
