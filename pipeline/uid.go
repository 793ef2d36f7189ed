package pipeline

import (
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// A flow's uid is derived from what the flow is, not from when a worker
// met it: the flow hash, the first packet's time and that packet's
// sequence/ack numbers, IP id and flags. So it is the same from run to run
// and for any number of workers, and two flows of one 5-tuple differ by
// their start (or, at one timestamp, by their first packet). Zeek draws
// its uids at random; the format is Zeek's: "C" and the base62 digits of
// 96 bits, here padded to 17 digits so every uid has 18 characters.

// uidSeed is the 64 bits a uid is made from, taken at the flow's first
// packet (8 bytes per flow).
func uidSeed(p *capture.Packet) uint64 {
	h := hashmix.Mix(p.Hash ^ uint64(p.Timestamp.UnixNano()))
	h = hashmix.Mix(h ^ uint64(p.Seq)<<32 ^ uint64(p.Ack))
	return hashmix.Mix(h ^ uint64(p.IPID)<<16 ^ uint64(p.Flags))
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// uidDigits is how many base62 digits hold 96 bits (62^17 > 2^96).
const uidDigits = 17

// formatUID spells a seed as a Zeek-style uid: the seed's 64 bits and 32
// more derived from them, in base62.
func formatUID(seed uint64) string {
	hi, lo := uint64(uint32(hashmix.Mix(seed^hashmix.Golden))), seed // 96 bits: hi:lo
	var b [1 + uidDigits]byte
	b[0] = 'C'
	for i := uidDigits; i > 0; i-- {
		// (hi:lo) / 62 with hi < 2^32: two 64-bit divisions.
		r := hi % 62
		hi /= 62
		x := r<<32 | lo>>32
		q1, r1 := x/62, x%62
		y := r1<<32 | lo&0xffffffff
		q2, r2 := y/62, y%62
		lo = q1<<32 | q2
		b[i] = base62[r2]
	}
	return string(b[:])
}
