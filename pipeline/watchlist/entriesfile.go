package watchlist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/flowmon/flowmon/internal/snapshot"
)

// The entries file records what the filter holds, so that a reload
// removes a prefix with the id it was added with. It is written
// atomically with a CRC-32C (internal/snapshot's file, params
// entriesMagic) after each flush of the filter, as one section,
// "entries", little-endian:
//
//	[0:8]    magic "FMWLENT1"
//	[8:16]   the next id: at least 1, above every record's
//	[16:24]  the filter's operation count the records match (scbf's Seq)
//	[24:32]  the hash of the text file they hold (0: none, after an Apply)
//	then 26 bytes a prefix, sorted by netip.Prefix.Compare, each once:
//	[0:16]   the address, As16 (an IPv4 one mapped)
//	[16]     the prefix length: one Keys expands (listable), the address masked to it
//	[17]     the family: 4 or 6
//	[18:26]  the id it was added with, 1 to the next id - 1
//
// The decoder takes only what the writer writes, so that a record read
// is one the filter holds (a prefix it never held, removed, would take
// its counters down with it), and what decodes encodes to the same
// bytes (FuzzEntries).
const entriesMagic = "FMWLENT1"

const (
	entriesHeader = 32
	entrySize     = 26
)

// ErrDamagedEntries is wrapped by the errors of an entries file that is
// not one, or whose records are not what the writer writes.
var ErrDamagedEntries = errors.New("damaged watchlist entries")

func writeEntries(path string, ents map[netip.Prefix]uint64, next, seq, sum uint64) error {
	return snapshot.Write(path, snapshot.Header{Params: entriesMagic},
		[]snapshot.Section{{Name: "entries", Data: appendEntries(nil, ents, next, seq, sum)}})
}

// appendEntries appends the entries section of ents to b.
func appendEntries(b []byte, ents map[netip.Prefix]uint64, next, seq, sum uint64) []byte {
	ps := make([]netip.Prefix, 0, len(ents))
	for p := range ents {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, netip.Prefix.Compare)
	le := binary.LittleEndian
	b = append(b, entriesMagic...)
	b = le.AppendUint64(le.AppendUint64(le.AppendUint64(b, next), seq), sum)
	for _, p := range ps {
		a := p.Addr().As16()
		fam := byte(6)
		if p.Addr().Is4() {
			fam = 4
		}
		b = append(append(b, a[:]...), byte(p.Bits()), fam)
		b = le.AppendUint64(b, ents[p])
	}
	return b
}

// readEntries reads the entries file: its records, undecoded (checked
// for length; decodeEntries checks each), the next id, the filter's
// operation count and the text file's hash it matches.
func readEntries(path string) (raw []byte, next, seq, sum uint64, err error) {
	_, secs, err := snapshot.Read(path, entriesMagic, 0, time.Time{}) // no age limit: a list does not go stale
	if err != nil {
		return nil, 0, 0, 0, err
	}
	data, _ := snapshot.Find(secs, "entries")
	raw, next, seq, sum, err = parseEntries(data)
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return raw, next, seq, sum, nil
}

// parseEntries reads the entries section's header, and returns its
// records undecoded (a whole number of them).
func parseEntries(data []byte) (raw []byte, next, seq, sum uint64, err error) {
	if len(data) < entriesHeader || string(data[:8]) != entriesMagic || (len(data)-entriesHeader)%entrySize != 0 {
		return nil, 0, 0, 0, fmt.Errorf("not a watchlist's entries file: %w", ErrDamagedEntries)
	}
	le := binary.LittleEndian
	next, seq, sum = le.Uint64(data[8:]), le.Uint64(data[16:]), le.Uint64(data[24:])
	if next == 0 {
		return nil, 0, 0, 0, fmt.Errorf("next id 0: %w", ErrDamagedEntries)
	}
	return data[entriesHeader:], next, seq, sum, nil
}

// decodeEntries decodes the records, each checked to be what the writer
// writes (the format above).
func decodeEntries(raw []byte, next uint64) (map[netip.Prefix]uint64, error) {
	ents := make(map[netip.Prefix]uint64, len(raw)/entrySize)
	var last netip.Prefix // the invalid prefix sorts first
	for i := 0; len(raw) >= entrySize; i, raw = i+1, raw[entrySize:] {
		p, id, msg := decodeEntry(raw[:entrySize], next)
		if msg == "" && p.Compare(last) <= 0 {
			msg = fmt.Sprintf("%s after %s: not sorted, or twice", p, last)
		}
		if msg != "" {
			return nil, fmt.Errorf("entry %d: %s: %w", i, msg, ErrDamagedEntries)
		}
		ents[p], last = id, p
	}
	return ents, nil
}

// decodeEntry decodes one record; msg says what is wrong with it.
func decodeEntry(rec []byte, next uint64) (p netip.Prefix, id uint64, msg string) {
	a := netip.AddrFrom16([16]byte(rec[:16]))
	switch fam := rec[17]; {
	case fam == 4 && a.Is4In6():
		a = a.Unmap()
	case fam == 4 || fam == 6 && a.Is4In6():
		return p, 0, fmt.Sprintf("%s is not of family %d", a, fam)
	case fam != 6:
		return p, 0, fmt.Sprintf("family %d", fam)
	}
	p = netip.PrefixFrom(a, int(rec[16]))
	switch {
	case !p.IsValid():
		return p, 0, fmt.Sprintf("%s/%d: too long a prefix", a, rec[16])
	case p.Masked() != p:
		return p, 0, fmt.Sprintf("%s: host bits set", p)
	}
	if msg := listable(p); msg != "" {
		return p, 0, fmt.Sprintf("%s: %s", p, msg)
	}
	if id = binary.LittleEndian.Uint64(rec[18:]); id == 0 || id >= next {
		return p, 0, fmt.Sprintf("%s: id %d must be 1 to %d", p, id, next-1)
	}
	return p, id, ""
}
