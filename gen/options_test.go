package gen

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mod         func(*Options)
		errContains string
	}{
		{"defaults", func(*Options) {}, ""},
		{"zero mix and link read as defaults", func(o *Options) { o.Mix, o.Link, o.Start = Mix{}, 0, time.Time{} }, ""},
		{"packets instead of flows", func(o *Options) { o.Flows, o.Packets = 0, 1000 }, ""},
		{"no flows", func(o *Options) { o.Flows = 0 }, "flows 0 must be in"},
		{"too many flows", func(o *Options) { o.Flows = MaxFlows + 1 }, "must be in [1, 8388608]"},
		{"flows and packets", func(o *Options) { o.Packets = 10 }, "not both"},
		{"negative packets", func(o *Options) { o.Flows, o.Packets = 0, -1 }, "packets -1"},
		{"short duration", func(o *Options) { o.Duration = time.Microsecond }, "duration 1µs"},
		{"link", func(o *Options) { o.Link = 113 }, "link type 113"},
		{"snaplen", func(o *Options) { o.Snaplen = -1 }, "snaplen -1"},
		{"mix sum", func(o *Options) { o.Mix = Mix{Normal: 0.5} }, "sum to 0.5"},
		{"dup rate", func(o *Options) { o.DupRate = 1 }, "dup rate 1"},
		{"dup rate NaN", func(o *Options) { o.DupRate = math.NaN() }, "dup rate NaN"},
		{"shares", func(o *Options) { o.UDPShare, o.ICMPShare = 0.7, 0.5 }, "at most 1"},
		{"ipv6 share", func(o *Options) { o.IPv6Share = 2 }, "ipv6 share 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mod(&o)
			err := o.Validate()
			switch {
			case tc.errContains == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.errContains != "" && (err == nil || !strings.Contains(err.Error(), tc.errContains)):
				t.Fatalf("error %v, want one containing %q", err, tc.errContains)
			case err != nil && !errors.Is(err, ErrOptions):
				t.Fatalf("error %v does not wrap ErrOptions", err)
			}
			if _, nerr := New(o); (nerr == nil) != (err == nil) {
				t.Fatalf("New and Validate disagree: %v vs %v", nerr, err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	o := DefaultOptions()
	o.Snaplen, o.DupRate, o.IPv6Share = -1, 2, -1
	err := o.Validate()
	for _, want := range []string{"snaplen", "dup rate", "ipv6 share"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestParseMix(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mix
		err  string
	}{
		{"normal=0.9,synflood=0.05,scan=0.03,heavy=0.02", Mix{0.9, 0.05, 0.03, 0.02}, ""},
		{"synflood=0.1", Mix{Normal: 0.9, SYNFlood: 0.1}, ""},
		{" scan = 1 ", Mix{Scan: 1}, ""},
		{"normal=1", Mix{Normal: 1}, ""},
		{"normal=0.5", Mix{}, "sum to 0.5"},
		{"synflood=0.7,scan=0.7", Mix{}, "sum to 1.4"},
		{"ddos=0.1", Mix{}, "unknown scenario"},
		{"scan", Mix{}, "not name=share"},
		{"scan=x", Mix{}, "must be a number"},
		{"scan=-0.1", Mix{}, "must be a number"},
		{"scan=0.1,scan=0.2", Mix{}, "given twice"},
	} {
		got, err := ParseMix(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrOptions) {
				t.Errorf("ParseMix(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || math.Abs(got.Normal-tc.want.Normal) > 1e-9 || got.SYNFlood != tc.want.SYNFlood ||
			got.Scan != tc.want.Scan || got.Heavy != tc.want.Heavy {
			t.Errorf("ParseMix(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if m, err := ParseMix(DefaultMix.String()); err != nil || m != DefaultMix {
		t.Errorf("ParseMix(DefaultMix.String()) = %v, %v", m, err)
	}
}

func TestParseLinkType(t *testing.T) {
	for in, want := range map[string]LinkType{"ethernet": LinkEthernet, "EN10MB": LinkEthernet, "raw": LinkRaw} {
		if got, err := ParseLinkType(in); err != nil || got != want {
			t.Errorf("ParseLinkType(%q) = %v, %v", in, got, err)
		}
		if got, _ := ParseLinkType(want.String()); got != want {
			t.Errorf("%v does not round-trip", want)
		}
	}
	if _, err := ParseLinkType("wifi"); !errors.Is(err, ErrOptions) {
		t.Errorf("ParseLinkType(wifi) error %v", err)
	}
}

func TestConnStateNames(t *testing.T) {
	for s := range NumConnStates {
		if got, ok := ParseConnState(s.String()); !ok || got != s {
			t.Errorf("%v does not round-trip", s)
		}
	}
	if _, ok := ParseConnState("XYZ"); ok {
		t.Error("ParseConnState accepted XYZ")
	}
}

// FuzzParseMix: no input panics, and an accepted mix validates and
// survives String/ParseMix.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"normal=0.9,synflood=0.05,scan=0.03,heavy=0.02", "scan=1", "", "=", "heavy=1e-300", "normal=NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
		if err != nil {
			if !errors.Is(err, ErrOptions) {
				t.Fatalf("error %v does not wrap ErrOptions", err)
			}
			return
		}
		if err := m.validate(); err != nil {
			t.Fatalf("accepted %q but %v", s, err)
		}
		if _, err := ParseMix(m.String()); err != nil {
			t.Fatalf("%q: String %q does not parse: %v", s, m.String(), err)
		}
	})
}

// FuzzReadTruth: no input panics ReadTruth.
func FuzzReadTruth(f *testing.F) {
	f.Add([]byte(`{"orig_h":"10.0.0.1","orig_p":1,"resp_h":"10.0.0.2","resp_p":80,"proto":"tcp","conn_state":"SF"}` + "\n"))
	f.Add([]byte("{\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ReadTruth(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for i := range recs {
			recs[i].AppendJSON(nil)
		}
	})
}
