package capture_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/capturetest"
)

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1000: "1000", 1536: "1536", 4096: "4KiB", 1 << 20: "1MiB",
		3 << 30: "3GiB", 3 << 40: "3TiB", -4096: "-4KiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestParseBPF(t *testing.T) {
	prog, err := ParseBPF(capturetest.BPFTCP)
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
	f.Add(capturetest.BPFTCP)
	f.Add("4,48 0 0 9,21 0 1 6,6 0 0 1,6 0 0 0")
	f.Fuzz(func(t *testing.T, s string) {
		prog, err := ParseBPF(s)
		if err != nil {
			if !errors.Is(err, ErrBPF) {
				t.Fatalf("error %v is not ErrBPF", err)
			}
			return
		}
		if CheckBPF(prog) != nil || len(prog) == 0 || len(prog) > MaxBPFInsns {
			t.Fatalf("accepted a program CheckBPF refuses: %v", prog)
		}
	})
}
