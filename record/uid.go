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

// chunk is 62^5, the most base62 digits below 2^30: the 96 bits are cut
// into chunks of five digits by three long divisions by it, and each
// chunk spelled in 32-bit arithmetic.
const chunk = 62 * 62 * 62 * 62 * 62

// AppendUID appends the uid spelled from seed to b.
func AppendUID(b []byte, seed uint64) []byte {
	hi, lo := uint64(uint32(hashmix.Mix(seed^hashmix.Golden))), seed // 96 bits: hi:lo
	var d [UIDLen]byte
	d[0] = 'C'
	for end := UIDLen; end > 3; end -= 5 {
		// (hi:lo) / chunk with hi < 2^32, in three 64-bit divisions.
		r := hi % chunk
		hi /= chunk
		x := r<<32 | lo>>32
		q1, r1 := x/chunk, x%chunk
		y := r1<<32 | lo&0xffffffff
		q2, r2 := y/chunk, y%chunk
		lo = q1<<32 | q2
		c := uint32(r2)
		for i := end - 1; i >= end-5; i-- {
			d[i] = base62[c%62]
			c /= 62
		}
	}
	// What is left is below 62^2 (62^17 > 2^96).
	d[1], d[2] = base62[lo/62], base62[lo%62]
	return append(b, d[:]...)
}

// UIDString spells a uid.
func UIDString(seed uint64) string {
	var b [UIDLen]byte
	return string(AppendUID(b[:0], seed))
}
