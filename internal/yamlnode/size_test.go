package yamlnode

import "testing"

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "100": 100, "100B": 100, "10MiB": 10 << 20, "10 MiB": 10 << 20,
		"10mib": 10 << 20, "1.5KiB": 1536, "500kB": 500_000, "2GB": 2e9, "1TiB": 1 << 40, "1GiB": 1 << 30} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "MiB", "10XB", "-1MiB", "1e3", "10 M i B", "99999999999TiB", "1..2"} {
		if got, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, got)
		}
	}
}
