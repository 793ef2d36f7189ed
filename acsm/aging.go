package acsm

import (
	"fmt"
	"time"

	"github.com/flowmon/flowmon/acsm/dleft"
)

// Timeouts are the per-tier idle timeouts, after Suricata's flow timeouts.
type Timeouts struct {
	New         time.Duration // handshake open or one side only (default 60 s)
	Established time.Duration // both sides seen, or half-closed (default 3600 s)
	Closed      time.Duration // ended: both FINs, a RST, or a FIN the peer never answered (default 120 s)
}

// DefaultTimeouts are Suricata's defaults.
var DefaultTimeouts = Timeouts{New: 60 * time.Second, Established: 3600 * time.Second, Closed: 120 * time.Second}

// WithDefaults fills the zero timeouts from DefaultTimeouts.
func (t Timeouts) WithDefaults() Timeouts {
	d := DefaultTimeouts
	if t.New == 0 {
		t.New = d.New
	}
	if t.Established == 0 {
		t.Established = d.Established
	}
	if t.Closed == 0 {
		t.Closed = d.Closed
	}
	return t
}

func (t Timeouts) of(x Tier) time.Duration {
	switch x {
	case TierNew:
		return t.New
	case TierEstablished:
		return t.Established
	}
	return t.Closed
}

// tierShare is the part of Capacity each generation of a tier is sized
// for. A tier's two generations together hold about its flows; new and
// established flows dominate, ended ones are deleted.
var tierShare = [numTiers]float64{0.5, 0.5, 0.25}

// loc says where a value was found: tier and generation, and for the
// dleft table the cell (-1: nowhere).
type loc struct {
	t, g int8
	slot int32
}

var nowhere = loc{-1, -1, -1}

// ring is one tier: two generations, the current one taking every insert.
// When the current generation is older than the tier's timeout, the older
// generation is emptied (its flows expire) and becomes the current one. A
// flow untouched for between one and two timeouts is forgotten; a flow
// found in the older generation moves to the current one.
type ring struct {
	gens    [2]Backend
	live    [2]int64
	cur     int
	start   int64 // packet time (ns) the current generation began
	timeout int64
}

// store is a set of backends with aging: one ring per tier, or a single
// backend when aging is off, or one dleft table that ages its cells
// itself (dl; aging is then false: there are no rings). It is not safe
// for concurrent use.
type store struct {
	m       *machine
	aging   bool
	dl      *dleft.Table
	rings   [numTiers]ring
	started bool
	next    int64 // earliest packet time a rotation can be due
	expired uint64
	failed  uint64 // backend operations refused
}

func newStore(m *machine, cfg *Config, kind BackendKind, seed uint64) (*store, error) {
	s := &store{m: m, aging: !cfg.NoAging}
	spec := BackendSpec{Kind: kind, Capacity: cfg.Capacity, FPRate: cfg.FPRate, MemoryBytes: cfg.MemoryBytes,
		Values: m.values, Seed: seed, ExactCap: cfg.ExactCap, KBFEncoder: cfg.KBFEncoder, KBFLayout: cfg.KBFLayout}
	if kind == BackendDLeft {
		spec.Shed, spec.ShedTier = cfg.ShedNew, uint8(TierNew)
		spec.Tier = make([]uint8, m.values)
		for v, t := range m.tier {
			spec.Tier[v] = uint8(t)
		}
		if s.aging {
			to := cfg.Timeouts
			spec.Timeouts = []time.Duration{TierNew: to.New, TierEstablished: to.Established, TierClosed: to.Closed}
		}
		b, err := NewBackend(spec)
		if err != nil {
			return nil, err
		}
		s.aging = false
		s.dl = b.(*dleft.Table)
		s.rings[0].gens[0] = b
		return s, nil
	}
	if !s.aging {
		b, err := NewBackend(spec)
		if err != nil {
			return nil, err
		}
		s.rings[0].gens[0] = b
		return s, nil
	}
	const filters = 2 * int(numTiers)
	for t := Tier(0); t < numTiers; t++ {
		sp := spec
		sp.Capacity = max(1, int(float64(cfg.Capacity)*tierShare[t]))
		sp.FPRate = cfg.FPRate / float64(filters) // a miss asks every filter: union bound
		if sp.MemoryBytes > 0 {
			sp.MemoryBytes = int(float64(cfg.MemoryBytes) * tierShare[t] / (2 * (tierShare[0] + tierShare[1] + tierShare[2])))
		}
		for g := 0; g < 2; g++ {
			sp.Seed = seed + uint64(t)*2 + uint64(g)
			b, err := NewBackend(sp)
			if err != nil {
				return nil, fmt.Errorf("tier %s: %w", t, err)
			}
			s.rings[t].gens[g] = b
		}
		s.rings[t].timeout = int64(cfg.Timeouts.of(t))
	}
	return s, nil
}

func (s *store) at(l loc) Backend {
	r := &s.rings[l.t]
	return r.gens[l.g]
}

// lookup searches the current generations, then the older ones.
func (s *store) lookup(h uint64) (uint32, Result, loc) {
	if s.dl != nil {
		v, r, slot := s.dl.Find(h)
		if r == Absent {
			return 0, r, nowhere
		}
		return v, r, loc{0, 0, int32(slot)}
	}
	if !s.aging {
		v, r := s.rings[0].gens[0].Query(h)
		if r == Absent {
			return 0, r, nowhere
		}
		return v, r, loc{0, 0, -1}
	}
	for pass := 0; pass < 2; pass++ {
		for t := range s.rings {
			r := &s.rings[t]
			g := r.cur
			if pass == 1 {
				g = 1 - g
			}
			if v, res := r.gens[g].Query(h); res != Absent {
				return v, res, loc{int8(t), int8(g), -1}
			}
		}
	}
	return 0, Absent, nowhere
}

// prefetch starts loading what lookup reads first: the current generation
// of each tier (the older ones are read only for flows not found there).
func (s *store) prefetch(h uint64) {
	if s.dl != nil {
		s.dl.Prefetch(h)
		return
	}
	if !s.aging {
		s.rings[0].gens[0].Prefetch(h)
		return
	}
	for t := range s.rings {
		r := &s.rings[t]
		r.gens[r.cur].Prefetch(h)
	}
}

// put stores nv for h, which was found at l with value old (or not found
// when l is nowhere), moving it to the current generation of nv's tier.
func (s *store) put(h uint64, l loc, old, nv uint32) {
	if s.dl != nil {
		// Written back even when unchanged: the write tags the cell now.
		if l != nowhere {
			s.dl.Set(int(l.slot), nv)
		} else if s.dl.Insert(h, nv) != nil {
			s.failed++
		}
		return
	}
	t, g := 0, 0
	if s.aging {
		t = int(s.m.tier[nv])
		g = s.rings[t].cur
	}
	if l != nowhere {
		if int(l.t) == t && int(l.g) == g {
			if old != nv {
				if s.at(l).Update(h, old, nv) != nil {
					s.failed++
				}
			}
			return
		}
		s.remove(h, l, old)
	}
	if s.rings[t].gens[g].Insert(h, nv) != nil {
		s.failed++
		return
	}
	s.rings[t].live[g]++
}

func (s *store) remove(h uint64, l loc, v uint32) {
	if s.dl != nil {
		s.dl.Clear(int(l.slot))
		return
	}
	if s.at(l).Delete(h, v) != nil {
		s.failed++
		return
	}
	s.rings[l.t].live[l.g]--
}

// rotate expires generations older than their tier's timeout at packet
// time now (ns).
func (s *store) rotate(now int64) {
	if s.dl != nil {
		s.dl.Advance(now)
		return
	}
	if !s.aging {
		return
	}
	if !s.started {
		s.started = true
		for t := range s.rings {
			s.rings[t].start = now
		}
	}
	if now < s.next {
		return
	}
	next := int64(1<<63 - 1)
	for t := range s.rings {
		r := &s.rings[t]
		if age := now - r.start; age >= r.timeout {
			old := 1 - r.cur
			s.expire(r, old)
			if age >= 2*r.timeout {
				s.expire(r, r.cur)
			}
			r.cur = old
			r.start = now
		}
		next = min(next, r.start+r.timeout)
	}
	s.next = next
}

func (s *store) expire(r *ring, g int) {
	if r.live[g] > 0 {
		s.expired += uint64(r.live[g])
	}
	r.live[g] = 0
	r.gens[g].Reset()
}

func (s *store) memoryBytes() int {
	n := 0
	s.each(func(b Backend) { n += b.MemoryBytes() })
	return n
}

func (s *store) stats() BackendStats {
	var st BackendStats
	s.each(func(b Backend) { st.Add(b.Stats()) })
	st.Expired += s.expired // the rings' (dleft counts its own)
	return st
}

func (s *store) live() int64 {
	if s.dl != nil {
		return int64(s.dl.Len())
	}
	var n int64
	for t := range s.rings {
		n += s.rings[t].live[0] + s.rings[t].live[1]
	}
	return n
}

func (s *store) each(fn func(Backend)) {
	for t := range s.rings {
		for g := range s.rings[t].gens {
			if b := s.rings[t].gens[g]; b != nil {
				fn(b)
			}
		}
	}
}
