// Package history is flowmon's long-term flow history: every (source,
// destination) host pair the pipeline sees, kept in a Cascade Filter
// (filters/cascade) under a directory, so that flowmon remembers pairs
// over days within a fixed RAM budget (the filter's QF0) and across
// restarts. It answers the pipeline's history stage (engine.History),
// and through it the rules' novelty kind: was this pair ever seen?
//
// The answer is a filter's: a pair never seen is called seen at the
// filter's false-positive rate (so a novelty alert is missed at that
// rate), a pair seen is never called new. Lookups read QF0 in RAM, then
// a page of each level on disk (the page cache holds the busy ones);
// when QF0 fills, the insert that finds it full merges it into the
// levels, a sequential write that holds the other shards' new flows for
// its length (the paper's synchronous COLA merge). Pairs are directed,
// originator to responder, as a flow record names them.
package history

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/flowmon/flowmon/filters/cascade"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// History is a host-pair history in a directory; its methods may be
// called from many goroutines.
type History struct {
	mu sync.Mutex
	f  *cascade.Filter

	novel, seen, errs atomic.Uint64
	lastErr           atomic.Pointer[error]
}

// DefaultOptions: 16 MB of RAM, fingerprints sized for a billion pairs
// at a false-positive rate of 1e-3.
var DefaultOptions = cascade.Options{RAMBytes: 16 << 20, Capacity: 1 << 30, FPRate: 1e-3}

// Open opens (or starts) the history in dir.
func Open(dir string, o cascade.Options) (*History, error) {
	f, err := cascade.Open(dir, o)
	if err != nil {
		return nil, fmt.Errorf("flow history: %w", err)
	}
	return &History{f: f}, nil
}

// Novel records that src and dst were seen together and reports whether
// they had not been. A failing disk read or write is counted (Stats) and
// answered "not novel", so a broken disk raises no flood of alerts.
func (h *History) Novel(src, dst netip.Addr) bool {
	k := pairKey(src, dst)
	h.mu.Lock()
	defer h.mu.Unlock()
	known, err := h.f.Contains(k)
	if err == nil && !known {
		err = h.f.Insert(k)
	}
	if err != nil {
		h.errs.Add(1)
		h.lastErr.Store(&err)
		return false
	}
	if known {
		h.seen.Add(1)
		return false
	}
	h.novel.Add(1)
	return true
}

// pairKey is the pair's 64-bit key: the two addresses' 16-byte forms
// (IPv4 mapped) folded through the project's mixer.
func pairKey(src, dst netip.Addr) uint64 {
	a, b := src.Unmap().As16(), dst.Unmap().As16()
	var k uint64 = 0x686973746f727931 // "history1"
	for i := 0; i < 16; i += 8 {
		k = hashmix.Mix(k ^ binary.LittleEndian.Uint64(a[i:]))
		k = hashmix.Mix(k ^ binary.LittleEndian.Uint64(b[i:]))
	}
	return k
}

// Stats are the history's counts since Open, and its filter's.
type Stats struct {
	Novel, Seen, Errors uint64
	LastError           error
	Filter              cascade.Stats
}

// Stats reads the counts.
func (h *History) Stats() Stats {
	s := Stats{Novel: h.novel.Load(), Seen: h.seen.Load(), Errors: h.errs.Load()}
	if e := h.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	h.mu.Lock()
	s.Filter = h.f.Stats()
	h.mu.Unlock()
	return s
}

// Close closes the filter, writing QF0 with its manifest.
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.f.Close()
}
