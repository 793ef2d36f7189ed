//go:build linux

package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The clsact attach, for kernels without TCX (before 6.6): a clsact qdisc
// on the interface and one bpf filter in direct-action mode at each of
// its ingress and egress hooks, made with rtnetlink messages written
// here. The messages are three (a qdisc, a filter, their deletions) of
// fixed shape, which a netlink library would add a dependency for.
//
// Unlike a TCX link, a filter is not tied to the process: the kernel
// keeps it, and the program it holds, until it is deleted. Close deletes
// the filters, and the qdisc if the attach made it. A process killed
// before its Close leaves its filters; the next attach on the interface
// replaces them, since they have the same priority and handle.

// Values of <linux/pkt_sched.h> and <linux/pkt_cls.h> that x/sys/unix
// does not define.
const (
	tcHClsact     = 0xFFFFFFF1 // TC_H_CLSACT: the clsact qdisc's parent
	tcHClsactRoot = 0xFFFF0000 // TC_H_MAKE(TC_H_CLSACT, 0): its handle
	tcHIngress    = 0xFFFFFFF2 // TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)
	tcHEgress     = 0xFFFFFFF3 // TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS)

	tcaBPFFD        = 6 // TCA_BPF_FD
	tcaBPFName      = 7 // TCA_BPF_NAME
	tcaBPFFlags     = 8 // TCA_BPF_FLAGS
	tcaBPFActDirect = 1 // TCA_BPF_FLAG_ACT_DIRECT: the program's return is the verdict

	sizeofTcMsg = 20 // struct tcmsg
)

// The filters' priority and handle. Priority 1 runs the program before
// any filter that ends classification with a verdict, so it sees every
// packet; it returns TC_ACT_UNSPEC, so the filters after it still run.
// The handle is fixed, so that an attach replaces the filters of a flowmon
// that died without detaching, and unlike another tool's (tc's own count
// from 1).
const (
	clsactPrio   = 1
	clsactHandle = 0xF10A
)

// tcMsg is struct tcmsg.
type tcMsg struct {
	ifindex int32
	handle  uint32
	parent  uint32
	info    uint32
}

// clsactFilters is the program at a clsact qdisc's ingress and egress:
// Close deletes what the attach made. The netlink socket stays open until
// then, so the deletion happens in the network namespace of the attach
// whatever thread calls Close.
type clsactFilters struct {
	nl      int
	ifindex int
	parents []uint32 // hooks with our filter
	qdisc   bool     // the attach made the qdisc
	seq     atomic.Uint32
}

// filterInfo is a filter's tcm_info: its priority, and the protocol it
// sees (ETH_P_ALL, in network byte order).
const filterInfo = clsactPrio<<16 | 0x0300

// attachClsact adds a clsact qdisc to the interface with index ifindex if
// it has none, and a bpf filter of each program at its hook.
func attachClsact(ifindex int, progs []clsactProg) (*clsactFilters, error) {
	nl, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open a netlink socket: %w", err)
	}
	if err := unix.Bind(nl, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(nl)
		return nil, fmt.Errorf("bind a netlink socket: %w", err)
	}
	f := &clsactFilters{nl: nl, ifindex: ifindex}
	err = f.request(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_EXCL,
		tcMsg{ifindex: int32(ifindex), handle: tcHClsactRoot, parent: tcHClsact}, attrString(nil, unix.TCA_KIND, "clsact"))
	switch {
	case err == nil:
		f.qdisc = true
	case errors.Is(err, unix.EEXIST): // someone's clsact: share it
	default:
		unix.Close(nl)
		return nil, fmt.Errorf("add a clsact qdisc: %w", err)
	}
	for _, p := range progs {
		var opts []byte
		opts = attrU32(opts, tcaBPFFD, uint32(p.fd))
		opts = attrString(opts, tcaBPFName, p.name)
		opts = attrU32(opts, tcaBPFFlags, tcaBPFActDirect)
		attrs := attrString(nil, unix.TCA_KIND, "bpf")
		attrs = attr(attrs, unix.TCA_OPTIONS, opts)
		err := f.request(unix.RTM_NEWTFILTER, unix.NLM_F_CREATE|unix.NLM_F_REPLACE,
			tcMsg{ifindex: int32(ifindex), handle: clsactHandle, parent: p.parent, info: filterInfo}, attrs)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("add a bpf filter at clsact %s: %w", p.hook, err)
		}
		f.parents = append(f.parents, p.parent)
	}
	return f, nil
}

// clsactProg is a program for a clsact hook.
type clsactProg struct {
	fd     int
	name   string
	parent uint32 // tcHIngress or tcHEgress
	hook   string
}

// Close deletes the filters, then the qdisc if the attach made it.
func (f *clsactFilters) Close() error {
	var errs []error
	for _, parent := range f.parents {
		err := f.request(unix.RTM_DELTFILTER, 0,
			tcMsg{ifindex: int32(f.ifindex), handle: clsactHandle, parent: parent, info: filterInfo}, attrString(nil, unix.TCA_KIND, "bpf"))
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete the clsact bpf filter: %w", err))
		}
	}
	f.parents = nil
	if f.qdisc {
		err := f.request(unix.RTM_DELQDISC, 0, tcMsg{ifindex: int32(f.ifindex), handle: tcHClsactRoot, parent: tcHClsact}, nil)
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("delete the clsact qdisc: %w", err))
		}
		f.qdisc = false
	}
	if f.nl >= 0 {
		errs = append(errs, unix.Close(f.nl))
		f.nl = -1
	}
	return errors.Join(errs...)
}

// request sends one rtnetlink request and waits for its acknowledgement.
func (f *clsactFilters) request(typ, flags uint16, tm tcMsg, attrs []byte) error {
	seq := f.seq.Add(1)
	n := unix.SizeofNlMsghdr + sizeofTcMsg + len(attrs)
	b := make([]byte, n)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(n))
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], flags|unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(b[8:], seq)
	t := b[unix.SizeofNlMsghdr:]
	t[0] = unix.AF_UNSPEC
	ne.PutUint32(t[4:], uint32(tm.ifindex))
	ne.PutUint32(t[8:], tm.handle)
	ne.PutUint32(t[12:], tm.parent)
	ne.PutUint32(t[16:], tm.info)
	copy(t[sizeofTcMsg:], attrs)
	if err := unix.Sendto(f.nl, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	for {
		m, _, err := unix.Recvfrom(f.nl, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:m])
		if err != nil {
			return err
		}
		for _, msg := range msgs {
			if msg.Header.Seq != seq || msg.Header.Type != unix.NLMSG_ERROR {
				continue
			}
			if len(msg.Data) < 4 {
				return errors.New("short netlink acknowledgement")
			}
			if code := int32(ne.Uint32(msg.Data)); code != 0 {
				return unix.Errno(-code)
			}
			return nil
		}
	}
}

// attr appends a netlink attribute, padded to 4 bytes.
func attr(b []byte, typ uint16, data []byte) []byte {
	l := unix.SizeofNlAttr + len(data)
	var h [unix.SizeofNlAttr]byte
	binary.NativeEndian.PutUint16(h[0:], uint16(l))
	binary.NativeEndian.PutUint16(h[2:], typ)
	b = append(b, h[:]...)
	b = append(b, data...)
	for l%4 != 0 {
		b = append(b, 0)
		l++
	}
	return b
}

func attrString(b []byte, typ uint16, s string) []byte {
	return attr(b, typ, append([]byte(s), 0))
}

func attrU32(b []byte, typ uint16, v uint32) []byte {
	return attr(b, typ, binary.NativeEndian.AppendUint32(nil, v))
}
