package snapshot

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// The helpers below encode a structure's state: a tag and a version, the
// shape as Params, then fixed-width little-endian fields and arrays whose
// lengths the shape implies or a count states. A Decoder reads them back
// checking every length before it slices or allocates, so that a
// RestoreState fed any bytes returns an error instead of panicking or
// allocating what a forged length claims.

// AppendTag appends a state's tag (a few ASCII bytes naming the
// structure) and its state version.
func AppendTag(b []byte, tag string, version uint8) []byte {
	return append(append(b, tag...), version)
}

// AppendParams appends ps: a count, then each name and value with its
// length.
func AppendParams(b []byte, ps []Param) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(ps)))
	for _, p := range ps {
		b = append(b, byte(len(p.Name)))
		b = append(b, p.Name[:min(len(p.Name), math.MaxUint8)]...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(p.Value)))
		b = append(b, p.Value[:min(len(p.Value), math.MaxUint16)]...)
	}
	return b
}

// AppendBool appends v as one byte, 0 or 1.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendTime appends t as Unix ns (math.MinInt64 for the zero time).
func AppendTime(b []byte, t time.Time) []byte {
	return binary.LittleEndian.AppendUint64(b, uint64(unixNano(t)))
}

// AppendUint64s appends the words of s (no count).
func AppendUint64s(b []byte, s []uint64) []byte {
	b = Grow(b, 8*len(s))
	for _, w := range s {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// AppendUint32s appends the words of s (no count).
func AppendUint32s(b []byte, s []uint32) []byte {
	b = Grow(b, 4*len(s))
	for _, w := range s {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// Grow makes room for n more bytes in b, so that a large state is
// appended with one allocation.
func Grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+len(b)/4)
		copy(nb, b)
		b = nb
	}
	return b
}

// AppendBlob appends what fn appends, preceded by its length (8 bytes),
// so that a reader can hand it whole to another decoder.
func AppendBlob(b []byte, fn func([]byte) ([]byte, error)) ([]byte, error) {
	at := len(b)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b, err := fn(b)
	if err != nil {
		return b, err
	}
	binary.LittleEndian.PutUint64(b[at:], uint64(len(b)-at-8))
	return b, nil
}

// Decoder reads a state encoded with the helpers above. The first error
// sticks: later reads return zero values and change nothing, so a
// RestoreState reads its fields in a row and checks Err (or Done) once.
// Its errors wrap ErrDamaged, ErrVersion or ErrIncompatible and name the
// structure.
type Decoder struct {
	what string
	b    []byte
	off  int
	err  error
}

// NewDecoder reads b, the state of the structure named what ("acsm
// tracker": it starts every error message).
func NewDecoder(what string, b []byte) *Decoder { return &Decoder{what: what, b: b} }

// Err is the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Left is the number of bytes not read yet.
func (d *Decoder) Left() int { return len(d.b) - d.off }

// Done reports the first error, or an error if bytes are left over.
func (d *Decoder) Done() error {
	if d.err == nil && d.Left() != 0 {
		d.Failf("%d bytes left over after the state", d.Left())
	}
	return d.err
}

// Failf records a damaged-state error (unless one is already recorded).
func (d *Decoder) Failf(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("restore %s: %s: %w", d.what, fmt.Sprintf(format, a...), ErrDamaged)
	}
}

// Fail records err, already wrapping a sentinel (a nested structure's
// RestoreState error), unless an error is already recorded.
func (d *Decoder) Fail(err error) {
	if d.err == nil && err != nil {
		d.err = fmt.Errorf("restore %s: %w", d.what, err)
	}
}

// Mismatchf records an incompatible-shape error (unless one is already
// recorded).
func (d *Decoder) Mismatchf(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("restore %s: %s: %w", d.what, fmt.Sprintf(format, a...), ErrIncompatible)
	}
}

// take returns the next n bytes, or nil after recording an error.
func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.Left() {
		d.Failf("cut short at byte %d: %d bytes wanted, %d left", d.off, n, d.Left())
		return nil
	}
	b := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

// Tag checks the state's tag and version.
func (d *Decoder) Tag(tag string, version uint8) {
	b := d.take(len(tag) + 1)
	if b == nil {
		return
	}
	if string(b[:len(tag)]) != tag {
		d.Failf("not a %s state (tag %q, want %q)", d.what, b[:len(tag)], tag)
		return
	}
	if b[len(tag)] != version {
		if d.err == nil {
			d.err = fmt.Errorf("restore %s: state version %d, this flowmon reads version %d: %w", d.what, b[len(tag)], version, ErrVersion)
		}
	}
}

// Bytes returns the next n bytes (a slice of the input, not a copy).
func (d *Decoder) Bytes(n int) []byte { return d.take(n) }

// U8 reads a byte.
func (d *Decoder) U8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

// Bool reads a byte that must be 0 or 1.
func (d *Decoder) Bool() bool {
	switch v := d.U8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.Failf("boolean byte %d at %d", v, d.off-1)
		return false
	}
}

// U16 reads a uint16.
func (d *Decoder) U16() uint16 {
	if b := d.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

// U32 reads a uint32.
func (d *Decoder) U32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// U64 reads a uint64.
func (d *Decoder) U64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// I64 reads an int64.
func (d *Decoder) I64() int64 { return int64(d.U64()) }

// Time reads a time written by AppendTime.
func (d *Decoder) Time() time.Time {
	if d.err != nil {
		return time.Time{}
	}
	return fromUnixNano(d.I64())
}

// Count reads a count written as a uint64 and checks that it is at most
// limit and that count elements of elemSize bytes each fit in what is
// left: a forged count fails here, before anything is allocated for it.
func (d *Decoder) Count(what string, limit uint64, elemSize int) int {
	n := d.U64()
	if d.err != nil {
		return 0
	}
	if n > limit || (elemSize > 0 && n > uint64(d.Left()/elemSize)) {
		d.Failf("%d %s: at most %d, and %d bytes left", n, what, limit, d.Left())
		return 0
	}
	return int(n)
}

// Blob reads a length-prefixed part written by AppendBlob.
func (d *Decoder) Blob() []byte {
	n := d.U64()
	if d.err != nil {
		return nil
	}
	if n > uint64(d.Left()) {
		d.Failf("part of %d bytes at %d, %d left", n, d.off-8, d.Left())
		return nil
	}
	return d.take(int(n))
}

// Uint64s fills dst with the next len(dst) words. On error dst is not
// changed.
func (d *Decoder) Uint64s(dst []uint64) {
	if len(dst) > d.Left()/8 {
		d.take(8 * len(dst)) // records the error
		return
	}
	b := d.take(8 * len(dst))
	if b == nil {
		return
	}
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
}

// Uint32s fills dst with the next len(dst) words. On error dst is not
// changed.
func (d *Decoder) Uint32s(dst []uint32) {
	if len(dst) > d.Left()/4 {
		d.take(4 * len(dst))
		return
	}
	b := d.take(4 * len(dst))
	if b == nil {
		return
	}
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
}

// Params reads the shape parameters and compares them with the
// configured ones, recording an ErrIncompatible error that names the
// first that differs: "snapshot has capacity 65536, configured 131072".
func (d *Decoder) Params(want []Param) {
	n := int(d.U16())
	if d.err != nil {
		return
	}
	got := make([]Param, 0, min(n, d.Left()/3))
	for range n {
		name := d.take(int(d.U8()))
		value := d.take(int(d.U16()))
		if d.err != nil {
			return
		}
		got = append(got, Param{string(name), string(value)})
	}
	if msg := diffParamList(got, want); msg != "" {
		d.Mismatchf("%s", msg)
	}
}

// CheckParams compares the shape parameters of a structure decoded by its
// own format (got) with the configured ones, and returns an error
// wrapping ErrIncompatible naming the first that differs, or nil.
func CheckParams(what string, got, want []Param) error {
	if msg := diffParamList(got, want); msg != "" {
		return fmt.Errorf("restore %s: %s: %w", what, msg, ErrIncompatible)
	}
	return nil
}

func diffParamList(got, want []Param) string {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("snapshot has no %s, configured %s", want[i].Name, quoteEmpty(want[i].Value))
		case i >= len(want):
			return fmt.Sprintf("snapshot has %s %s, not configured", got[i].Name, quoteEmpty(got[i].Value))
		case got[i].Name != want[i].Name:
			return fmt.Sprintf("snapshot has %s %s where %s %s is configured", got[i].Name, quoteEmpty(got[i].Value),
				want[i].Name, quoteEmpty(want[i].Value))
		case got[i].Value != want[i].Value:
			return fmt.Sprintf("snapshot has %s %s, configured %s", got[i].Name, quoteEmpty(got[i].Value), quoteEmpty(want[i].Value))
		}
	}
	return ""
}
