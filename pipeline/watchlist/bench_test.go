package watchlist

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

// BenchmarkOpen compares the two ways a start gets its list back: reopen
// the persisted filter (and its entries file), or rebuild it from the
// text file; N entries, /32s, FLOWMON_WATCHLIST_N (default 1M; 10M, a
// large blocklist, needs FLOWMON_LONG=1 and a few GB of RAM for the
// entries).
func BenchmarkOpen(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("FLOWMON_WATCHLIST_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if n > 1_000_000 {
		testgate.Long(b)
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "list.txt")
	fh, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(fh)
	for i := range n {
		fmt.Fprintf(w, "%d.%d.%d.%d\n", 1+i>>24, i>>16&255, i>>8&255, i&255)
	}
	w.Flush()
	fh.Close()
	state := filepath.Join(dir, "list.wl")
	l, _, _, err := Open("l", file, state, DefaultOptions)
	if err != nil {
		b.Fatal(err)
	}
	l.Close()
	b.Run("reopen", func(b *testing.B) {
		for range b.N {
			l, opened, _, err := reopen(file, state)
			if err != nil || l.Len() != n {
				b.Fatalf("%v %q", err, opened)
			}
			l.Close()
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		for range b.N {
			l, _, _, err := Open("l", file, "", DefaultOptions)
			if err != nil || l.Len() != n {
				b.Fatal(err)
			}
			l.Close()
		}
	})
}

// reopen opens the persisted list without reading the text file's
// entries again: the text is unchanged, so the reload applies nothing.
func reopen(file, state string) (*List, string, []error, error) {
	return Open("l", file, state, DefaultOptions)
}
