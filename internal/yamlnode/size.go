package yamlnode

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseSize reads a byte count with a unit, decimal (kB, MB, GB, TB) or
// binary (KiB, MiB, GiB, TiB), B or none for bytes, case aside: the
// sizes of both config files (a sink's max_size, the agent's ring).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	f, err := strconv.ParseFloat(num, 64)
	mult, ok := sizeUnits[unit]
	n := f * float64(mult)
	if err != nil || !ok || n >= math.MaxInt64 || n != math.Trunc(n) {
		return 0, fmt.Errorf("bad size %q (want a whole number of bytes, e.g. 1MiB, 500kB or 4096)", s)
	}
	return int64(n), nil
}
