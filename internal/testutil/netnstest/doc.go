// Package netnstest gives tests that run as root a network of their own:
// a network namespace holding one veth pair, both ends up, with no
// addresses and IPv6 off, so the kernel sends nothing on it by itself (no
// ARP, no router solicitation, no MLD report): every packet on the pair
// is one a test sent. Packets sent into one end (Net.Send, a pcap's
// frames as they are through an AF_PACKET socket; or Net.Tcpreplay)
// come out of the other, where a capture under test reads them.
//
// New skips the test, naming what is missing, only when the machine
// truly lacks it: root or the capabilities (CAP_SYS_ADMIN for the
// namespace, CAP_NET_ADMIN for the links, CAP_NET_RAW for the sockets),
// the ip command, or veth support in the kernel. Anything else that
// fails is a test failure. The namespace and its links are deleted when
// the test ends, failed or not.
//
// The namespace and the links are made with the ip command (iproute2)
// rather than netlink messages built here: a veth pair needs nested
// attributes (IFLA_LINKINFO, VETH_INFO_PEER), a named namespace needs
// ip's bind mount under /run/netns, and each step is then the line a
// person would type to look at a failing test's network (ip netns exec
// NAME ip -s link). Entering the namespace (Net.Do) is a setns(2) on a
// locked thread, so sockets opened there stay in it.
//
// The package is Linux's; elsewhere it is empty.
package netnstest
