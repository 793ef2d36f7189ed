package watchlist

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/filters/scbf"
)

// A List is one named watchlist: its text file, and the scaling counting
// Bloom filter that holds its keys, in memory or persisted in a file
// beside its entries file (STATE and STATE.entries). Reloading the text
// file applies only the difference: the prefixes gone are removed with
// the id they were added with (so a removal reaches the sub-filter that
// holds them, dablooms' rule), the new ones added with the next id.
// Check may run on many goroutines while a reload or Apply runs, and
// after Close (a list a Set.Update took out): it answers not listed.
type List struct {
	Name  string // as CheckName allows
	File  string // the text file (Set.Update changes it, under the set's lock)
	State string // the filter's file ("": in memory only)

	mu      sync.RWMutex
	f       *scbf.Filter
	entries map[netip.Prefix]uint64 // what the filter holds, with the id each was added with
	// raw is the entries file's records, decoded into entries only when a
	// reload or an Apply needs them: a restart with the text file
	// unchanged reads neither the text nor the entries.
	raw     []byte
	textSum uint64 // the text file's hash the filter holds (0: unknown, or changed by Apply)
	nextID  uint64
	opts    scbf.Options
}

// ErrClosed is wrapped by the error of a change to a closed list.
var ErrClosed = errors.New("closed")

// DefaultOptions size a list's filter: a sub-filter per 100,000 keys,
// an overall false-positive rate of 1e-4, scaling as the list grows.
var DefaultOptions = scbf.Options{Capacity: 100_000, ErrorRate: 1e-4}

// Open makes the list name (CheckName) from its text file: from the
// state file when it is there and clean or consistent (what it says is
// in opened), else built from the text file; bad lines of the text file
// are returned beside the list, which holds the rest.
func Open(name, file, state string, o scbf.Options) (l *List, opened string, lineErrs []error, err error) {
	if err := CheckName(name); err != nil {
		return nil, "", nil, err
	}
	l = &List{Name: name, File: file, State: state, opts: o, nextID: 1}
	if state != "" {
		f, st, err := scbf.Open(state)
		switch {
		case err == nil:
			// The entries file is written after each flush with the
			// filter's operation count: a filter that went on past it (a
			// crash between the two) holds what the entries do not say,
			// and removing by them could hide other keys.
			raw, next, seq, sum, eerr := readEntries(state + ".entries")
			if eerr == nil && seq != st.Seq {
				eerr = fmt.Errorf("the entries are as of operation %d, the filter %s", seq, st)
			}
			if eerr == nil {
				l.f, l.raw, l.nextID, l.textSum = f, raw, next, sum
				opened = fmt.Sprintf("%s: %s", state, st)
			} else {
				f.Close()
				opened = fmt.Sprintf("%s: rebuilt from %s (%v)", state, file, eerr)
			}
		case errors.Is(err, os.ErrNotExist):
			opened = fmt.Sprintf("%s: new, built from %s", state, file)
		default:
			opened = fmt.Sprintf("%s: %v: rebuilt from %s", state, err, file)
		}
	}
	text, err := readText(file, l.textSum)
	if err != nil {
		l.Close()
		return nil, "", nil, fmt.Errorf("watchlist %s: %w", name, err)
	}
	if text.same {
		return l, opened + ", the text file unchanged", nil, nil
	}
	if l.f == nil {
		// A new filter's sub-filters are sized for the list as it is (a
		// quarter more), so that a big list is one sub-filter, not a
		// hundred for Check to walk; growth past it scales as dablooms.
		var n uint64
		for _, p := range text.prefixes {
			Keys(p, func(uint64) { n++ })
		}
		l.opts.Capacity = max(l.opts.Capacity, n*5/4)
		if err := l.create(); err != nil {
			return nil, "", nil, err
		}
		l.entries = map[netip.Prefix]uint64{}
	}
	if err := l.update(text); err != nil {
		l.Close()
		return nil, "", text.lineErrs, err
	}
	return l, opened, text.lineErrs, nil
}

// create makes an empty filter: in a fresh state file, or in memory.
func (l *List) create() error {
	var err error
	if l.State == "" {
		l.f, err = scbf.New(l.opts)
		return err
	}
	os.Remove(l.State)
	if l.f, err = scbf.Create(l.State, l.opts); err != nil {
		return fmt.Errorf("watchlist %s: %w", l.Name, err)
	}
	return nil
}

// text is a list's text file as read once: its prefixes, the lines it
// skipped, and its bytes' hash.
type text struct {
	file     string
	prefixes []netip.Prefix
	lineErrs []error
	sum      uint64
	same     bool // the hash is held's: not parsed, prefixes and lineErrs unset
}

// readText reads file, and parses it unless its hash is held (0 for
// none), the text the filter holds already.
func readText(file string, held uint64) (text, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return text{}, err
	}
	t := text{file: file, sum: capture.HashBytes(b) | 1}
	if t.same = t.sum == held; !t.same {
		t.prefixes, t.lineErrs = Parse(file, bytes.NewReader(b))
	}
	return t, nil
}

// Reload reads the text file again and applies the difference; its bad
// lines are returned, and skipped. A file unchanged since the list last
// took it is not parsed again (its bad lines were returned then).
func (l *List) Reload() ([]error, error) {
	t, err := readText(l.File, l.held())
	if err == nil && t.same && l.held() != t.sum { // an Apply came in between
		t, err = readText(l.File, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("watchlist %s: %w", l.Name, err)
	}
	if t.same {
		return nil, nil
	}
	return t.lineErrs, l.update(t)
}

// held is the hash of the text file the filter holds, 0 for none.
func (l *List) held() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.textSum
}

// update makes the list hold what t holds, applying the difference.
func (l *List) update(t text) error {
	if err := l.decodeEntries(); err != nil {
		return err
	}
	want := make(map[netip.Prefix]bool, len(t.prefixes))
	for _, p := range t.prefixes {
		want[p] = true
	}
	var add, remove []netip.Prefix
	l.mu.RLock()
	for p := range l.entries {
		if !want[p] {
			remove = append(remove, p)
		}
	}
	for p := range want {
		if _, ok := l.entries[p]; !ok {
			add = append(add, p)
		}
	}
	l.mu.RUnlock()
	return l.apply(add, remove, t.sum)
}

// decodeEntries turns the entries file's records into the entries map,
// once.
func (l *List) decodeEntries() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries != nil {
		return nil
	}
	ents, err := decodeEntries(l.raw, l.nextID)
	if err != nil {
		return fmt.Errorf("watchlist %s: %s.entries: %w", l.Name, l.State, err)
	}
	l.entries, l.raw = ents, nil
	return nil
}

// Apply adds and removes prefixes (POST /api/v1/watchlists/NAME does it
// for automation; the next reload of the text file, at SIGHUP or at a
// restart, makes the list the file's again), flushes the filter and
// writes its entries file.
func (l *List) Apply(add, remove []netip.Prefix) error {
	if err := l.decodeEntries(); err != nil {
		return err
	}
	return l.apply(add, remove, 0)
}

// apply applies a change that leaves the list as the text file of hash
// sum says (0: as no file says).
func (l *List) apply(add, remove []netip.Prefix, sum uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("watchlist %s: %w", l.Name, ErrClosed)
	}
	for _, p := range remove {
		id, ok := l.entries[p]
		if !ok {
			continue
		}
		var err error
		Keys(p, func(h uint64) {
			if _, rerr := l.f.Remove(h, id); rerr != nil && err == nil {
				err = rerr
			}
		})
		if err != nil {
			return fmt.Errorf("watchlist %s: remove %s: %w", l.Name, p, err)
		}
		delete(l.entries, p)
	}
	for _, p := range add {
		if _, ok := l.entries[p]; ok {
			continue
		}
		id := l.nextID
		var err error
		Keys(p, func(h uint64) {
			if aerr := l.f.Add(h, id); aerr != nil && err == nil {
				err = aerr
			}
		})
		if err != nil {
			return fmt.Errorf("watchlist %s: add %s: %w", l.Name, p, err)
		}
		l.entries[p] = id
		l.nextID++
	}
	l.textSum = sum
	if l.State == "" {
		return nil
	}
	if err := l.f.Flush(); err != nil {
		return fmt.Errorf("watchlist %s: %w", l.Name, err)
	}
	return writeEntries(l.State+".entries", l.entries, l.nextID, l.f.Seq(), l.textSum)
}

// Listed reports whether a is on the list (or, at the filter's
// false-positive rate, seems to be).
func (l *List) Listed(a netip.Addr) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.f != nil && Probe(a, l.f.Check)
}

// Len is the prefixes the list holds.
func (l *List) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.entries == nil {
		return len(l.raw) / entrySize
	}
	return len(l.entries)
}

// Saturations is the increments the filter's counters absorbed at their
// maximum, 15, where they stick (never a false negative).
func (l *List) Saturations() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.f == nil {
		return 0
	}
	return l.f.Saturations()
}

// Close flushes and closes the filter.
func (l *List) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
