package watchlist

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// FuzzEntries decodes an entries file's section (internal/snapshot's
// container, fuzzed on its own, holds it): nothing panics, the errors
// wrap ErrDamagedEntries, and what decodes is the writer's canonical
// form: it re-encodes to the same bytes, and every prefix in it is one
// a list can hold. testdata/fuzz/FuzzEntries holds a family byte other
// than 4 or 6, which a decoder must refuse rather than read as 6.
func FuzzEntries(f *testing.F) {
	for _, ents := range []map[netip.Prefix]uint64{
		nil,
		{netip.MustParsePrefix("192.0.2.0/24"): 1},
		{netip.MustParsePrefix("10.0.0.0/8"): 3, netip.MustParsePrefix("10.0.0.0/16"): 1, netip.MustParsePrefix("198.51.100.7/32"): 2,
			netip.MustParsePrefix("2001:db8::/32"): 4, netip.MustParsePrefix("2001:db8::1/128"): 5},
	} {
		f.Add(appendEntries(nil, ents, uint64(len(ents)+1), 7, 0x1234567|1))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, next, seq, sum, err := parseEntries(data)
		if err != nil {
			if !errors.Is(err, ErrDamagedEntries) {
				t.Fatalf("parse: %v without ErrDamagedEntries", err)
			}
			return
		}
		ents, err := decodeEntries(raw, next)
		if err != nil {
			if !errors.Is(err, ErrDamagedEntries) {
				t.Fatalf("decode: %v without ErrDamagedEntries", err)
			}
			return
		}
		if len(ents) != len(raw)/entrySize {
			t.Fatalf("%d records decode to %d entries", len(raw)/entrySize, len(ents))
		}
		if again := appendEntries(nil, ents, next, seq, sum); !bytes.Equal(again, data) {
			t.Fatalf("re-encodes as\n%x\nnot\n%x", again, data)
		}
		for p := range ents {
			if q, err := parseEntry(p.String()); err != nil || q != p {
				t.Fatalf("decoded %s, which a list reads as %s, %v", p, q, err)
			}
		}
	})
}

// TestDecodeEntriesRefuses: each way a record can differ from what the
// writer writes is refused, named, with ErrDamagedEntries.
func TestDecodeEntriesRefuses(t *testing.T) {
	good := map[netip.Prefix]uint64{netip.MustParsePrefix("192.0.2.0/24"): 1, netip.MustParsePrefix("2001:db8::/32"): 2}
	data := appendEntries(nil, good, 3, 0, 0)
	for _, tc := range []struct {
		what  string
		spoil func(b []byte) []byte // b is a copy
		want  string
	}{
		{"family 5", func(b []byte) []byte { recN(b, 0)[17] = 5; return b }, "entry 0: family 5"},
		{"an IPv6 address as family 4", func(b []byte) []byte { recN(b, 1)[17] = 4; return b }, "entry 1: 2001:db8:: is not of family 4"},
		{"an IPv4 address as family 6", func(b []byte) []byte { recN(b, 0)[17] = 6; return b }, "entry 0: ::ffff:192.0.2.0 is not of family 6"},
		{"host bits", func(b []byte) []byte { recN(b, 0)[15] = 1; return b }, "entry 0: 192.0.2.1/24: host bits set"},
		{"a /33", func(b []byte) []byte { recN(b, 0)[16] = 33; return b }, "entry 0: 192.0.2.0/33: too long a prefix"},
		{"a /100", func(b []byte) []byte { recN(b, 1)[16] = 100; return b }, "entry 1: 2001:db8::/100: IPv6 prefixes are /64 or shorter"},
		{"a /4", func(b []byte) []byte { recN(b, 0)[16] = 4; clear(recN(b, 0)[12:16]); return b }, "entry 0: 0.0.0.0/4: prefixes shorter than /8"},
		{"id 0", func(b []byte) []byte { clear(recN(b, 0)[18:]); return b }, "entry 0: 192.0.2.0/24: id 0 must be 1 to 2"},
		{"an id past next", func(b []byte) []byte { recN(b, 0)[18] = 3; return b }, "entry 0: 192.0.2.0/24: id 3 must be 1 to 2"},
		{"unsorted", func(b []byte) []byte {
			return append(append(b[:entriesHeader:entriesHeader], recN(data, 1)...), recN(data, 0)...)
		}, "entry 1: 192.0.2.0/24 after 2001:db8::/32: not sorted, or twice"},
		{"twice", func(b []byte) []byte {
			return append(append(b[:entriesHeader:entriesHeader], recN(data, 0)...), recN(data, 0)...)
		}, "entry 1: 192.0.2.0/24 after 192.0.2.0/24"},
		{"next id 0", func(b []byte) []byte { clear(b[8:16]); return b }, "next id 0"},
		{"a record cut short", func(b []byte) []byte { return b[:len(b)-1] }, "not a watchlist's entries file"},
	} {
		raw, next, _, _, err := parseEntries(tc.spoil(bytes.Clone(data)))
		if err == nil {
			_, err = decodeEntries(raw, next)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrDamagedEntries) {
			t.Errorf("%s: %v, want %q", tc.what, err, tc.want)
		}
	}
	raw, next, _, _, err := parseEntries(data)
	if ents, derr := decodeEntries(raw, next); err != nil || derr != nil || len(ents) != 2 || ents[netip.MustParsePrefix("2001:db8::/32")] != 2 {
		t.Errorf("unspoilt: %v, %v, %v", ents, err, derr)
	}
}

// recN is the i-th record of an entries section.
func recN(b []byte, i int) []byte {
	return b[entriesHeader+i*entrySize : entriesHeader+(i+1)*entrySize]
}
