package acsm

import (
	"fmt"
	"strings"
	"time"

	"github.com/flowmon/flowmon/acsm/dleft"
	"github.com/flowmon/flowmon/acsm/fcf"
	"github.com/flowmon/flowmon/acsm/sbf"
	"github.com/flowmon/flowmon/kbf"
)

// BackendKind names a backend.
type BackendKind uint8

// Backends.
const (
	BackendKBF   BackendKind = iota // kBF, the key-value Bloom filter (the paper's)
	BackendSBF                      // Bonomi et al.'s stateful Bloom filter
	BackendFCF                      // Bonomi et al.'s fingerprint-compressed d-left filter
	BackendExact                    // a map: the ground truth
	// BackendDLeft is a d-left fingerprint table with the aging tag in
	// each cell (acsm/dleft): the tracker keeps one table, not the tier
	// and generation rings, and a packet costs one probe. The replay's
	// default.
	BackendDLeft
	numBackends
)

var backendNames = [numBackends]string{"kbf", "sbf", "fcf", "exact", "dleft"}

func (b BackendKind) String() string {
	if b < numBackends {
		return backendNames[b]
	}
	return fmt.Sprintf("BackendKind(%d)", uint8(b))
}

// BackendNames spells the backends' names for a message: "a, b or c".
func BackendNames() string {
	n := backendNames[:]
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// ParseBackend reads a backend name ("" gives kbf).
func ParseBackend(s string) (BackendKind, error) {
	if s == "" {
		return BackendKBF, nil
	}
	for i, n := range backendNames {
		if n == s {
			return BackendKind(i), nil
		}
	}
	return 0, fmt.Errorf("parse backend %q (want %s): %w", s, BackendNames(), ErrConfig)
}

// BackendSpec sizes one backend.
type BackendSpec struct {
	Kind     BackendKind
	Capacity int     // expected concurrent flows n
	FPRate   float64 // target error p
	// MemoryBytes, when > 0, sizes sbf and fcf to that many bytes instead
	// of from FPRate (comparisons at equal memory). kbf and exact ignore it.
	MemoryBytes int
	Values      int // values stored are 0..Values-1
	Seed        uint64
	// ExactCap bounds the exact backend (0 means 4*Capacity).
	ExactCap int
	// KBFEncoder picks kbf's value codes: kbf.Greedy (the paper's
	// Algorithm 1, the default) or kbf.Sidon (algebraic, faster to decode).
	KBFEncoder kbf.EncoderKind
	// KBFLayout places kbf's cells: kbf.Standard (the default) or
	// kbf.Blocked.
	KBFLayout kbf.LayoutKind
	// Tier and Timeouts age dleft's cells in place (dleft.Options); the
	// other kinds ignore them. FPRate does not size dleft: its cells are
	// 32 bits and its fingerprints take what the state and tag leave.
	Tier     []uint8
	Timeouts []time.Duration
	// Shed lets dleft make room for a new flow in full buckets by evicting
	// the longest-idle flow of tier ShedTier (dleft.Options.Shed).
	Shed     bool
	ShedTier uint8
}

// NewBackend builds the backend spec describes.
func NewBackend(s BackendSpec) (Backend, error) {
	switch s.Kind {
	case BackendExact:
		c := s.ExactCap
		if c == 0 {
			c = 4 * s.Capacity
		}
		return NewExact(c, min(s.Capacity, 1<<20))
	case BackendSBF:
		f, err := sbf.New(sbf.Options{Capacity: s.Capacity, FPRate: s.FPRate, MemoryBytes: s.MemoryBytes, Values: s.Values, Seed: s.Seed})
		if err != nil {
			return nil, fmt.Errorf("new backend: %w", err)
		}
		return &sbfBackend{f: f}, nil
	case BackendFCF:
		f, err := fcf.New(fcf.Options{Capacity: s.Capacity, FPRate: s.FPRate, MemoryBytes: s.MemoryBytes, Values: s.Values, Seed: s.Seed})
		if err != nil {
			return nil, fmt.Errorf("new backend: %w", err)
		}
		return &fcfBackend{f: f}, nil
	case BackendDLeft:
		t, err := dleft.New(dleft.Options{Capacity: s.Capacity, MemoryBytes: s.MemoryBytes, Values: s.Values, Seed: s.Seed, Tier: s.Tier, Timeouts: s.Timeouts,
			Shed: s.Shed, ShedTier: s.ShedTier})
		if err != nil {
			return nil, fmt.Errorf("new backend: %w", err)
		}
		return t, nil
	case BackendKBF:
		opt := kbf.Options{Capacity: s.Capacity, FPRate: s.FPRate, Values: s.Values, Seed: s.Seed, Encoder: s.KBFEncoder, Layout: s.KBFLayout}
		f, err := kbf.New(opt)
		if err != nil {
			return nil, fmt.Errorf("new backend: %w", err)
		}
		return &kbfBackend{f: f}, nil
	}
	return nil, fmt.Errorf("new backend: kind %d: %w", s.Kind, ErrConfig)
}

type sbfBackend struct {
	f  *sbf.Filter
	st BackendStats
}

func (b *sbfBackend) Insert(h uint64, v uint32) error { b.f.Insert(h, v); b.st.Inserts++; return nil }

func (b *sbfBackend) Query(h uint64) (uint32, Result) {
	v, r := b.f.Query(h)
	if r == Unknown {
		b.st.DontKnow++
	}
	return v, r
}

func (b *sbfBackend) Update(h uint64, old, nv uint32) error {
	if err := b.f.Update(h, old, nv); err != nil {
		b.st.DecodeFailures++
		return err
	}
	b.st.Updates++
	return nil
}

func (b *sbfBackend) Delete(h uint64, v uint32) error {
	if err := b.f.Delete(h, v); err != nil {
		b.st.DecodeFailures++
		return err
	}
	b.st.Deletes++
	return nil
}

func (b *sbfBackend) Reset()              { b.f.Reset() }
func (b *sbfBackend) MemoryBytes() int    { return b.f.MemoryBytes() }
func (b *sbfBackend) Prefetch(h uint64)   {} // the comparison backends are not tuned
func (b *sbfBackend) Stats() BackendStats { return b.st }

type fcfBackend struct {
	f  *fcf.Filter
	st BackendStats
}

func (b *fcfBackend) Insert(h uint64, v uint32) error {
	if err := b.f.Insert(h, v); err != nil {
		b.st.InsertFailures++
		return err
	}
	b.st.Inserts++
	return nil
}

func (b *fcfBackend) Query(h uint64) (uint32, Result) {
	v, r := b.f.Query(h)
	if r == Unknown {
		b.st.DontKnow++
	}
	return v, r
}

func (b *fcfBackend) Update(h uint64, old, nv uint32) error {
	if err := b.f.Update(h, old, nv); err != nil {
		b.st.DecodeFailures++
		return err
	}
	b.st.Updates++
	return nil
}

func (b *fcfBackend) Delete(h uint64, v uint32) error {
	if err := b.f.Delete(h, v); err != nil {
		b.st.DecodeFailures++
		return err
	}
	b.st.Deletes++
	return nil
}

func (b *fcfBackend) Reset()              { b.f.Reset() }
func (b *fcfBackend) MemoryBytes() int    { return b.f.MemoryBytes() }
func (b *fcfBackend) Prefetch(h uint64)   {}
func (b *fcfBackend) Stats() BackendStats { return b.st }

type kbfBackend struct {
	f  *kbf.Filter
	st BackendStats
}

func (b *kbfBackend) Insert(h uint64, v uint32) error {
	if err := b.f.Insert(h, v); err != nil {
		b.st.InsertFailures++
		return err
	}
	b.st.Inserts++
	return nil
}

func (b *kbfBackend) Query(h uint64) (uint32, Result) {
	v, r := b.f.Query(h)
	switch r {
	case kbf.Found:
		return v, Found
	case kbf.Unknown:
		b.st.DontKnow++
		return 0, Unknown
	}
	return 0, Absent
}

func (b *kbfBackend) Update(h uint64, old, nv uint32) error {
	if err := b.f.Update(h, old, nv); err != nil {
		b.st.DecodeFailures++
		return err
	}
	b.st.Updates++
	return nil
}

func (b *kbfBackend) Delete(h uint64, v uint32) error {
	if err := b.f.Delete(h, v); err != nil {
		b.st.DecodeFailures++
		return err
	}
	b.st.Deletes++
	return nil
}

func (b *kbfBackend) Reset() { b.f.Reset() }

func (b *kbfBackend) MemoryBytes() int    { return b.f.MemoryBytes() }
func (b *kbfBackend) Prefetch(h uint64)   { b.f.Prefetch(h) }
func (b *kbfBackend) Stats() BackendStats { return b.st }
