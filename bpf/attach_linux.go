//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// hooks attaches programs at XDP and TC and keeps what attaches them
// (bpf_links, clsact filters) until detach: the capture program
// (Objects) and the flow state's live programs (State) attach the same
// way. Its methods are safe for concurrent use.
type hooks struct {
	mu    sync.Mutex
	links []io.Closer
}

// tcProgs are the programs for TC ingress and egress, and the names
// their clsact filters take.
type tcProgs struct {
	ingress, egress         *ebpf.Program
	ingressName, egressName string
}

func (h *hooks) add(ls ...io.Closer) {
	h.mu.Lock()
	h.links = append(h.links, ls...)
	h.mu.Unlock()
}

// attachXDP attaches prog at XDP on the interface with index ifindex, in
// mode (XDPAuto, XDPDriver or XDPGeneric), and returns the mode it got.
func (h *hooks) attachXDP(prog *ebpf.Program, ifindex int, mode string) (string, error) {
	try := func(flags link.XDPAttachFlags) error {
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: flags})
		if err != nil {
			return errPerm(err)
		}
		h.add(l)
		return nil
	}
	switch mode {
	case XDPDriver:
		if err := try(link.XDPDriverMode); err != nil {
			return "", fmt.Errorf("attach XDP in driver mode: %w", err)
		}
		return XDPDriver, nil
	case XDPGeneric:
		if err := try(link.XDPGenericMode); err != nil {
			return "", fmt.Errorf("attach XDP in generic mode: %w", err)
		}
		return XDPGeneric, nil
	case XDPAuto, "":
		derr := try(link.XDPDriverMode)
		if derr == nil {
			return XDPDriver, nil
		}
		if err := try(link.XDPGenericMode); err != nil {
			return "", fmt.Errorf("attach XDP: driver mode: %v; generic mode: %w", derr, err)
		}
		return XDPGeneric, nil
	}
	return "", fmt.Errorf("attach XDP: mode %q must be %s, %s or %s", mode, XDPAuto, XDPDriver, XDPGeneric)
}

// attachTC attaches p at TC ingress and egress of the interface with
// index ifindex, in mode (TCAuto, TCX or TCClsact), and returns the mode
// it got. TCAuto takes TCX unless cilium/ebpf finds the kernel without it
// (ebpf.ErrNotSupported), and then a clsact qdisc's filters
// (clsact_linux.go); any other failure of TCX is the error.
func (h *hooks) attachTC(p tcProgs, ifindex int, mode string) (string, error) {
	switch mode {
	case TCX:
		if err := h.attachTCX(p, ifindex); err != nil {
			return "", err
		}
		return TCX, nil
	case TCClsact:
		if err := h.attachClsact(p, ifindex); err != nil {
			return "", err
		}
		return TCClsact, nil
	case TCAuto, "":
		err := h.attachTCX(p, ifindex)
		if err == nil {
			return TCX, nil
		}
		if !errors.Is(err, ebpf.ErrNotSupported) {
			return "", err
		}
		if cerr := h.attachClsact(p, ifindex); cerr != nil {
			return "", fmt.Errorf("attach TC: TCX: %v; clsact: %w", err, cerr)
		}
		return TCClsact, nil
	}
	return "", fmt.Errorf("attach TC: mode %q must be %s, %s or %s", mode, TCAuto, TCX, TCClsact)
}

func (h *hooks) attachTCX(p tcProgs, ifindex int) error {
	var ls []io.Closer
	for _, at := range []struct {
		prog *ebpf.Program
		typ  ebpf.AttachType
		name string
	}{{p.ingress, ebpf.AttachTCXIngress, "ingress"}, {p.egress, ebpf.AttachTCXEgress, "egress"}} {
		l, err := link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: at.prog, Attach: at.typ})
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return fmt.Errorf("attach TCX %s: %w", at.name, errPerm(err))
		}
		ls = append(ls, l)
	}
	h.add(ls...)
	return nil
}

func (h *hooks) attachClsact(p tcProgs, ifindex int) error {
	f, err := attachClsact(ifindex, []clsactProg{
		{fd: p.ingress.FD(), name: p.ingressName, parent: tcHIngress, hook: "ingress"},
		{fd: p.egress.FD(), name: p.egressName, parent: tcHEgress, hook: "egress"},
	})
	if err != nil {
		return fmt.Errorf("attach TC (clsact): %w", errPerm(err))
	}
	h.add(f)
	return nil
}

// detach removes every attach.
func (h *hooks) detach() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, l := range h.links {
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach: %w", err))
		}
	}
	h.links = nil
	return errors.Join(errs...)
}
