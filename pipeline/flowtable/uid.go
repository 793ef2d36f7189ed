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
	h := hashmix.Mix(p.Hash ^ uint64(p.Timestamp.UnixNano()))
	h = hashmix.Mix(h ^ uint64(p.Seq)<<32 ^ uint64(p.Ack))
	return hashmix.Mix(h ^ uint64(p.IPID)<<16 ^ uint64(p.Flags))
}
