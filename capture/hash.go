package capture

import "github.com/zeebo/xxh3"

// HashSeed is the fixed seed of the flow hash. It never changes: hashes are
// compared across processes (two agents' filters) and stored in files.
const HashSeed uint64 = 0x666c6f776d6f6e31 // "flowmon1"

func hashKeyBytes(b *[KeySize]byte) uint64 {
	return xxh3.HashSeed(b[:], HashSeed)
}

// HashBytes hashes arbitrary bytes with the flow hash's function and seed,
// for structures keyed by something other than a flow.
func HashBytes(b []byte) uint64 { return xxh3.HashSeed(b, HashSeed) }
