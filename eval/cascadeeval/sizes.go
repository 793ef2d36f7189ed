package cascadeeval

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSizes reads "RAM:RATIO,..." pairs such as "4M:16,1M:64": RAM in
// bytes with an optional K, M or G suffix (powers of 1024), the ratio of
// the data set (the Bloom filter on disk) to it.
func ParseSizes(s string) ([]Size, error) {
	var out []Size
	for _, part := range strings.Split(s, ",") {
		ram, ratio, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("size %q: want RAM:RATIO, as 4M:16", part)
		}
		mult := uint64(1)
		switch {
		case strings.HasSuffix(ram, "K"):
			mult, ram = 1<<10, strings.TrimSuffix(ram, "K")
		case strings.HasSuffix(ram, "M"):
			mult, ram = 1<<20, strings.TrimSuffix(ram, "M")
		case strings.HasSuffix(ram, "G"):
			mult, ram = 1<<30, strings.TrimSuffix(ram, "G")
		}
		n, err := strconv.ParseUint(ram, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("size %q: RAM %q is not a whole number of bytes, K, M or G", part, ram)
		}
		x, err := strconv.ParseFloat(ratio, 64)
		if err != nil {
			return nil, fmt.Errorf("size %q: ratio %q is not a number", part, ratio)
		}
		out = append(out, Size{RAMBytes: n * mult, Ratio: x})
	}
	return out, nil
}

// FormatSizes writes sizes as ParseSizes reads them.
func FormatSizes(sizes []Size) string {
	var parts []string
	for _, s := range sizes {
		ram := strconv.FormatUint(s.RAMBytes, 10)
		for _, u := range []struct {
			suffix string
			mult   uint64
		}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
			if s.RAMBytes >= u.mult && s.RAMBytes%u.mult == 0 {
				ram = strconv.FormatUint(s.RAMBytes/u.mult, 10) + u.suffix
				break
			}
		}
		parts = append(parts, ram+":"+strconv.FormatFloat(s.Ratio, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}
