package capture

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// Filter keeps the frames a classic BPF program accepts, run in user
// space on each frame as the file holds it, link header and all: what
// the kernel does with the same program attached to a socket
// (afpacket.Config.Filter), and what tcpdump -r FILE EXPR keeps. A frame
// the program returns 0 for, or reads past the end of, is left out.
// golang.org/x/net/bpf's interpreter runs it: it allocates nothing a
// frame, and it is the Go project's own.
type Filter struct {
	vm *bpf.VM
}

// NewFilter makes a Filter of prog (ParseBPF, or pcaplive.CompileBPF in a
// build with -tags pcap). A program the interpreter cannot run (an ancillary
// load other than the frame's length) is refused, wrapping ErrBPF.
func NewFilter(prog []SockFilter) (*Filter, error) {
	if err := CheckBPF(prog); err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	raw := make([]bpf.RawInstruction, len(prog))
	for i, in := range prog {
		raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		return nil, fmt.Errorf("filter: a program with instructions run only by the kernel: %w", ErrBPF)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		return nil, fmt.Errorf("filter: %v: %w", err, ErrBPF)
	}
	return &Filter{vm: vm}, nil
}

// Keep says whether the program accepts frame.
func (f *Filter) Keep(frame []byte) bool {
	n, err := f.vm.Run(frame)
	return err == nil && n > 0
}
