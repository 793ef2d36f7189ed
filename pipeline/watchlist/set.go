package watchlist

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Set is the agent's watchlists by name: what watchlist rules ask
// (rules.Lookups). Its methods may be called from many goroutines;
// Update changes which lists it holds while lookups go on.
type Set struct {
	mu    sync.Mutex                       // held by Reload and Update: one change at a time
	lists atomic.Pointer[map[string]*List] // replaced whole by Update, read without a lock
}

// NewSet holds lists (their names distinct).
func NewSet(lists ...*List) (*Set, error) {
	m := map[string]*List{}
	for _, l := range lists {
		if _, dup := m[l.Name]; dup {
			return nil, fmt.Errorf("watchlist %q given twice", l.Name)
		}
		m[l.Name] = l
	}
	s := &Set{}
	s.lists.Store(&m)
	return s, nil
}

func (s *Set) current() map[string]*List {
	if m := s.lists.Load(); m != nil {
		return *m
	}
	return nil
}

// Lists names the watchlists, sorted.
func (s *Set) Lists() []string { return slices.Sorted(maps.Keys(s.current())) }

// Listed reports whether a is on the list named name (false for a list
// the set does not have).
func (s *Set) Listed(name string, a netip.Addr) bool {
	l := s.current()[name]
	return l != nil && l.Listed(a)
}

// Get returns the list named name, or nil.
func (s *Set) Get(name string) *List { return s.current()[name] }

// Reload reads every list's text file again; the errors name the list
// and line of each problem (bad lines are skipped, the rest applied).
func (s *Set) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reload(nil)
}

// reload reloads the lists but those in fresh.
func (s *Set) reload(fresh map[*List]bool) error {
	var errs []error
	m := s.current()
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if fresh[m[name]] {
			continue
		}
		lineErrs, err := m[name].Reload()
		errs = append(append(errs, lineErrs...), err)
	}
	return errors.Join(errs...)
}

// MaxNameLen is the longest name a list may have.
const MaxNameLen = 64

// ErrBadName is wrapped by CheckName's error.
var ErrBadName = errors.New("not a watchlist name")

// CheckName says whether name may name a list: 1 to MaxNameLen ASCII
// letters, digits, '_', '-' or '.', starting with a letter or a digit.
// A name is a path segment of the API (POST /api/v1/watchlists/NAME), a
// file's name in the state directory (NAME.wl), a metric's label and a
// word in the rules and the flags (--watchlist NAME=FILE), and reads
// the same in each.
func CheckName(name string) error {
	ok := name != "" && len(name) <= MaxNameLen && alnum(name[0])
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = alnum(c) || c == '_' || c == '-' || c == '.'
	}
	if !ok {
		return fmt.Errorf("%q is %w (1 to %d letters, digits, '_', '-' or '.', starting with a letter or digit)", name, ErrBadName, MaxNameLen)
	}
	return nil
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// A Spec is a list as the agent's configuration gives it.
type Spec struct {
	Name, File string
}

// Update makes the set hold the lists specs give, and reads their text
// files again: a list it holds by a spec's name keeps its filter, reread
// from its file, or from the spec's file when that changed (the
// difference applied); a list of a new name is opened with open; a list
// no spec names leaves the set and is closed (a lookup holding it answers
// not listed). accept, if not nil, is asked with the set as it would be
// before anything changes (rules.Engine.CheckWatchlists refuses one without a
// list a rule names). The change is all or nothing: if a name is given
// twice, a new list does not open, a new file cannot be read or accept
// refuses, the set stays as it was, its lists reread. The errors say
// that, and name the bad lines of each file (skipped, as Reload's).
func (s *Set) Update(specs []Spec, open func(Spec) (*List, error), accept func(next *Set) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh, err := s.change(specs, open, accept)
	return errors.Join(err, s.reload(fresh))
}

// change makes the set the lists specs give, or nothing; it returns the
// lists it read the files of.
func (s *Set) change(specs []Spec, open func(Spec) (*List, error), accept func(next *Set) error) (map[*List]bool, error) {
	old := s.current()
	next := make(map[string]*List, len(specs))
	fresh := map[*List]bool{}
	var opened []*List
	moved := map[*List]text{} // lists whose file changes: the new file's text
	fail := func(err error) (map[*List]bool, error) {
		for _, l := range opened {
			l.Close()
		}
		return nil, err
	}
	for _, sp := range specs {
		if _, dup := next[sp.Name]; dup {
			return fail(fmt.Errorf("watchlist %q given twice", sp.Name))
		}
		l := old[sp.Name]
		switch {
		case l == nil:
			nl, err := open(sp)
			if err != nil {
				return fail(err)
			}
			opened = append(opened, nl)
			l = nl
			fresh[l] = true
		case l.File != sp.File:
			t, err := readText(sp.File, 0)
			if err != nil {
				return fail(fmt.Errorf("watchlist %s: %w", sp.Name, err))
			}
			moved[l] = t
			fresh[l] = true
		}
		next[sp.Name] = l
	}
	if accept != nil {
		n := &Set{}
		n.lists.Store(&next)
		if err := accept(n); err != nil {
			return fail(err)
		}
	}
	s.lists.Store(&next)
	var errs []error
	for name, l := range old {
		if next[name] != l {
			errs = append(errs, l.Close())
		}
	}
	for l, t := range moved {
		l.File = t.file
		errs = append(append(errs, t.lineErrs...), l.update(t))
	}
	return fresh, errors.Join(errs...)
}

// Close closes every list.
func (s *Set) Close() error {
	var errs []error
	for _, l := range s.current() {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// Path is where Handler serves: POST Path+NAME.
const Path = "/api/v1/watchlists/"

// Change is the body of POST /api/v1/watchlists/NAME: addresses or CIDR
// prefixes to add and to remove. It holds until the list's file is next
// reloaded, which makes the list the file's again.
type Change struct {
	Add    []string `json:"add"`
	Remove []string `json:"remove"`
}

// Handler serves POST /api/v1/watchlists/NAME (a Change; 200 with the
// list's size, 400 naming every bad entry and applying none, 404 for a
// list the set does not have) and GET /api/v1/watchlists/ (the lists and
// their sizes).
func (s *Set) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Path, func(w http.ResponseWriter, _ *http.Request) {
		sizes := map[string]int{}
		for n, l := range s.current() {
			sizes[n] = l.Len()
		}
		w.Header().Set("Content-Type", "application/json")
		// The client has gone if this fails: nobody to tell.
		_ = json.NewEncoder(w).Encode(sizes)
	})
	mux.HandleFunc("POST "+Path+"{name}", func(w http.ResponseWriter, r *http.Request) {
		l := s.Get(r.PathValue("name"))
		if l == nil {
			http.Error(w, fmt.Sprintf("no watchlist %q (have %s)", r.PathValue("name"), strings.Join(s.Lists(), ", ")), http.StatusNotFound)
			return
		}
		var c Change
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			http.Error(w, "body: want {\"add\": [...], \"remove\": [...]}: "+err.Error(), http.StatusBadRequest)
			return
		}
		add, errA := parseAll("add", c.Add)
		remove, errR := parseAll("remove", c.Remove)
		if err := errors.Join(errA, errR); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := l.Apply(add, remove); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s: %d entries\n", l.Name, l.Len())
	})
	return mux
}

func parseAll(what string, ss []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for i, s := range ss {
		p, err := parseEntry(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %v", what, i, err))
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}
