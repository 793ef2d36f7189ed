//go:build linux

package source

import (
	"errors"
	"fmt"
	"net"

	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/internal/ifacewatch"
)

// stateProgram is the kernel flow state's live programs as a source's
// program: the frames ring is its one ring, and its counts are the
// state's frames (Seen, Reasons) and the frames ring's (Emitted and Raw
// the frames handed up, Lost those the full ring refused).
type stateProgram struct{ st *bpf.State }

func (p stateProgram) AttachXDP(ifindex int, mode string) (string, error) {
	return p.st.AttachXDP(ifindex, mode)
}

func (p stateProgram) AttachTC(ifindex int, mode string) (string, error) {
	return p.st.AttachTC(ifindex, mode)
}

func (p stateProgram) Detach() error { return p.st.Detach() }

func (p stateProgram) SetTunnels(t bpf.Tunnels) error { return p.st.SetTunnels(t) }

func (p stateProgram) Counters(int) (bpf.Counters, error) {
	sc, err := p.st.Counters()
	if err != nil {
		return bpf.Counters{}, err
	}
	fc, err := p.st.FrameCounters()
	if err != nil {
		return bpf.Counters{}, err
	}
	return bpf.Counters{Seen: sc.Seen, Emitted: fc.Handed, Raw: fc.Handed, Lost: fc.Lost, Reasons: sc.Reasons}, nil
}

// Close detaches the programs: the state and its maps are its table's
// (pipeline/kernelflows), which reads the cells after the source closes.
func (p stateProgram) Close() error { return p.st.Detach() }

// OpenState attaches st, a kernel flow state loaded live
// (bpf.StateOptions.Live), to c.Iface at c.Hook (XDP in c.XDPMode; TC at
// ingress and egress in c.TCMode), and returns the source of the frames
// it leaves to user space: tunnels, fragments, the link layers and
// frames its parser leaves, each handed up whole and decoded here as a
// Ring decodes the tunnels the capture program hands up. The flows'
// packets stay in the kernel's cells, which st's table reads.
//
// One source serves every CPU: the frames are few, and one ring keeps a
// datagram's fragments and a tunnel's carriers on one shard without the
// program parsing a frame twice to choose a ring. Sampling and the
// pre-filter are the capture program's: c must leave them unset.
// Closing the source detaches the programs; st stays loaded.
func OpenState(c Config, st *bpf.State) (*Ring, error) {
	c = c.WithDefaults()
	err := c.Validate()
	if c.Sample > 1 || len(c.Prefixes) > 0 || len(c.Ports) > 0 {
		err = errors.Join(err, errors.New("sampling and the pre-filter (ebpf sample, cidrs, ports) do not work with the kernel flow state"))
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Hook, err)
	}
	fail := func(err error) (*Ring, error) {
		return nil, fmt.Errorf("open %s on %s: %w", c.Hook, c.Iface, err)
	}
	ifc, err := net.InterfaceByName(c.Iface)
	if err != nil {
		return fail(fmt.Errorf("no interface %q in this network namespace: %w", c.Iface, err))
	}
	prog := stateProgram{st}
	if err := prog.SetTunnels(TunnelsOf(defaultDecode)); err != nil {
		return fail(err)
	}
	sh := &shared{objs: prog, open: 1, sample: 1, c: c}
	if sh.w, err = ifacewatch.Open(c.Iface); err != nil {
		return fail(err)
	}
	rd, err := st.NewFrameReader()
	if err != nil {
		sh.w.Close()
		return fail(err)
	}
	r := newRing(sh, 0, rd, c.PollTimeout)
	// Attach last: no frame is handed up before the ring has a reader.
	if err := sh.attach(ifc.Index); err != nil {
		rd.Close()
		sh.w.Close()
		return fail(err)
	}
	return r, nil
}
