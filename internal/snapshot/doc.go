// Package snapshot keeps what a running agent knows across a restart: on
// SIGTERM the agent writes its structures' state (the ACSM's filters, the
// dedup window, the flow counters, the engine's flow table) to one file,
// and the next start reads it back, or refuses it with a reason an
// operator can act on and starts empty.
//
// A snapshot is only worth restoring if it describes the traffic the new
// process is about to see and the structures it has built. So Read
// refuses a file that is missing, damaged (torn write, truncated, bit
// rot), written in another format version, taken with other settings
// (the caller's params string, compared byte for byte), or older than the
// caller allows; in each case it returns an *Error whose Reason says
// which, and whose message names the file and what is wrong.
//
// # File format, version 1
//
// All integers little-endian:
//
//	offset  size  field
//	0       8     magic "FLOWMONS"
//	8       4     format version (1)
//	12      8     saved: wall time, Unix ns
//	20      8     packet time of the last packet seen, Unix ns
//	              (math.MinInt64: no packet seen)
//	28      4     P, params length
//	32      P     params (the caller's canonical configuration string)
//	32+P    4     S, number of sections
//	              S sections, each:
//	        1       N, name length (1..255)
//	        N       name
//	        8       L, data length
//	        L       data
//	end-4   4     CRC-32C (Castagnoli) of every preceding byte
//
// The magic, the version's place and the trailing checksum are the same
// in every version, so a reader of one version tells another version from
// damage: the checksum is checked first, and a version other than its own
// is reported only in a file whose checksum holds. The checksum is CRC-32C because the threat is accident, not an
// adversary: a torn or truncated write, a flipped bit on disk. CRC-32C
// catches every burst of up to 32 bits and anything else but one time in
// 2^32, and hash/crc32 computes it with the CPU's CRC instruction (SSE 4.2,
// ARMv8) at several GB/s, so checking a snapshot of hundreds of MB costs
// a fraction of reading it; kbf's and bloom's encodings use it too. A
// cryptographic hash would be several times slower and defend against an
// attacker who could as well write a valid file.
//
// # Writing
//
// Write never leaves a half-written snapshot under the target name: it
// writes a temporary file in the same directory, syncs it, renames it
// over the target and syncs the directory, so that after a crash at any
// point the target is either the old snapshot or the new one. Read bounds
// what it allocates by the file's size: sections are slices of the file's
// bytes, and every length is checked against what is left before it is
// used, so a header claiming a terabyte section is refused, not allocated.
//
// # Structure states
//
// The structures encode their own state (AppendState / RestoreState in
// acsm, dedup, flowcount) with the helpers of codec.go: a tag and version,
// the shape parameters as named Params (so that a mismatch is reported as
// "snapshot has capacity 65536, configured 131072"), and fixed-width
// fields read by a Decoder that checks every length. Their errors wrap
// ErrDamaged or ErrIncompatible, as Read's do.
package snapshot
