/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The frame parser the eBPF programs share (capture.c, flowstate.c):
 * capture.Decode of an Ethernet frame, the canonical key and its hash.
 * Offsets are u32 counts from the frame's start. Each header is checked
 * twice: against the logical end of its layer (the captured frame, or the
 * IP datagram's length, which drops Ethernet padding), as the Go decoder
 * checks its slices, and against data_end. In a frame of one buffer the
 * logical end never passes data_end, which only the verifier needs; in a
 * frame of several (an xdp.frags program's), pkt.len is the whole frame
 * and data_end the end of its linear part, so lengths (the payload's, the
 * datagram's) come from the headers and the frame, while a header past
 * the linear part reads as truncated. */
#ifndef FLOWMON_PARSE_H
#define FLOWMON_PARSE_H

#include "types.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define PAYLOAD_MAX 64     /* dedup.MaxPayloadBytes: the fingerprint's most */
#define MAX_OFF 0xff00     /* headers start below this: the verifier's bound on packet offsets */
#define MAX_LINK_HOPS 8    /* capture.maxLinkHops */
#define MAX_IPV6_HEADERS 16 /* capture.maxIPv6Header */
#define RAW_MAX 2048        /* the most of a frame handed up whole (bpf.RawMax) */

/* capture.Reason, in its order. */
enum reason {
	R_NONE = 0,
	R_LINK_TRUNCATED,
	R_LINK_UNSUPPORTED,
	R_IP_TRUNCATED,
	R_IP_VERSION,
	R_IP_HEADER_LENGTH,
	R_IP_TOTAL_LENGTH,
	R_IPV6_EXT_TRUNCATED,
	R_TRANSPORT_TRUNCATED,
	R_TCP_DATA_OFFSET,
	R_NOT_IP,
	R_COUNT,
};

/* record.reason of a frame handed up whole: the record is a header, the
 * frame's first bytes follow it, and user space decodes them (tunnels). */
#define R_RAW 0xff

/* capture.FragKind. */
enum frag { NOT_FRAGMENT = 0, FIRST_FRAGMENT, LATER_FRAGMENT };

/* One bit a port, and the tunnels found by their payload on any port
 * (DETECT_*). */
struct port_bits {
	__u64 w[1024];
	__u32 detect;
	__u32 pad;
};

#define DETECT_TEREDO 1 /* capture.DecodeOptions.DetectTeredo */
#define DETECT_AYIYA 2  /* capture.DecodeOptions.DetectAYIYA */

/* The UDP ports whose datagrams carry a tunnel (VXLAN, Geneve, GTP-U,
 * Teredo, AYIYA, GRE over UDP), and the tunnels detected by payload:
 * their frames go up whole. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_bits);
} tunnel_ports SEC(".maps");

/* The parser's result: what goes into the record, and where the addresses
 * and the payload are in the frame. */
struct parsed {
	__u32 seq, ack, ip_id, payload_len;
	__u16 ip_len, window, tcp_flags, ether_type;
	__u8 ttl, vlans, fragment, has_tcp;
	__u8 proto, v6;
	__u16 sport, dport;
	__u32 saddr, daddr; /* offsets of the addresses */
	__u32 poff, pcap;   /* the payload's offset and the bytes of it to copy */
	__u8 encap;         /* the frame carries a tunnel, which this parser leaves to user space */
};

struct pkt {
	void *data;
	void *end;
	__u32 len;           /* the frame's length: end - data, or more in a frame of several buffers */
	volatile __u32 *tmp; /* this CPU's scratch word: see forget */
};

/* A per-CPU word to pass offsets through: see forget. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} scratch SEC(".maps");

/* forget returns v as the verifier sees a value read from a map: any u32.
 * Offsets reached through different header chains (VLAN tags, MPLS labels,
 * IPv6 extension headers) are different constants or ranges, and the
 * verifier would check the rest of the parser once for each: past the
 * first, forgotten offsets make the states alike, so it prunes them. at()
 * bounds the offset again before any access. */
static __always_inline __u32 forget(struct pkt *k, __u32 v)
{
	*k->tmp = v;
	return *k->tmp;
}

/* at returns a pointer to n bytes at off, or NULL past the frame. */
static __always_inline void *at(struct pkt *k, __u32 off, __u32 n)
{
	if (off > MAX_OFF)
		return 0;
	void *p = k->data + off;
	/* The pointer checked is the pointer returned: clang would otherwise
	 * compute data + off again for the access, a pointer the verifier
	 * has not seen checked when off is forgotten. */
	asm volatile("" : "+r"(p));
	if (p + n > k->end)
		return 0;
	return p;
}

static __always_inline __u16 be16(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

static __always_inline __u32 be32(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

/* icmp_dport is capture.icmpPorts' destination port: the type of the
 * matching reply, or the code for messages that have none. */
static __always_inline __u16 icmp_dport(__u8 typ, __u8 code, int v6)
{
	if (!v6) {
		switch (typ) {
		case 8: return 0;
		case 0: return 8;
		case 10: return 9;
		case 9: return 10;
		case 13: return 14;
		case 14: return 13;
		case 15: return 16;
		case 16: return 15;
		case 17: return 18;
		case 18: return 17;
		}
		return code;
	}
	switch (typ) {
	case 128: return 129;
	case 129: return 128;
	case 130: return 131;
	case 131: return 130;
	case 133: return 134;
	case 134: return 133;
	case 135: return 136;
	case 136: return 135;
	}
	return code;
}

static __always_inline int teredo_addr(const __u8 *a)
{
	return a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0;
}

/* looks_teredo is capture.looksTeredo (Zeek's Teredo detection) for the
 * UDP payload of n bytes at off: an IPv6 header with a Teredo
 * (2001:0::/32) address, or authentication and origin indication headers
 * followed by an IPv6 header. */
static __always_inline int looks_teredo(struct pkt *k, __u32 off, __u32 n)
{
	__u8 *b;
	__u8 val;

	if (n < 40)
		return 0;
	b = at(k, off, 40);
	if (!b || (b[0] >> 4 != 6 && (b[0] != 0 || b[1] > 1)))
		return 0;
	if (b[0] >> 4 == 6 && (teredo_addr(b + 8) || teredo_addr(b + 24)))
		return 1;
	val = b[1];
	if (val == 1) {
		__u32 skip = 13 + (__u32)b[2] + (__u32)b[3];
		if (n < skip + 40)
			return 0;
		off += skip;
		n -= skip;
	}
	/* One read at the final offset: a second bounds check of an offset
	 * clang computes again is one the verifier cannot follow. */
	b = at(k, off, 9);
	if (!b)
		return 0;
	if (val == 1)
		val = b[0] == 0 && b[1] == 0 ? 0 : 0xff;
	return val == 0 && n >= 48 && b[8] >> 4 == 6;
}

/* udp_tunnel is capture.udpTunnel's answer, tunnel or not, for a UDP
 * datagram with these ports whose payload of n bytes (captured, within
 * the IP length) starts at off: either port one of tunnel_ports', else
 * AYIYA or Teredo found by their payload where detection is on. */
static __always_inline int udp_tunnel(struct pkt *k, __u16 sport, __u16 dport, __u32 off, __u32 n)
{
	__u32 zero = 0;
	struct port_bits *pb = bpf_map_lookup_elem(&tunnel_ports, &zero);
	__u8 *b;

	if (!pb)
		return 0;
	if ((pb->w[(sport >> 6) & 1023] >> (sport & 63)) & 1 || (pb->w[(dport >> 6) & 1023] >> (dport & 63)) & 1)
		return 1;
	if (!pb->detect || n == 0)
		return 0;
	if (pb->detect & DETECT_AYIYA && n >= 3) {
		b = at(k, off, 3);
		if (b && b[1] == 0x52 && b[2] == 0x11)
			return 1;
	}
	return pb->detect & DETECT_TEREDO && looks_teredo(k, off, n);
}

/* transport is capture.decodeTransport for the segment [off, end) whose
 * length by the IP header is plen. */
static __always_inline int transport(struct pkt *k, struct parsed *p, __u32 off, __u32 end, __s32 plen)
{
	__u32 avail = end > off ? end - off : 0;
	__u32 hdr = 0;
	__u8 *b;

	switch (p->proto) {
	case 6: /* TCP */
		if (avail < 14)
			return R_TRANSPORT_TRUNCATED;
		b = at(k, off, 14);
		if (!b)
			return R_TRANSPORT_TRUNCATED;
		p->sport = be16(b);
		p->dport = be16(b + 2);
		hdr = (b[12] >> 4) * 4;
		if (hdr < 20)
			return R_TCP_DATA_OFFSET;
		p->has_tcp = 1;
		p->seq = be32(b + 4);
		p->ack = be32(b + 8);
		p->tcp_flags = b[13] | ((__u16)(b[12] & 1) << 8);
		if (avail >= 16) {
			b = at(k, off, 16);
			if (b)
				p->window = be16(b + 14);
		}
		break;
	case 17:  /* UDP */
	case 132: /* SCTP */
	case 136: /* UDP-Lite */
	case 33:  /* DCCP */
		if (avail < 4)
			return R_TRANSPORT_TRUNCATED;
		b = at(k, off, 4);
		if (!b)
			return R_TRANSPORT_TRUNCATED;
		p->sport = be16(b);
		p->dport = be16(b + 2);
		hdr = p->proto == 132 ? 12 : 8;
		if (p->proto == 17 && plen > 8 && avail > 8 &&
		    udp_tunnel(k, p->sport, p->dport, off + 8, (avail < (__u32)plen ? avail : (__u32)plen) - 8))
			p->encap = 1;
		break;
	case 4:  /* IP in IP (and 4in6) */
	case 41: /* IPv6 in IP (6in4, 6in6) */
	case 47: /* GRE */
		p->encap = 1;
		break;
	case 1:  /* ICMP */
	case 58: /* ICMPv6 */
		if (avail < 2)
			return R_TRANSPORT_TRUNCATED;
		b = at(k, off, 2);
		if (!b)
			return R_TRANSPORT_TRUNCATED;
		p->sport = b[0];
		p->dport = icmp_dport(b[0], b[1], p->proto == 58);
		hdr = 8;
		break;
	}
	if (plen > (__s32)hdr) {
		p->payload_len = plen - hdr;
		if (avail > hdr) {
			p->poff = off + hdr;
			p->pcap = avail - hdr;
		}
	}
	return R_NONE;
}

/* key_only is capture.finishKeyOnly: a non-first fragment, keyed on its
 * addresses and protocol. */
static __always_inline int key_only(struct parsed *p, __u32 off, __u32 end, __s32 plen)
{
	if (plen > 0)
		p->payload_len = plen;
	p->poff = off;
	p->pcap = end > off ? end - off : 0;
	return R_NONE;
}

static __always_inline int ipv4(struct pkt *k, struct parsed *p, __u32 off)
{
	__u32 avail = k->len > off ? k->len - off : 0;
	__u8 *b;

	p->ether_type = 0x0800;
	if (avail < 20)
		return R_IP_TRUNCATED;
	b = at(k, off, 20);
	if (!b)
		return R_IP_TRUNCATED;
	if (b[0] >> 4 != 4)
		return R_IP_VERSION;
	__u32 hl = (b[0] & 0x0f) * 4;
	if (hl < 20)
		return R_IP_HEADER_LENGTH;
	if (avail < hl)
		return R_IP_TRUNCATED;
	__u32 total = be16(b + 2);
	if (total == 0)
		total = avail; /* TSO: the length was left for the NIC */
	if (total < hl)
		return R_IP_TOTAL_LENGTH;
	p->ip_len = total;
	p->ip_id = be16(b + 4);
	p->ttl = b[8];
	p->proto = b[9];
	p->saddr = off + 12;
	p->daddr = off + 16;
	__u16 frag = be16(b + 6);
	__u32 end = off + (avail < total ? avail : total);
	if (frag & 0x1fff) {
		p->fragment = LATER_FRAGMENT;
		return key_only(p, off + hl, end, total - hl);
	}
	if (frag & 0x2000)
		p->fragment = FIRST_FRAGMENT;
	if (p->proto == 51) {
		/* IPsec AH: the Go decoder skips it and takes what follows
		 * (a transport, or IP in IP); the frame goes up whole. */
		p->encap = 1;
		return key_only(p, off + hl, end, total - hl);
	}
	return transport(k, p, off + hl, end, total - hl);
}

static __always_inline int ipv6(struct pkt *k, struct parsed *p, __u32 off)
{
	__u32 avail = k->len > off ? k->len - off : 0;
	__u8 *b;

	p->ether_type = 0x86dd;
	p->v6 = 1;
	if (avail < 40)
		return R_IP_TRUNCATED;
	b = at(k, off, 40);
	if (!b)
		return R_IP_TRUNCATED;
	if (b[0] >> 4 != 6)
		return R_IP_VERSION;
	__u32 plen = be16(b + 4);
	if (plen == 0)
		plen = avail - 40; /* jumbogram or offloaded length */
	p->ip_len = plen + 40 < 0xffff ? plen + 40 : 0xffff;
	p->ttl = b[7];
	p->saddr = off + 8;
	p->daddr = off + 24;
	__u8 next = b[6];
	__u32 end = off + (avail < 40 + plen ? avail : 40 + plen);
	__s32 left = plen;
	off += 40;

	for (int i = 0; i < MAX_IPV6_HEADERS; i++) {
		off = forget(k, off);
		__u32 rest = end > off ? end - off : 0;
		__u32 hl;
		switch (next) {
		case 0:   /* hop-by-hop */
		case 43:  /* routing */
		case 60:  /* destination options */
		case 135: /* mobility */
		case 139: /* HIP */
		case 140: /* shim6 */
			if (rest < 2)
				return R_IPV6_EXT_TRUNCATED;
			b = at(k, off, 2);
			if (!b)
				return R_IPV6_EXT_TRUNCATED;
			hl = ((__u32)b[1] + 1) * 8;
			break;
		case 51: /* AH */
			if (rest < 2)
				return R_IPV6_EXT_TRUNCATED;
			b = at(k, off, 2);
			if (!b)
				return R_IPV6_EXT_TRUNCATED;
			hl = ((__u32)b[1] + 2) * 4;
			break;
		case 44: /* fragment */
			if (rest < 8)
				return R_IPV6_EXT_TRUNCATED;
			b = at(k, off, 8);
			if (!b)
				return R_IPV6_EXT_TRUNCATED;
			__u16 fo = be16(b + 2);
			p->ip_id = be32(b + 4);
			next = b[0];
			off += 8;
			left -= 8;
			if (fo >> 3) {
				p->fragment = LATER_FRAGMENT;
				p->proto = next;
				return key_only(p, off, end, left);
			}
			if (fo & 1)
				p->fragment = FIRST_FRAGMENT;
			continue;
		default:
			p->proto = next;
			return transport(k, p, off, end, left);
		}
		if (rest < hl)
			return R_IPV6_EXT_TRUNCATED;
		next = b[0];
		off += hl;
		left -= hl;
	}
	return R_IPV6_EXT_TRUNCATED;
}

/* parse is capture.Decode of an Ethernet frame. vlans is the count of
 * tags the kernel has already taken out of the frame (TC). */
static __always_inline int parse(struct pkt *k, struct parsed *p)
{
	__u8 *b = at(k, 0, 14);
	if (!b)
		return R_LINK_TRUNCATED;
	__u16 et = be16(b + 12);
	__u32 off = 14;
	int version = 0; /* 4 or 6: the header the link layer names; 0: by its version nibble */

	for (int i = 0; i < MAX_LINK_HOPS; i++) {
		/* Hops of four lengths would give the verifier an offset of
		 * each sum to check the rest with: forgotten, one. */
		off = forget(k, off);
		switch (et) {
		case 0x0800:
			version = 4;
			goto ip;
		case 0x86dd:
			version = 6;
			goto ip;
		case 0x8100: /* 802.1Q */
		case 0x88a8: /* 802.1ad */
		case 0x9100: /* QinQ */
			b = at(k, off, 4);
			if (!b)
				return R_LINK_TRUNCATED;
			p->vlans++;
			et = be16(b + 2);
			off += 4;
			continue;
		case 0x8847: /* MPLS: labels to the bottom of the stack */
		case 0x8848:
			for (int j = 0; j < MAX_LINK_HOPS; j++) {
				b = at(k, off, 4);
				if (!b)
					return R_LINK_TRUNCATED;
				off += 4;
				if (b[2] & 1)
					goto ip;
			}
			return R_LINK_TRUNCATED;
		case 0x8864: /* PPPoE session */
			b = at(k, off, 8);
			if (!b)
				return R_LINK_TRUNCATED;
			switch (be16(b + 6)) {
			case 0x0021:
				version = 4;
				break;
			case 0x0057:
				version = 6;
				break;
			default:
				return R_NOT_IP;
			}
			off += 8;
			goto ip;
		/* Link-layer hops capture.decodeEtherType walks: the next
		 * ethertype, then the header after the hop. */
		case 0x88e7: /* PBB (802.1ah): the I-TAG, then the customer's Ethernet header */
			b = at(k, off, 18);
			if (!b)
				return R_LINK_TRUNCATED;
			et = be16(b + 16);
			off += 18;
			continue;
		case 0x8926: /* VN-tag */
			b = at(k, off, 6);
			if (!b)
				return R_LINK_TRUNCATED;
			et = be16(b + 4);
			off += 6;
			continue;
		case 0x8903: /* Cisco FabricPath: FTag and TTL, then the inner Ethernet header */
			b = at(k, off, 16);
			if (!b)
				return R_LINK_TRUNCATED;
			et = be16(b + 14);
			off += 16;
			continue;
		case 0x894f: /* NSH (RFC 8300), capture.nshHeader: base, service path and context headers */
			b = at(k, off, 8);
			if (!b || b[0] >> 6 != 0 || (b[1] & 0x3f) < 2)
				return R_LINK_TRUNCATED;
			off += (__u32)(b[1] & 0x3f) * 4;
			switch (b[3]) {
			case 1:
				version = 4;
				goto ip;
			case 2:
				version = 6;
				goto ip;
			case 3: /* Ethernet */
				b = at(k, off, 14);
				if (!b)
					return R_LINK_TRUNCATED;
				et = be16(b + 12);
				off += 14;
				continue;
			case 4:
				continue; /* NSH again: et stays */
			case 5:
				et = 0x8847;
				continue;
			}
			return R_NOT_IP;
		default:
			p->ether_type = et;
			return R_NOT_IP;
		}
	}
	return R_LINK_TRUNCATED;

ip:
	off = forget(k, off);
	if (!version) {
		b = at(k, off, 1);
		if (!b)
			return R_IP_TRUNCATED;
		version = b[0] >> 4;
		if (version != 4 && version != 6)
			return R_IP_VERSION;
	}
	if (version == 4)
		return ipv4(k, p, off);
	return ipv6(k, p, off);
}

/* set_key writes the canonical key into key and says whether the packet
 * went from the key's Dst to its Src; capture.setKey's order: addresses as
 * 128-bit numbers (IPv4 mapped), then ports. */
static __always_inline int set_key(struct pkt *k, struct parsed *p, __u64 *key)
{
	__u32 s[4] = {0, 0, 0, 0}, d[4] = {0, 0, 0, 0};
	__u32 *w = (__u32 *)key;
	__u8 *a, *z;

	if (p->v6) {
		a = at(k, p->saddr, 16);
		z = at(k, p->daddr, 16);
		if (!a || !z)
			return -1;
		for (int i = 0; i < 4; i++) {
			s[i] = be32(a + 4 * i);
			d[i] = be32(z + 4 * i);
		}
	} else {
		a = at(k, p->saddr, 4);
		z = at(k, p->daddr, 4);
		if (!a || !z)
			return -1;
		s[2] = d[2] = 0xffff;
		s[3] = be32(a);
		d[3] = be32(z);
	}
	int rev = 0;
	if (s[0] != d[0])
		rev = s[0] > d[0];
	else if (s[1] != d[1])
		rev = s[1] > d[1];
	else if (s[2] != d[2])
		rev = s[2] > d[2];
	else if (s[3] != d[3])
		rev = s[3] > d[3];
	else
		rev = p->sport > p->dport;
	__u16 sp = p->sport, dp = p->dport;
	if (rev) {
		for (int i = 0; i < 4; i++) {
			__u32 t = s[i];
			s[i] = d[i];
			d[i] = t;
		}
		sp = p->dport;
		dp = p->sport;
	}
	for (int i = 0; i < 4; i++) {
		w[i] = bpf_htonl(s[i]);
		w[4 + i] = bpf_htonl(d[i]);
	}
	w[8] = bpf_htonl(((__u32)sp << 16) | dp);
	w[9] = bpf_htonl(((__u32)p->proto << 24) | ((__u32)(p->v6 ? 6 : 4) << 16));
	return rev;
}

/* flow_hash is a symmetric hash of the canonical key (a flow's two
 * directions share the key, so the hash): its low half picks the ring,
 * its high half the sample. */
static __always_inline __u64 flow_hash(const __u64 *w)
{
	__u64 h = 0x666c6f776d6f6e31ULL;
	for (int i = 0; i < 5; i++) {
		h ^= w[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return h;
}

#endif
