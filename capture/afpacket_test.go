package capture

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/conferr"
)

// BPFTCP is `tcpdump -ddd -i lo tcp` (tcpdump 4.99, libpcap 1.10.3, an
// Ethernet link): IPv4 or IPv6 (also behind one IPv6 fragment header)
// with protocol 6 keeps 262144 bytes, anything else 0. Exported for the
// capture_test package's live tests (a test file's, not the package's).
const BPFTCP = `12
40 0 0 12
21 0 2 2048
48 0 0 23
21 6 7 6
21 0 6 34525
48 0 0 20
21 3 0 6
21 0 3 44
48 0 0 54
21 0 1 6
6 0 0 262144
6 0 0 0
`

func TestAFPacketConfigDefaults(t *testing.T) {
	c := AFPacketConfig{Iface: "eth0"}.WithDefaults()
	want := AFPacketConfig{Iface: "eth0", BlockSize: 1 << 20, BlockCount: 64, FrameSize: 2048,
		BlockTimeout: 10 * time.Millisecond, Fanout: FanoutHash}
	if c.BlockSize != want.BlockSize || c.BlockCount != want.BlockCount || c.FrameSize != want.FrameSize ||
		c.BlockTimeout != want.BlockTimeout || c.Fanout != want.Fanout {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	// Validate checks the fields as they are: zero is out of range.
	if err := (AFPacketConfig{Iface: "eth0"}).Validate(); err == nil || !strings.Contains(err.Error(), "block-count: 0 must be between 1 and 65536") {
		t.Errorf("zero fields: %v", err)
	}
	// Set fields stay.
	d := AFPacketConfig{Iface: "x", BlockSize: 1 << 16, BlockCount: 3, FrameSize: 256, BlockTimeout: time.Second, Fanout: FanoutLB}
	if d.WithDefaults().BlockSize != d.BlockSize || d.WithDefaults().Fanout != FanoutLB {
		t.Fatal("WithDefaults changed a set field")
	}
}

// TestAFPacketConfigValidate checks that each setting out of range is
// refused with a message that names the setting, the value and the rule,
// and that Validate reports all of them at once.
func TestAFPacketConfigValidate(t *testing.T) {
	ok := AFPacketConfig{Iface: "eth0"}.WithDefaults()
	for _, tc := range []struct {
		name string
		edit func(*AFPacketConfig)
		want []string // every one must be in the error; none: valid
	}{
		{"defaults", func(*AFPacketConfig) {}, nil},
		{"no iface", func(c *AFPacketConfig) { c.Iface = "" }, []string{"iface", "no interface named"}},
		{"long iface", func(c *AFPacketConfig) { c.Iface = "abcdefghijklmnop" }, []string{"iface", `"abcdefghijklmnop" is 16 bytes`}},
		{"block not power of two", func(c *AFPacketConfig) { c.BlockSize = 3 << 12 }, []string{"block-size", "must be a power of two from"}},
		{"block too small", func(c *AFPacketConfig) { c.BlockSize = 2048; c.FrameSize = 128 }, []string{"block-size", "must be a power of two from"}},
		{"block too big", func(c *AFPacketConfig) { c.BlockSize = 512 << 20 }, []string{"block-size", "must be a power of two from"}},
		{"block not whole pages", func(c *AFPacketConfig) { c.BlockSize = 1000 }, []string{"block-size", "1000 must be a power of two"}},
		{"negative count", func(c *AFPacketConfig) { c.BlockCount = -1 }, []string{"block-count", "-1 must be", "65536"}},
		{"ring too big", func(c *AFPacketConfig) { c.BlockSize = 256 << 20; c.BlockCount = 32 },
			[]string{"block-count", "block-size × block-count must be at most"}},
		{"frame unaligned", func(c *AFPacketConfig) { c.FrameSize = 2004 }, []string{"frame-size", "2004 must be a multiple of 16 from 128 to block-size"}},
		{"frame small", func(c *AFPacketConfig) { c.FrameSize = 64 }, []string{"frame-size", "64 must be a multiple of 16 from 128"}},
		{"frame above block", func(c *AFPacketConfig) { c.BlockSize = 4096; c.FrameSize = 8192 }, []string{"frame-size", "must be a multiple of 16 from 128 to block-size"}},
		{"timeout short", func(c *AFPacketConfig) { c.BlockTimeout = time.Microsecond }, []string{"block-timeout", "1µs must be", "1ms", "10s"}},
		{"timeout long", func(c *AFPacketConfig) { c.BlockTimeout = time.Minute }, []string{"block-timeout", "1m0s must be", "1ms", "10s"}},
		{"fanout", func(c *AFPacketConfig) { c.Fanout = "rr" }, []string{"fanout", `"rr" must be hash, cpu or lb`}},
		{"filter", func(c *AFPacketConfig) { c.Filter = []SockFilter{{Code: 0x28, K: 12}} }, []string{"filter", "the last instruction (code 40) is not a return"}},
		{"long filter", func(c *AFPacketConfig) { c.Filter = make([]SockFilter, bpfMaxInsns+1) }, []string{"filter", "4097 instructions, more than 4096"}},
		{"all at once", func(c *AFPacketConfig) {
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
	all := AFPacketConfig{BlockSize: 5000, BlockCount: 1 << 17, FrameSize: 7, BlockTimeout: -1, Fanout: "x", Filter: []SockFilter{{Code: 0x28}}}
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
		if se.Key == "filter" && !errors.Is(se, ErrBPF) {
			t.Errorf("a bad filter's error %v does not wrap ErrBPF", se)
		}
		keys = append(keys, se.Key)
	}
	if want := []string{"iface", "block-size", "block-count", "frame-size", "block-timeout", "fanout", "filter"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if !errors.Is(err, ErrBPF) {
		t.Errorf("%v does not wrap ErrBPF", err)
	}
	if err := validWorkers(0); err == nil || !strings.Contains(err.Error(), "workers 0 must be from 1 to 256") {
		t.Errorf("workers 0: %v", err)
	}
	if err := validWorkers(257); err == nil {
		t.Error("workers 257 accepted")
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1000: "1000", 1536: "1536", 4096: "4KiB", 1 << 20: "1MiB",
		3 << 30: "3GiB", 3 << 40: "3TiB", -4096: "-4KiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestParseBPF(t *testing.T) {
	prog, err := ParseBPF(BPFTCP)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) != 12 || prog[0] != (SockFilter{Code: 40, K: 12}) || prog[3] != (SockFilter{Code: 21, Jt: 6, Jf: 7, K: 6}) ||
		prog[10] != (SockFilter{Code: 6, K: 262144}) {
		t.Fatalf("parsed %v", prog)
	}
	// The one-line form of iptables' bpf match, spaces and CRLF around.
	one, err := ParseBPF(" 4,48 0 0 9,21 0 1 6,6 0 0 1,6 0 0 0\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 4 || one[1] != (SockFilter{Code: 21, Jt: 0, Jf: 1, K: 6}) {
		t.Fatalf("parsed %v", one)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "empty program"},
		{"  \n \n", "empty program"},
		{"40 0 0 12\n6 0 0 0", `line 1: want the instruction count (tcpdump -ddd output), have "40 0 0 12"`},
		{"0\n", `instruction count "0" must be from 1 to 4096`},
		{"5000\n6 0 0 0", `instruction count "5000"`},
		{"2\n6 0 0 0", "count 2, but 1 instructions follow"},
		{"1\n6 0 0 0\n6 0 0 0", "count 1, but 2 instructions follow"},
		{"1\n6 0 0", `line 2: want "code jt jf k", have "6 0 0"`},
		{"1\n6 0 0 x", `line 2: k "x" is not a 32-bit unsigned number`},
		{"1\n70000 0 0 0", `line 2: code "70000" is not a 16-bit unsigned number`},
		{"1\n6 256 0 0", `line 2: jt "256" is not a 8-bit unsigned number`},
		{"1\n6 0 0 4294967296", `k "4294967296"`},
		{"1\n6 0 0 -1", `k "-1"`},
		{"2\n21 1 0 6\n6 0 0 0", "instruction 0 jumps 1 past the end of 2"},
		{"2\n5 0 0 7\n6 0 0 0", "instruction 0 jumps 7 past the end of 2"},
		{"1\n40 0 0 12", "the last instruction (code 40) is not a return"},
	} {
		_, err := ParseBPF(tc.in)
		if err == nil {
			t.Errorf("ParseBPF(%q) accepted", tc.in)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBPF) {
			t.Errorf("ParseBPF(%q): %v, want %q wrapping ErrBPF", tc.in, err, tc.want)
		}
	}
}

func FuzzParseBPF(f *testing.F) {
	f.Add(BPFTCP)
	f.Add("4,48 0 0 9,21 0 1 6,6 0 0 1,6 0 0 0")
	f.Fuzz(func(t *testing.T, s string) {
		prog, err := ParseBPF(s)
		if err != nil {
			if !errors.Is(err, ErrBPF) {
				t.Fatalf("error %v is not ErrBPF", err)
			}
			return
		}
		if checkBPF(prog) != nil || len(prog) == 0 || len(prog) > bpfMaxInsns {
			t.Fatalf("accepted a program checkBPF refuses: %v", prog)
		}
	})
}
