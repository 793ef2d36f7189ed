package watchlist

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, name := range []string{"blocked", "a", "Scanners-2024.v6", "0day_c2", strings.Repeat("x", MaxNameLen)} {
		if err := CheckName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", ".hidden", "-x", "_x", "a/b", "..", "a b", "a=b", "ä", "a%2F", strings.Repeat("x", MaxNameLen+1)} {
		if err := CheckName(name); !errors.Is(err, ErrBadName) {
			t.Errorf("%q: %v, want ErrBadName", name, err)
		}
	}
	if _, _, _, err := Open("a/b", "x.txt", "", DefaultOptions); !errors.Is(err, ErrBadName) {
		t.Errorf("Open of a bad name: %v", err)
	}
}

// TestSetUpdate: Update opens the lists of new names, moves a list to its
// new file (applying the difference), closes the lists no longer named
// (a lookup that still holds one answers not listed) and rereads the
// others; a refused change leaves the set as it was, its lists reread.
func TestSetUpdate(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	writeList(t, path("a.txt"), "192.0.2.1")
	writeList(t, path("b.txt"), "198.51.100.1")
	writeList(t, path("b2.txt"), "198.51.100.2")
	writeList(t, path("c.txt"), "203.0.113.1")
	var opened []*List
	open := func(sp Spec) (*List, error) {
		l, _, _, err := Open(sp.Name, sp.File, path(sp.Name+".wl"), DefaultOptions)
		if err == nil {
			opened = append(opened, l)
		}
		return l, err
	}
	a, _ := open(Spec{"a", path("a.txt")})
	b, _ := open(Spec{"b", path("b.txt")})
	s, err := NewSet(a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	listed := func(want map[string]string) {
		t.Helper()
		for name, addrs := range want {
			for _, a := range strings.Fields(addrs) {
				neg := strings.HasPrefix(a, "!")
				if got := s.Listed(name, addr(strings.TrimPrefix(a, "!"))); got == neg {
					t.Errorf("%s on %s: %v", a, name, got)
				}
			}
		}
	}

	writeList(t, path("a.txt"), "192.0.2.9")
	if err := s.Update([]Spec{{"a", path("a.txt")}, {"c", path("c.txt")}, {"b", path("b2.txt")}}, open, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Lists(); !reflect.DeepEqual(got, []string{"a", "b", "c"}) || s.Get("b") != b || b.File != path("b2.txt") {
		t.Errorf("lists %v; b %p (was %p) reads %s", got, s.Get("b"), b, b.File)
	}
	listed(map[string]string{"a": "192.0.2.9 !192.0.2.1", "b": "198.51.100.2 !198.51.100.1", "c": "203.0.113.1"})

	if err := s.Update([]Spec{{"a", path("a.txt")}, {"c", path("c.txt")}}, open, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Lists(); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("lists %v after removing b", got)
	}
	if b.Listed(addr("198.51.100.2")) || !errors.Is(b.Apply(nil, nil), ErrClosed) || b.Saturations() != 0 {
		t.Error("a closed list answers listed, or takes a change")
	}

	// Refused: the set stays, its lists are reread, what was opened is closed.
	writeList(t, path("a.txt"), "192.0.2.10")
	before := len(opened)
	refuse := func(next *Set) error { return fmt.Errorf("no: %v", next.Lists()) }
	for _, tc := range []struct {
		specs  []Spec
		accept func(*Set) error
		want   string
	}{
		{[]Spec{{"a", path("a.txt")}, {"d", path("c.txt")}}, refuse, "no: [a d]"},
		{[]Spec{{"a", path("a.txt")}, {"d", path("c.txt")}, {"a", path("c.txt")}}, nil, `watchlist "a" given twice`},
		{[]Spec{{"a", path("none.txt")}, {"d", path("c.txt")}}, nil, "watchlist a: open " + path("none.txt")},
		{[]Spec{{"a", path("a.txt")}, {"e/f", path("c.txt")}}, nil, `"e/f" is not a watchlist name`},
	} {
		err := s.Update(tc.specs, open, tc.accept)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.specs, err, tc.want)
		}
		if got := s.Lists(); !reflect.DeepEqual(got, []string{"a", "c"}) || s.Get("a").File != path("a.txt") {
			t.Errorf("%v: lists %v after a refused change", tc.specs, got)
		}
	}
	listed(map[string]string{"a": "192.0.2.10 !192.0.2.9", "c": "203.0.113.1"})
	for _, l := range opened[before:] {
		if l.Listed(addr("203.0.113.1")) {
			t.Errorf("list %s opened for a refused change is not closed", l.Name)
		}
	}
}

// TestSetUpdateWhileLooking: lookups go on while Update swaps lists in
// and out (go test -race checks the rest).
func TestSetUpdateWhileLooking(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "l.txt")
	writeList(t, file, "192.0.2.0/24")
	open := func(sp Spec) (*List, error) {
		l, _, _, err := Open(sp.Name, sp.File, "", DefaultOptions)
		return l, err
	}
	l, _ := open(Spec{"l", file})
	s, _ := NewSet(l)
	defer s.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s.Listed("l", addr("192.0.2.1"))
				s.Listed("m", addr("192.0.2.1"))
				s.Lists()
			}
		}()
	}
	for i := range 50 {
		specs := []Spec{{"l", file}}
		if i%2 == 0 {
			specs = append(specs, Spec{"m", file})
		}
		if err := s.Update(specs, open, nil); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
}
