package scbf

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// The file layout (see the package doc).
const (
	magic        = "FSCB"
	version      = 1
	counterWidth = 4

	offCapacity = 8
	offRate     = 16
	offRatio    = 24
	offSeed     = 32
	offParamSum = 40
	offDirty    = 48
	offBoot     = 56
	offSeq      = 64
	offCleanSeq = 72
	offFilters  = 80
	offMaxID    = 88
	offSats     = 96
	offCleanSum = 104

	// The operation in flight.
	offIntentSeq     = 112
	offIntentOp      = 120
	offIntentKey     = 128
	offIntentSub     = 136
	offIntentFilters = 144
	offIntentMaxID   = 152
	offIntentSats    = 160
	offIntentCount   = 168
	offIntentNibbles = 176 // MaxHashes/2 bytes
	intentEnd        = offIntentNibbles + MaxHashes/2

	headerSize = 512

	// A sub-filter's header.
	subID     = 0
	subCount  = 8
	subK      = 16
	subCPF    = 24
	subHeader = 32
)

// Operation kinds in the intent record.
const (
	opAdd    = 1
	opRemove = 2
)

// maxCounters bounds k·cpf of a sub-filter read from a file before any
// size is computed from it.
const maxCounters = 1 << 50

var bigEndian = binary.NativeEndian.Uint16([]byte{1, 0}) != 1

func get(mem []byte, off int) uint64 { return binary.LittleEndian.Uint64(mem[off:]) }

func put(mem []byte, off int, v uint64) { binary.LittleEndian.PutUint64(mem[off:], v) }

// store writes v at off in one 8-byte store that the compiler keeps in
// program order with the plain stores around it: the fields that mark an
// operation begun, ended or a sub-filter added, which a crash must see
// whole (a 32-bit platform splits a plain 64-bit store in two). off is a
// multiple of 8 and mem 8-aligned (a mapping, or a heap slice).
func store(mem []byte, off int, v uint64) {
	_ = mem[off+7]
	if bigEndian {
		v = bits.ReverseBytes64(v)
	}
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&mem[off])), v)
}

// writeParams fills a new image's parameter block and its checksum.
func writeParams(mem []byte, o Options) {
	copy(mem, magic)
	mem[4], mem[5], mem[6], mem[7] = version, counterWidth, 0, 0
	put(mem, offCapacity, o.Capacity)
	put(mem, offRate, math.Float64bits(o.ErrorRate))
	put(mem, offRatio, math.Float64bits(o.Ratio))
	put(mem, offSeed, o.Seed)
	put(mem, offParamSum, xxh3.Hash(mem[:offParamSum]))
}

// cleanSum is the checksum a flush stores: the state fields and every
// sub-filter.
func cleanSum(mem []byte) uint64 {
	return xxh3.HashSeed(mem[headerSize:], xxh3.Hash(mem[offSeq:offCleanSum]))
}

// nibble returns counter i of c (the even counter in the high nibble).
func nibble(c []byte, i uint64) uint8 {
	return c[i>>1] >> (4 - 4*(i&1)) & 0xf
}

func setNibble(c []byte, i uint64, v uint8) {
	s := 4 - 4*(i&1)
	c[i>>1] = c[i>>1]&^(0xf<<s) | v<<s
}
