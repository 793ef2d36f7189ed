// Package watchlist keeps lists of IPv4 and IPv6 addresses and prefixes
// that operators want to hear about (blocklists, known scanners, their
// own critical hosts) in a persisted scaling counting Bloom filter, and
// answers whether an address is listed in a handful of probes.
//
// A list is a text file: one address or CIDR prefix per line, `#` starts
// a comment, blank lines are skipped; a bad line is named by file:line
// and skipped while the rest loads. A prefix is stored as the prefixes of
// the next fixed length at or below it (Lengths), so a lookup probes one
// key per fixed length, whatever the list holds: 4 for an IPv4 address,
// 6 for an IPv6 one.
package watchlist

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/flowmon/flowmon/capture"
)

// Lengths are the prefix lengths a list stores and a lookup probes, per
// family. Between two fixed lengths a prefix is expanded into at most
// 2^7 = 128 keys. IPv6 prefixes longer than /64 other than /128 are
// refused: blocklists hold /32 to /64 networks and single hosts, and
// covering /65 to /127 would take a probe per length or 2^63 keys.
var (
	Lengths4 = []int{8, 16, 24, 32}
	Lengths6 = []int{16, 24, 32, 40, 48, 56, 64, 128}
)

// A LineError is a line of a list that could not be read; the rest of
// the list loads.
type LineError struct {
	File string
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Parse reads a list: the prefixes it holds (an address is a /32 or
// /128), in file order, and the lines it skipped. A prefix with host bits
// set is taken as its network (10.1.2.3/8 is 10.0.0.0/8), as ip route
// does, since an operator who writes it means the network.
func Parse(name string, r io.Reader) ([]netip.Prefix, []error) {
	var out []netip.Prefix
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s, _, _ := strings.Cut(sc.Text(), "#")
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := parseEntry(s)
		if err != nil {
			errs = append(errs, &LineError{File: name, Line: line, Msg: err.Error()})
			continue
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return out, errs
}

func parseEntry(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, fmt.Errorf("%q is not an address or CIDR prefix", s)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return p, fmt.Errorf("%q is not an address or CIDR prefix", s)
		}
		if a.Zone() != "" {
			return p, fmt.Errorf("%q: addresses with a zone are not listed", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return p, fmt.Errorf("%q: an IPv4-mapped prefix is /96 or longer", s)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	if msg := listable(p); msg != "" {
		return p, fmt.Errorf("%q: %s", s, msg)
	}
	return p.Masked(), nil
}

// listable says why a list cannot hold the prefix p (not IPv4-mapped),
// or "": its length is one Keys expands into at most 128 keys, and not
// one that would match a large part of the Internet.
func listable(p netip.Prefix) string {
	if bits := p.Bits(); p.Addr().Is6() && bits > 64 && bits < 128 {
		return "IPv6 prefixes are /64 or shorter, or /128"
	}
	if shortest := lengths(p.Addr())[0]; p.Bits() < shortest {
		return fmt.Sprintf("prefixes shorter than /%d are not listed (they would match a large part of the Internet)", shortest)
	}
	return ""
}

func lengths(a netip.Addr) []int {
	if a.Is4() {
		return Lengths4
	}
	return Lengths6
}

// Keys calls f with the hash of every key p is stored as: the prefixes of
// the first fixed length at or below p's.
func Keys(p netip.Prefix, f func(h uint64)) {
	a, bits := p.Addr(), p.Bits()
	fixed := 0
	for _, l := range lengths(a) {
		if l >= bits {
			fixed = l
			break
		}
	}
	n := 1 << (fixed - bits) // at most 128
	b := a.As16()
	for i := range n {
		k := b
		// Add i at bit position fixed-1 and up: the i-th subprefix.
		setBits(&k, a.Is4(), bits, fixed, uint64(i))
		f(keyHash(k, fixed, a.Is4()))
	}
}

// Probe calls f with the hash of each key an address is looked up by: one
// per fixed length; the address is listed if any is.
func Probe(a netip.Addr, f func(h uint64) bool) bool {
	a = a.Unmap()
	is4 := a.Is4()
	b := a.As16()
	for _, l := range lengths(a) {
		if f(keyHash(mask(b, is4, l), l, is4)) {
			return true
		}
	}
	return false
}

// keyHash hashes a masked address and its length: the key of a stored
// prefix, in the flow hash's function and seed.
func keyHash(b [16]byte, bits int, is4 bool) uint64 {
	var k [18]byte
	copy(k[:16], b[:])
	k[16] = byte(bits)
	if is4 {
		k[17] = 4
	} else {
		k[17] = 6
	}
	return capture.HashBytes(k[:])
}

// mask keeps the first bits of the address (of its 4 bytes for IPv4,
// which As16 puts last).
func mask(b [16]byte, is4 bool, bits int) [16]byte {
	start := 0
	if is4 {
		start = 12
	}
	for i := start; i < 16; i++ {
		keep := bits - (i-start)*8
		switch {
		case keep >= 8:
		case keep <= 0:
			b[i] = 0
		default:
			b[i] &= byte(0xff << (8 - keep))
		}
	}
	return b
}

// setBits writes v into the address bits [from, to) (counted from the
// address's first bit).
func setBits(b *[16]byte, is4 bool, from, to int, v uint64) {
	start := 0
	if is4 {
		start = 12
	}
	for bit := to - 1; bit >= from; bit-- {
		i, sh := start+bit/8, 7-bit%8
		if v&1 == 1 {
			b[i] |= 1 << sh
		} else {
			b[i] &^= 1 << sh
		}
		v >>= 1
	}
}
