package record

import "github.com/flowmon/flowmon/internal/hashmix"

// A flow's uid is Zeek's format: "C" and the base62 digits of 96 bits,
// here padded to 17 digits so every uid has 18 characters. The pipeline
// derives the 64-bit seed from what the flow is (its hash, first packet
// time and that packet's numbers), so a uid is the same from run to run;
// the other 32 bits are derived from the seed.

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// UIDLen is the length of a spelled uid.
const UIDLen = 1 + uidDigits

// uidDigits is how many base62 digits hold 96 bits (62^17 > 2^96).
const uidDigits = 17

// AppendUID appends the uid spelled from seed to b.
func AppendUID(b []byte, seed uint64) []byte {
	hi, lo := uint64(uint32(hashmix.Mix(seed^hashmix.Golden))), seed // 96 bits: hi:lo
	var d [UIDLen]byte
	d[0] = 'C'
	for i := uidDigits; i > 0; i-- {
		// (hi:lo) / 62 with hi < 2^32: two 64-bit divisions.
		r := hi % 62
		hi /= 62
		x := r<<32 | lo>>32
		q1, r1 := x/62, x%62
		y := r1<<32 | lo&0xffffffff
		q2, r2 := y/62, y%62
		lo = q1<<32 | q2
		d[i] = base62[r2]
	}
	return append(b, d[:]...)
}

// UIDString spells a uid.
func UIDString(seed uint64) string {
	var b [UIDLen]byte
	return string(AppendUID(b[:0], seed))
}
