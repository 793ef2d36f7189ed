package dedup

import "net/netip"

type netipAddr = netip.Addr

func mustParse(s string) netip.Addr { return netip.MustParseAddr(s) }
