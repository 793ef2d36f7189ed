package config

import (
	"strings"

	"github.com/flowmon/flowmon/capture"
)

// IsBPF reports whether a filter setting is a compiled program, tcpdump
// -ddd's output (digits, spaces, and line breaks, commas or semicolons
// between instructions), rather than a tcpdump expression. A program is
// read by capture.ParseBPF, an expression compiled by libpcap.
func IsBPF(filter string) bool {
	digits := false
	for _, r := range filter {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ',' || r == ';':
		default:
			return false
		}
	}
	return digits
}

// checkFilter says what is wrong with a filter setting: a compiled
// program is checked here, as the capture will read it; an expression
// when the capture compiles it (with libpcap).
func checkFilter(f string) string {
	if !IsBPF(f) {
		return ""
	}
	if _, err := capture.ParseBPF(f); err != nil {
		msg := strings.TrimPrefix(err.Error(), "parse BPF: ")
		return "tcpdump -ddd program: " + strings.TrimSuffix(msg, ": "+capture.ErrBPF.Error())
	}
	return ""
}
