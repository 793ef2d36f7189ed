package flowtable

import (
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// A flow's uid is derived from what the flow is, not from when a worker
// met it: the flow hash, the first packet's time and that packet's
// sequence/ack numbers, IP id and flags. So it is the same from run to run
// and for any number of workers, and two flows of one 5-tuple differ by
// their start (or, at one timestamp, by their first packet). Zeek draws
// its uids at random; record.AppendUID spells the seed in Zeek's format.

// uidSeed is the 64 bits a uid is made from, taken at the flow's first
// packet (8 bytes per flow).
func uidSeed(p *capture.Packet) uint64 {
	return UIDSeed(p.Hash, p.Timestamp.UnixNano(), p.Seq, p.Ack, p.IPID, p.Flags)
}

// UIDSeed is the uid seed of a flow whose flow hash is hash and whose
// first packet came at first (UnixNano) with those sequence and ack
// numbers, IP id and TCP flags (0 where the packet has none): for a flow
// kept elsewhere (the kernel's flow state), whose packet is gone.
func UIDSeed(hash uint64, first int64, seq, ack, ipid uint32, flags capture.TCPFlags) uint64 {
	h := hashmix.Mix(hash ^ uint64(first))
	h = hashmix.Mix(h ^ uint64(seq)<<32 ^ uint64(ack))
	return hashmix.Mix(h ^ uint64(ipid)<<16 ^ uint64(flags))
}
