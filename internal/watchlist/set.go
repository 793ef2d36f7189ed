package watchlist

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strings"
)

// Set is the agent's watchlists by name: what watchlist rules ask
// (rules.Lookups).
type Set struct {
	lists map[string]*List
}

// NewSet holds lists (their names distinct).
func NewSet(lists ...*List) (*Set, error) {
	s := &Set{lists: map[string]*List{}}
	for _, l := range lists {
		if _, dup := s.lists[l.Name]; dup {
			return nil, fmt.Errorf("watchlist %q given twice", l.Name)
		}
		s.lists[l.Name] = l
	}
	return s, nil
}

// Lists names the watchlists, sorted.
func (s *Set) Lists() []string {
	n := make([]string, 0, len(s.lists))
	for k := range s.lists {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Listed reports whether a is on the list named name (false for a list
// the set does not have).
func (s *Set) Listed(name string, a netip.Addr) bool {
	l := s.lists[name]
	return l != nil && l.Listed(a)
}

// Get returns the list named name, or nil.
func (s *Set) Get(name string) *List { return s.lists[name] }

// Reload reads every list's text file again; the errors name the list
// and line of each problem (bad lines are skipped, the rest applied).
func (s *Set) Reload() error {
	var errs []error
	for _, name := range s.Lists() {
		lineErrs, err := s.lists[name].Reload()
		errs = append(errs, lineErrs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes every list.
func (s *Set) Close() error {
	var errs []error
	for _, l := range s.lists {
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
		for n, l := range s.lists {
			sizes[n] = l.Len()
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(sizes)
	})
	mux.HandleFunc("POST "+Path+"{name}", func(w http.ResponseWriter, r *http.Request) {
		l := s.lists[r.PathValue("name")]
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
