// Package benchgate keeps benchmarks of very large structures out of runs
// that did not ask for them: a 10M-key filter takes hundreds of MB and
// up to minutes to build, so `go test -bench .` (and make bench) leaves
// it out unless the -bench pattern names 10M.
package benchgate

import (
	"flag"
	"strings"
	"testing"
)

// Large is the size from which a benchmark runs only when asked for.
const Large = 10_000_000

// SkipLarge skips b when n is Large or more and the -bench pattern does
// not contain "10M".
func SkipLarge(b *testing.B, n uint64) {
	if n < Large {
		return
	}
	if p := flag.Lookup("test.bench"); p == nil || !strings.Contains(p.Value.String(), "10M") {
		b.Skip("10M-size structures only when -bench names 10M")
	}
}
