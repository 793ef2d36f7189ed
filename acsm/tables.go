package acsm

// Tables is a compiled machine as flat arrays, for a program outside Go
// that steps it as Tracker does: the kernel's flow state
// (bpf/flowstate.c). A flow's value starts at Start and moves by Next at
// each packet; the value says its conn_state and orientation (Conn,
// Info). Tracker's own step (tracker.go) is the reference: a stepper over
// these tables gives its answers (TestTablesStepLikeTracker).
type Tables struct {
	// Values is the count of the machine's values, 0..Values-1.
	Values int
	// Next[value*256+input] is the value after a packet whose input is
	// Input(...), with TransEnds set when that packet ends the flow.
	Next []uint16
	// Info[value] holds InfoOrigIsDst, InfoTerminal and InfoClosed.
	Info []uint8
	// Conn[value] is the value's conn_state.
	Conn []ConnState
	// Start[kind][origIsDst][rst] is a new flow's value before its first
	// packet: kind 0 TCP, 1 UDP, 2 any other protocol; rst for a TCP flow
	// whose first packet is a SYN its sender originates (Zeek then takes
	// a RST back as REJ, not RSTOS0).
	Start [3][2][2]uint16
	// ServerPorts holds one bit a port (port>>6, port&63): the likely
	// server ports a new flow's orientation is guessed by (flipNew).
	ServerPorts [1024]uint64
}

// TransEnds marks a transition in Tables.Next that ends the flow.
const TransEnds = 1 << 15

// Info bits.
const (
	InfoOrigIsDst = 1 << iota // the originator is the canonical key's Dst
	InfoTerminal              // the flow has ended
	InfoClosed                // a side closed or reset: a SYN starts a new flow (Config.KeepEnded)
)

// MachineTables returns machine k's tables.
func MachineTables(k MachineKind) Tables {
	m := machineFor(k)
	t := Tables{Values: m.values, Next: make([]uint16, len(m.next)), Info: make([]uint8, m.values),
		Conn: append([]ConnState(nil), m.conn...), Start: m.start, ServerPorts: serverPortSet}
	for i, tr := range m.next {
		t.Next[i] = tr.next
		if tr.ends {
			t.Next[i] |= TransEnds
		}
	}
	for v := range m.values {
		if m.origIsDst[v] {
			t.Info[v] |= InfoOrigIsDst
		}
		if m.terminal[v] {
			t.Info[v] |= InfoTerminal
		}
		if m.closed[v] {
			t.Info[v] |= InfoClosed
		}
	}
	return t
}
