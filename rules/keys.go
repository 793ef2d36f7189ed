package rules

import (
	"encoding/binary"
	"net/netip"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// The rules' keys are hashes, derived through hashmix like every other
// index: an address (IPv4 as IPv4-mapped, so both forms agree), an ordered
// pair of addresses, a port; the flow's own key is the packet's flow hash.
const (
	seedAddr = 0x72756c6573616464 // "rulesadd"
	seedPort = 0x72756c6573706f72 // "rulespor"
)

func addrHash(a netip.Addr) uint64 {
	b := a.As16()
	return hashmix.Mix(binary.BigEndian.Uint64(b[:8]) ^ hashmix.Mix(binary.BigEndian.Uint64(b[8:])^seedAddr))
}

// pairOf is the key of an ordered pair of addresses, from their addrHash.
func pairOf(src, dst uint64) uint64 { return hashmix.Mix(src ^ hashmix.Mix(dst^hashmix.Golden)) }

func portHash(p uint16) uint64 { return hashmix.Mix(uint64(p) ^ seedPort) }

// alertHash identifies an alert: its rule and its key (the rule fixes the
// rest of the label set).
func alertHash(ruleID, key uint64) uint64 { return hashmix.Mix(ruleID ^ hashmix.Mix(key)) }
