package afpacket

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/conferr"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{Iface: "eth0"}.WithDefaults()
	want := Config{Iface: "eth0", BlockSize: 1 << 20, BlockCount: 64, FrameSize: 2048,
		BlockTimeout: 10 * time.Millisecond, Fanout: FanoutHash}
	if c.BlockSize != want.BlockSize || c.BlockCount != want.BlockCount || c.FrameSize != want.FrameSize ||
		c.BlockTimeout != want.BlockTimeout || c.Fanout != want.Fanout {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	// Validate checks the fields as they are: zero is out of range.
	if err := (Config{Iface: "eth0"}).Validate(); err == nil || !strings.Contains(err.Error(), "block-count: 0 must be between 1 and 65536") {
		t.Errorf("zero fields: %v", err)
	}
	// Set fields stay.
	d := Config{Iface: "x", BlockSize: 1 << 16, BlockCount: 3, FrameSize: 256, BlockTimeout: time.Second, Fanout: FanoutLB}
	if d.WithDefaults().BlockSize != d.BlockSize || d.WithDefaults().Fanout != FanoutLB {
		t.Fatal("WithDefaults changed a set field")
	}
}

// TestConfigValidate checks that each setting out of range is
// refused with a message that names the setting, the value and the rule,
// and that Validate reports all of them at once.
func TestConfigValidate(t *testing.T) {
	ok := Config{Iface: "eth0"}.WithDefaults()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string // every one must be in the error; none: valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"no iface", func(c *Config) { c.Iface = "" }, []string{"iface", "no interface named"}},
		{"long iface", func(c *Config) { c.Iface = "abcdefghijklmnop" }, []string{"iface", `"abcdefghijklmnop" is 16 bytes`}},
		{"block not power of two", func(c *Config) { c.BlockSize = 3 << 12 }, []string{"block-size", "must be a power of two from"}},
		{"block too small", func(c *Config) { c.BlockSize = 2048; c.FrameSize = 128 }, []string{"block-size", "must be a power of two from"}},
		{"block too big", func(c *Config) { c.BlockSize = 512 << 20 }, []string{"block-size", "must be a power of two from"}},
		{"block not whole pages", func(c *Config) { c.BlockSize = 1000 }, []string{"block-size", "1000 must be a power of two"}},
		{"negative count", func(c *Config) { c.BlockCount = -1 }, []string{"block-count", "-1 must be", "65536"}},
		{"ring too big", func(c *Config) { c.BlockSize = 256 << 20; c.BlockCount = 32 },
			[]string{"block-count", "block-size × block-count must be at most"}},
		{"frame unaligned", func(c *Config) { c.FrameSize = 2004 }, []string{"frame-size", "2004 must be a multiple of 16 from 128 to block-size"}},
		{"frame small", func(c *Config) { c.FrameSize = 64 }, []string{"frame-size", "64 must be a multiple of 16 from 128"}},
		{"frame above block", func(c *Config) { c.BlockSize = 4096; c.FrameSize = 8192 }, []string{"frame-size", "must be a multiple of 16 from 128 to block-size"}},
		{"timeout short", func(c *Config) { c.BlockTimeout = time.Microsecond }, []string{"block-timeout", "1µs must be", "1ms", "10s"}},
		{"timeout long", func(c *Config) { c.BlockTimeout = time.Minute }, []string{"block-timeout", "1m0s must be", "1ms", "10s"}},
		{"fanout", func(c *Config) { c.Fanout = "rr" }, []string{"fanout", `"rr" must be hash, cpu or lb`}},
		{"filter", func(c *Config) { c.Filter = []capture.SockFilter{{Code: 0x28, K: 12}} }, []string{"filter", "the last instruction (code 40) is not a return"}},
		{"long filter", func(c *Config) { c.Filter = make([]capture.SockFilter, capture.MaxBPFInsns+1) }, []string{"filter", "4097 instructions, more than 4096"}},
		{"all at once", func(c *Config) {
			c.Iface, c.BlockSize, c.BlockCount, c.FrameSize, c.BlockTimeout, c.Fanout = "", 5000, 1<<17, 7, -1, "x"
		}, []string{"iface", "block-size", "5000", "block-count", "131072", "frame-size", "7 must", "block-timeout", "-1ns", `fanout`, `"x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid config refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%+v accepted", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// One *conferr.Error a setting, in the fields' order, written "key: msg".
	all := Config{BlockSize: 5000, BlockCount: 1 << 17, FrameSize: 7, BlockTimeout: -1, Fanout: "x", Filter: []capture.SockFilter{{Code: 0x28}}}
	err := all.Validate()
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		se, ok := e.(*conferr.Error)
		if !ok {
			t.Fatalf("%v (%T) is not a *conferr.Error", e, e)
		}
		if se.Error() != se.Key+": "+se.Msg {
			t.Errorf("%+v is written %q", se, se.Error())
		}
		if se.Key == "filter" && !errors.Is(se, capture.ErrBPF) {
			t.Errorf("a bad filter's error %v does not wrap capture.ErrBPF", se)
		}
		keys = append(keys, se.Key)
	}
	if want := []string{"iface", "block-size", "block-count", "frame-size", "block-timeout", "fanout", "filter"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if !errors.Is(err, capture.ErrBPF) {
		t.Errorf("%v does not wrap capture.ErrBPF", err)
	}
	if err := validWorkers(0); err == nil || !strings.Contains(err.Error(), "workers 0 must be from 1 to 256") {
		t.Errorf("workers 0: %v", err)
	}
	if err := validWorkers(257); err == nil {
		t.Error("workers 257 accepted")
	}
}
