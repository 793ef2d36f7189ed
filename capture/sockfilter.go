package capture

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Classic BPF programs: the filter a replay runs on each frame (Filter)
// and the one an AF_PACKET socket has the kernel run (afpacket.Config's
// Filter), read from tcpdump -ddd's output (ParseBPF) or compiled by
// libpcap (pcaplive.CompileBPF).

// ErrBPF is wrapped by the errors of ParseBPF and of a filter Validate
// rejects.
var ErrBPF = errors.New("bad BPF program")

// MaxBPFInsns is the most instructions a classic BPF program may have
// (the kernel's BPF_MAXINSNS).
const MaxBPFInsns = 4096

// Classic BPF instruction classes and the jump operation CheckBPF reads.
const (
	bpfClassMask = 0x07
	bpfJMP       = 0x05
	bpfRET       = 0x06
	bpfOpMask    = 0xf0
	bpfJA        = 0x00
)

// ParseBPF reads a classic BPF program as `tcpdump -ddd EXPR` prints it:
// the instruction count, then one instruction a line, "code jt jf k" in
// decimal. Commas may stand for the newlines, as in the one-line form
// iptables' bpf match takes ("4,48 0 0 9,21 0 1 6,6 0 0 1,6 0 0 0").
// So a filter can be given without libpcap. The program is checked as
// far as the kernel would refuse it: the count matches, every jump lands
// inside the program, and it ends with a return.
func ParseBPF(s string) ([]SockFilter, error) {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ',' || r == ';' })
	var fields [][]string
	var lineNo []int
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			fields = append(fields, f)
			lineNo = append(lineNo, i+1)
		}
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("parse BPF: empty program: %w", ErrBPF)
	}
	if len(fields[0]) != 1 {
		return nil, fmt.Errorf("parse BPF: line 1: want the instruction count (tcpdump -ddd output), have %q: %w",
			strings.Join(fields[0], " "), ErrBPF)
	}
	n, err := strconv.ParseUint(fields[0][0], 10, 16)
	if err != nil || n == 0 || n > MaxBPFInsns {
		return nil, fmt.Errorf("parse BPF: line 1: instruction count %q must be from 1 to %d: %w", fields[0][0], MaxBPFInsns, ErrBPF)
	}
	if got := len(fields) - 1; got != int(n) {
		return nil, fmt.Errorf("parse BPF: count %d, but %d instructions follow: %w", n, got, ErrBPF)
	}
	prog := make([]SockFilter, n)
	for i, f := range fields[1:] {
		if len(f) != 4 {
			return nil, fmt.Errorf("parse BPF: line %d: want \"code jt jf k\", have %q: %w", lineNo[i+1], strings.Join(f, " "), ErrBPF)
		}
		var v [4]uint64
		for j, bits := range [4]int{16, 8, 8, 32} {
			if v[j], err = strconv.ParseUint(f[j], 10, bits); err != nil {
				return nil, fmt.Errorf("parse BPF: line %d: %s %q is not a %d-bit unsigned number: %w",
					lineNo[i+1], [4]string{"code", "jt", "jf", "k"}[j], f[j], bits, ErrBPF)
			}
		}
		prog[i] = SockFilter{Code: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])}
	}
	if err := CheckBPF(prog); err != nil {
		return nil, fmt.Errorf("parse BPF: %w", err)
	}
	return prog, nil
}

// CheckBPF checks that prog has instructions, that every jump lands
// inside it and that it ends with a return; the kernel checks the rest
// when it is attached. Its errors wrap ErrBPF.
func CheckBPF(prog []SockFilter) error {
	n := len(prog)
	if n == 0 {
		return fmt.Errorf("empty program: %w", ErrBPF)
	}
	for i, in := range prog {
		if in.Code&bpfClassMask != bpfJMP {
			continue
		}
		if in.Code&bpfOpMask == bpfJA {
			if uint64(i)+1+uint64(in.K) >= uint64(n) {
				return fmt.Errorf("instruction %d jumps %d past the end of %d: %w", i, in.K, n, ErrBPF)
			}
			continue
		}
		if i+1+int(max(in.Jt, in.Jf)) >= n {
			return fmt.Errorf("instruction %d jumps %d past the end of %d: %w", i, max(in.Jt, in.Jf), n, ErrBPF)
		}
	}
	if prog[n-1].Code&bpfClassMask != bpfRET {
		return fmt.Errorf("the last instruction (code %d) is not a return: %w", prog[n-1].Code, ErrBPF)
	}
	return nil
}
