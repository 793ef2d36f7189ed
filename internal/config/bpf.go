package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A BPFInstruction is one classic BPF instruction (Linux's struct
// sock_filter) as tcpdump -ddd prints it: "code jt jf k" in decimal.
type BPFInstruction struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// MaxBPFInstructions is the most instructions the kernel takes in one
// program (BPF_MAXINSNS).
const MaxBPFInstructions = 4096

// The parts of an instruction's code ParseBPF looks at.
const (
	bpfClass = 0x07
	bpfJmp   = 0x05
	bpfRet   = 0x06
	bpfOp    = 0xf0
	bpfJA    = 0x00
)

// IsBPF reports whether a filter setting is a compiled program, tcpdump
// -ddd's output (digits, spaces, commas and line breaks only), rather
// than a tcpdump expression.
func IsBPF(filter string) bool {
	digits := false
	for _, r := range filter {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ',':
		default:
			return false
		}
	}
	return digits
}

// ParseBPF reads a program as tcpdump -ddd prints it: the number of
// instructions, then one "code jt jf k" an instruction, separated by line
// breaks or commas (as iptables' bpf match takes it). It checks the
// count (1 to MaxBPFInstructions), each number's range, that every jump
// lands inside the program and that the last instruction returns; the
// kernel checks the opcodes when the program is attached.
func ParseBPF(s string) ([]BPFInstruction, error) {
	items := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ',' })
	var lines []string
	for _, it := range items {
		if t := strings.TrimSpace(it); t != "" {
			lines = append(lines, t)
		}
	}
	if len(lines) == 0 {
		return nil, errors.New("no instruction count")
	}
	n, err := strconv.Atoi(lines[0])
	if err != nil || n < 1 || n > MaxBPFInstructions {
		return nil, fmt.Errorf("instruction count %q must be between 1 and %d", lines[0], MaxBPFInstructions)
	}
	if len(lines)-1 != n {
		follow := fmt.Sprintf("%d instructions follow", len(lines)-1)
		if len(lines) == 2 {
			follow = "1 instruction follows"
		}
		return nil, fmt.Errorf("the count says %d, and %s", n, follow)
	}
	prog := make([]BPFInstruction, n)
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 4 {
			return nil, fmt.Errorf("instruction %d: want code jt jf k, got %q", i+1, l)
		}
		code, err1 := strconv.ParseUint(f[0], 10, 16)
		jt, err2 := strconv.ParseUint(f[1], 10, 8)
		jf, err3 := strconv.ParseUint(f[2], 10, 8)
		k, err4 := strconv.ParseUint(f[3], 10, 32)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("instruction %d: %q: code must be below 65536, jt and jf below 256, k below 2^32", i+1, l)
		}
		in := BPFInstruction{uint16(code), uint8(jt), uint8(jf), uint32(k)}
		if in.Code&bpfClass == bpfJmp {
			far := i + 1 + max(int(in.Jt), int(in.Jf))
			if in.Code&bpfOp == bpfJA {
				far = i + 1 + int(in.K)
				if in.K >= MaxBPFInstructions {
					far = n
				}
			}
			if far >= n {
				return nil, fmt.Errorf("instruction %d: %q jumps past the end of the program", i+1, l)
			}
		}
		prog[i] = in
	}
	if prog[n-1].Code&bpfClass != bpfRet {
		return nil, fmt.Errorf("the last instruction %q must return (class 6)", lines[n])
	}
	return prog, nil
}
