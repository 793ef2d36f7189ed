package watchlist

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeList(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestListReloadAndReopen: a list built from its file answers for its
// prefixes; a reload applies the file's difference (removed prefixes no
// longer listed, new ones listed); closed and reopened from its state
// file, it holds the same without reading the text file's entries again.
func TestListReloadAndReopen(t *testing.T) {
	dir := t.TempDir()
	file, state := filepath.Join(dir, "bad.txt"), filepath.Join(dir, "bad.wl")
	writeList(t, file, "# known bad", "192.0.2.0/24", "2001:db8:1::/48", "198.51.100.7", "bogus line")
	l, opened, lineErrs, err := Open("bad", file, state, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	if len(lineErrs) != 1 || !strings.Contains(lineErrs[0].Error(), "bad.txt:5:") || !strings.Contains(opened, "new, built from") {
		t.Errorf("opened %q, line errors %v", opened, lineErrs)
	}
	for a, want := range map[string]bool{"192.0.2.77": true, "192.0.3.1": false, "2001:db8:1:ff::9": true, "2001:db8:2::1": false, "198.51.100.7": true, "198.51.100.8": false} {
		if got := l.Listed(addr(a)); got != want {
			t.Errorf("%s listed %v, want %v", a, got, want)
		}
	}
	writeList(t, file, "192.0.2.0/24", "203.0.113.0/25")
	if _, err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	for a, want := range map[string]bool{"192.0.2.77": true, "198.51.100.7": false, "2001:db8:1::1": false, "203.0.113.5": true, "203.0.113.200": false} {
		if got := l.Listed(addr(a)); got != want {
			t.Errorf("after the reload %s listed %v, want %v", a, got, want)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, []byte("192.0.2.0/24\n203.0.113.0/25\n"), 0o644)
	l, opened, _, err = Open("bad", file, state, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !strings.Contains(opened, "clean") || l.Len() != 2 || !l.Listed(addr("203.0.113.5")) || l.Listed(addr("198.51.100.7")) {
		t.Errorf("reopened: %q, %d entries", opened, l.Len())
	}
}

// TestListAgainstExact applies random adds and removes (Apply) and checks
// every answer against the exact prefixes: never a listed address
// missed, and false positives within the filter's rate.
func TestListAgainstExact(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "l.txt")
	writeList(t, file)
	l, _, _, err := Open("l", file, filepath.Join(dir, "l.wl"), DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := rand.New(rand.NewPCG(3, 4))
	exact := map[netip.Prefix]bool{}
	var pool []netip.Prefix
	for i := range 3000 {
		pool = append(pool, netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/%d", i/256, i%256, 24+r.IntN(9))).Masked())
	}
	for round := range 20 {
		var add, remove []netip.Prefix
		touched := map[netip.Prefix]bool{} // Apply removes, then adds: one change a prefix a round
		for range 200 {
			p := pool[r.IntN(len(pool))]
			if touched[p] {
				continue
			}
			touched[p] = true
			if exact[p] && r.IntN(2) == 0 {
				remove = append(remove, p)
				delete(exact, p)
			} else if !exact[p] {
				add = append(add, p)
				exact[p] = true
			}
		}
		if err := l.Apply(add, remove); err != nil {
			t.Fatal(err)
		}
		fps, negatives := 0, 0
		for range 2000 {
			a := netip.AddrFrom4([4]byte{10, byte(r.IntN(12)), byte(r.IntN(256)), byte(r.IntN(256))})
			want := false
			for p := range exact {
				if p.Contains(a) {
					want = true
					break
				}
			}
			got := l.Listed(a)
			if want && !got {
				t.Fatalf("round %d: %s is listed but not found", round, a)
			}
			if !want {
				negatives++
				if got {
					fps++
				}
			}
		}
		if fps > 2+negatives/1000 {
			t.Errorf("round %d: %d false positives in %d unlisted addresses", round, fps, negatives)
		}
	}
}

// TestSetHandler: POST /api/v1/watchlists/NAME adds and removes entries,
// refuses a bad one (applying none) and an unknown list.
func TestSetHandler(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "l.txt")
	writeList(t, file, "192.0.2.1")
	l, _, _, err := Open("scanners", file, "", DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(l)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	post := func(name, body string) int {
		resp, err := http.Post(srv.URL+Path+name, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post("scanners", `{"add": ["198.51.100.0/24"], "remove": ["192.0.2.1"]}`); c != 200 {
		t.Fatalf("POST: %d", c)
	}
	if !s.Listed("scanners", addr("198.51.100.9")) || s.Listed("scanners", addr("192.0.2.1")) {
		t.Error("the change was not applied")
	}
	if c := post("scanners", `{"add": ["203.0.113.1", "nonsense"]}`); c != 400 || s.Listed("scanners", addr("203.0.113.1")) {
		t.Errorf("a bad entry: %d, and the good one applied: %v", c, s.Listed("scanners", addr("203.0.113.1")))
	}
	if c := post("others", `{}`); c != 404 {
		t.Errorf("an unknown list: %d", c)
	}
	if got := s.Lists(); len(got) != 1 || got[0] != "scanners" {
		t.Errorf("Lists %v", got)
	}
}

// TestListRebuildsWhenEntriesLag: a filter that went on past its entries
// file (a crash between the two writes) is not trusted: the list is
// rebuilt from its text file, and answers as the file says.
func TestListRebuildsWhenEntriesLag(t *testing.T) {
	dir := t.TempDir()
	file, state := filepath.Join(dir, "l.txt"), filepath.Join(dir, "l.wl")
	writeList(t, file, "192.0.2.0/24")
	l, _, _, err := Open("l", file, state, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	// An add that reached the filter but not the entries file.
	Keys(netip.MustParsePrefix("198.51.100.0/24"), func(h uint64) { l.f.Add(h, l.nextID) })
	l.f.Flush()
	l.Close()
	l, opened, _, err := Open("l", file, state, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !strings.Contains(opened, "rebuilt") || l.Listed(addr("198.51.100.1")) || !l.Listed(addr("192.0.2.1")) {
		t.Errorf("opened %q; 198.51.100.1 listed %v", opened, l.Listed(addr("198.51.100.1")))
	}
}

// TestReloadUnchanged: a reload of a file the list holds already is not
// parsed again (its bad lines were said at the first read); after an
// Apply the same file is the list's again.
func TestReloadUnchanged(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "l.txt")
	writeList(t, file, "192.0.2.0/24", "bogus")
	l, _, lineErrs, err := Open("l", file, "", DefaultOptions)
	if err != nil || len(lineErrs) != 1 {
		t.Fatalf("open: %v, %v", lineErrs, err)
	}
	defer l.Close()
	if lineErrs, err := l.Reload(); err != nil || lineErrs != nil {
		t.Errorf("unchanged: %v, %v", lineErrs, err)
	}
	if err := l.Apply(nil, []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}); err != nil || l.Listed(addr("192.0.2.1")) {
		t.Fatalf("apply: %v", err)
	}
	if lineErrs, err := l.Reload(); err != nil || len(lineErrs) != 1 || !l.Listed(addr("192.0.2.1")) {
		t.Errorf("after an Apply: %v, %v; listed %v", lineErrs, err, l.Listed(addr("192.0.2.1")))
	}
}
