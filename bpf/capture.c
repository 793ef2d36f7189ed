//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* flowmon's capture program: parses a frame's headers as capture.Decode
 * does and writes one fixed-size record per packet into a BPF ring buffer,
 * one ring per worker shard, chosen by a symmetric hash of the flow key so
 * that both directions of a flow reach one shard. The packet always goes
 * on (XDP_PASS, TC_ACT_UNSPEC): flowmon observes, it never drops.
 *
 * Offsets are u32 counts from the frame's start. Each header is checked
 * twice: against the logical end of its layer (the captured frame, or the
 * IP datagram's length, which drops Ethernet padding), as the Go decoder
 * checks its slices, and against data_end, which only the verifier needs
 * (the logical end never passes data_end). */

#include "include/types.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char __license[] SEC("license") = "Dual BSD/GPL";

#define MAX_RINGS 256
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
 * frame's first bytes follow it, and user space decodes them (tunnels,
 * the link layers only the Go decoder knows). */
#define R_RAW 0xff

/* capture.FragKind. */
enum frag { NOT_FRAGMENT = 0, FIRST_FRAGMENT, LATER_FRAGMENT };

/* record.flags bits. */
#define F_REVERSED (1 << 0)
#define F_HAS_TCP (1 << 1)
#define F_EGRESS (1 << 2)

/* One packet as the pipeline reads it; capture.Packet's fields. key is
 * capture.Key's 40-byte binary layout of the canonical key. A record of a
 * frame that did not parse has reason set and nothing else but ts,
 * wire_len, ifindex and flags' F_EGRESS. */
struct record {
	__u64 ts; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u8 key[40];
	__u32 seq;
	__u32 ack;
	__u32 ip_id;
	__u32 payload_len;
	__u32 wire_len;
	__u32 ifindex;
	__u16 ip_len;
	__u16 window;
	__u16 tcp_flags;
	__u16 ether_type;
	__u8 ttl;
	__u8 vlans;
	__u8 fragment;
	__u8 flags;
	__u8 reason;
	__u8 payload_cap; /* bytes of payload that hold the payload's first bytes */
	__u16 pad;
	__u8 payload[PAYLOAD_MAX];
};

/* Per CPU and ring: every packet is counted once in seen and once more in
 * exactly one of sampled_out, filtered_out, emitted or lost; a frame that
 * did not parse also in reasons[its reason]. */
struct counters {
	__u64 seen;
	__u64 emitted;
	__u64 raw; /* of emitted: frames handed up whole */
	__u64 lost;
	__u64 sampled_out;
	__u64 filtered_out;
	__u64 reasons[16];
};

/* What user space sets while the program runs. */
struct config {
	__u32 rings;        /* rings in use, 1 to MAX_RINGS */
	__u32 sample;       /* keep 1 flow in sample; 0 or 1 keeps all */
	__u32 wakeup_bytes; /* wake the reader once a ring holds this much */
	__u32 filter;       /* FILTER_ bits: which sets the pre-filter applies */
};

#define FILTER_CIDRS (1 << 0)
#define FILTER_PORTS (1 << 1)

struct lpm_key {
	__u32 prefixlen;
	__u8 addr[16]; /* IPv4 as IPv4-mapped IPv6 */
};

struct ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_RINGS);
	__type(key, __u32);
	__array(values, struct ring);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_RINGS);
	__type(key, __u32);
	__type(value, struct counters);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} settings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_key);
	__type(value, __u8);
} cidrs SEC(".maps");

/* One bit a port. */
struct port_bits {
	__u64 w[1024];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_bits);
} ports SEC(".maps");

/* The UDP ports whose datagrams carry a tunnel (VXLAN, Geneve, GTP-U,
 * Teredo, AYIYA, GRE over UDP): their frames go up whole. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_bits);
} tunnel_ports SEC(".maps");

/* A frame handed up whole: its record (reason R_RAW) and its first bytes,
 * built in this per-CPU buffer and copied into the ring. */
struct raw {
	struct record r;
	__u8 data[2 * RAW_MAX]; /* the verifier's bound on n, which is at most RAW_MAX */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct raw);
} raw_buf SEC(".maps");

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
	__u8 encap;         /* the frame carries a tunnel or a link layer this parser leaves to user space */
};

struct pkt {
	void *data;
	void *end;
	__u32 len;           /* end - data */
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

/* tunnel_port says whether either port is one of tunnel_ports'. */
static __always_inline int tunnel_port(__u16 sport, __u16 dport)
{
	__u32 zero = 0;
	struct port_bits *pb = bpf_map_lookup_elem(&tunnel_ports, &zero);
	if (!pb)
		return 0;
	return (pb->w[(sport >> 6) & 1023] >> (sport & 63)) & 1 || (pb->w[(dport >> 6) & 1023] >> (dport & 63)) & 1;
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
		if (p->proto == 17 && tunnel_port(p->sport, p->dport))
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
		case 0x88e7: /* PBB (802.1ah) */
		case 0x8926: /* VN-tag */
		case 0x8903: /* Cisco FabricPath */
			p->ether_type = et;
			p->encap = 1;
			return R_NONE;
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

/* keep is the pre-filter: with a CIDR set, either address in it; with a
 * port set, either port in it. */
static __always_inline int keep(const __u64 *key, __u32 filter)
{
	const __u8 *kb = (const __u8 *)key;
	if (filter & FILTER_CIDRS) {
		struct lpm_key lk = {.prefixlen = 128};
		__builtin_memcpy(lk.addr, kb, 16);
		if (!bpf_map_lookup_elem(&cidrs, &lk)) {
			__builtin_memcpy(lk.addr, kb + 16, 16);
			if (!bpf_map_lookup_elem(&cidrs, &lk))
				return 0;
		}
	}
	if (filter & FILTER_PORTS) {
		__u32 zero = 0;
		struct port_bits *pb = bpf_map_lookup_elem(&ports, &zero);
		if (!pb)
			return 0;
		__u16 sp = ((__u16)kb[32] << 8) | kb[33];
		__u16 dp = ((__u16)kb[34] << 8) | kb[35];
		if (!(pb->w[(sp >> 6) & 1023] & (1ULL << (sp & 63))) &&
		    !(pb->w[(dp >> 6) & 1023] & (1ULL << (dp & 63))))
			return 0;
	}
	return 1;
}

/* copy_payload copies the first p->pcap (at most PAYLOAD_MAX) payload
 * bytes into r->payload: 64 bytes at once when the frame has them, else
 * in chunks of 32, 16, 8, 4, 2 and 1 by the bits of the length. */
static __always_inline void copy_payload(struct pkt *k, const struct parsed *p, struct record *r)
{
	__u32 n = p->pcap < PAYLOAD_MAX ? p->pcap : PAYLOAD_MAX;
	__u8 *src;
	__u32 o = 0;

	r->payload_cap = 0;
	if (!n)
		return;
	if (n == PAYLOAD_MAX) {
		src = at(k, p->poff, PAYLOAD_MAX);
		if (src) {
			__builtin_memcpy(r->payload, src, PAYLOAD_MAX);
			r->payload_cap = PAYLOAD_MAX;
		}
		return;
	}
#define CHUNK(size)                                                        \
	if (n & size) {                                                    \
		src = at(k, p->poff + o, size);                            \
		if (!src)                                                  \
			return;                                            \
		__builtin_memcpy(r->payload + (o & (PAYLOAD_MAX - size)), src, size); \
		o += size;                                                 \
		r->payload_cap = o;                                        \
	}
	CHUNK(32)
	CHUNK(16)
	CHUNK(8)
	CHUNK(4)
	CHUNK(2)
	CHUNK(1)
#undef CHUNK
}

/* hand_up writes the frame's first bytes (RAW_MAX at most) after a record
 * of reason R_RAW into ring: user space decodes them as it decodes a
 * frame it captured. ctx is the program's context, xdp says which. */
static __always_inline int hand_up(void *ctx, int xdp, struct pkt *k, void *ring, __u64 wake, __u32 wire,
				   __u32 ifindex, __u8 dir, __u8 vlans)
{
	__u32 zero = 0;
	struct raw *w = bpf_map_lookup_elem(&raw_buf, &zero);
	if (!w)
		return -1;
	__u64 n = k->len;
	if (n > RAW_MAX)
		n = RAW_MAX;
	if (n < 14)
		return -1;
	/* No change to n (14 to RAW_MAX), but a bound the verifier follows,
	 * which the compiler would otherwise take out as known. */
	asm volatile("%[n] &= %[mask]" : [n] "+r"(n) : [mask] "i"(2 * RAW_MAX - 1));
	if (n < 14)
		return -1;
	long err = xdp ? bpf_xdp_load_bytes(ctx, 0, w->data, n) : bpf_skb_load_bytes(ctx, 0, w->data, n);
	if (err)
		return -1;
	__builtin_memset(&w->r, 0, sizeof(w->r));
	w->r.ts = bpf_ktime_get_ns();
	w->r.wire_len = wire;
	w->r.ifindex = ifindex;
	w->r.reason = R_RAW;
	w->r.flags = dir ? F_EGRESS : 0;
	w->r.vlans = vlans;
	w->r.payload_len = n; /* the bytes that follow */
	/* Wake the reader as handle does, once the unread bytes cross wake. */
	__u64 avail = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
	int cross = avail < wake && avail + sizeof(w->r) + n + 8 >= wake;
	return bpf_ringbuf_output(ring, w, sizeof(w->r) + n, cross ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline void handle(void *ctx, int xdp, struct pkt *k, __u32 wire, __u32 ifindex, __u8 dir, __u8 vlans)
{
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&settings, &zero);
	if (!cfg)
		return;
	k->tmp = bpf_map_lookup_elem(&scratch, &zero);
	if (!k->tmp)
		return;
	struct parsed p = {};
	__u64 key[5] = {};
	p.vlans = vlans;
	int reason = parse(k, &p);

	__u64 h = 0;
	int rev = 0;
	if (reason == R_NONE) {
		rev = set_key(k, &p, key);
		if (rev < 0)
			reason = R_IP_TRUNCATED;
		else
			h = flow_hash(key);
	}
	__u32 nrings = cfg->rings;
	__u32 ri = 0;
	if (reason == R_NONE && nrings > 1)
		ri = (__u32)h % nrings;
	struct counters *c = bpf_map_lookup_elem(&stats, &ri);
	if (!c)
		return;
	c->seen++;
	int whole = reason == R_NONE && p.encap;
	if (reason != R_NONE) {
		c->reasons[reason & 15]++;
	} else if (!whole) { /* a tunnel's inner flow is not known here: neither sampled nor filtered */
		__u32 n = cfg->sample;
		if (n > 1 && (__u32)(h >> 32) % n != 0) {
			c->sampled_out++;
			return;
		}
		if (cfg->filter && !keep(key, cfg->filter)) {
			c->filtered_out++;
			return;
		}
	}
	void *ring = bpf_map_lookup_elem(&rings, &ri);
	if (!ring)
		return;
	if (whole) {
		if (hand_up(ctx, xdp, k, ring, cfg->wakeup_bytes, wire, ifindex, dir, vlans)) {
			c->lost++;
			return;
		}
		c->emitted++;
		c->raw++;
		return;
	}
	struct record *r = bpf_ringbuf_reserve(ring, sizeof(*r), 0);
	if (!r) {
		c->lost++;
		return;
	}
	r->ts = bpf_ktime_get_ns();
	r->wire_len = wire;
	r->ifindex = ifindex;
	r->reason = reason;
	r->flags = dir ? F_EGRESS : 0;
	r->vlans = p.vlans;
	r->ether_type = p.ether_type;
	if (reason == R_NONE) {
		__builtin_memcpy(r->key, key, sizeof(r->key));
		r->seq = p.seq;
		r->ack = p.ack;
		r->ip_id = p.ip_id;
		r->payload_len = p.payload_len;
		r->ip_len = p.ip_len;
		r->window = p.window;
		r->tcp_flags = p.tcp_flags;
		r->ttl = p.ttl;
		r->fragment = p.fragment;
		if (rev)
			r->flags |= F_REVERSED;
		if (p.has_tcp)
			r->flags |= F_HAS_TCP;
		copy_payload(k, &p, r);
	}
	/* Wake the reader once, as the ring's unread bytes cross wakeup_bytes
	 * (this record's 8-byte header and its data included): a reader that
	 * is awake reads on without another wakeup, and one that sleeps finds
	 * fewer records at its poll's timeout. Waking at every record past the
	 * mark would cost each one an irq_work while the reader lags. */
	__u64 avail = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
	__u64 wake = cfg->wakeup_bytes;
	int cross = avail >= wake && avail < wake + sizeof(*r) + 8;
	bpf_ringbuf_submit(r, cross ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	c->emitted++;
}

SEC("xdp")
int flowmon_xdp(struct xdp_md *ctx)
{
	struct pkt k = {
		.data = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	k.len = k.end - k.data;
	handle(ctx, 1, &k, k.len, ctx->ingress_ifindex, 0, 0);
	return XDP_PASS;
}

/* tc sees the frame after the kernel has taken its outer VLAN tag out
 * (skb->vlan_tci); the tag is counted, and its 4 bytes added to the wire
 * length, as the AF_PACKET source puts it back. Headers outside the
 * linear part are pulled in first. */
static __always_inline int tc(struct __sk_buff *skb, __u8 dir)
{
	__u32 want = skb->len < 256 ? skb->len : 256;
	if (skb->data_end - skb->data < want)
		bpf_skb_pull_data(skb, want);
	struct pkt k = {
		.data = (void *)(long)skb->data,
		.end = (void *)(long)skb->data_end,
	};
	k.len = k.end - k.data;
	__u8 tagged = skb->vlan_present ? 1 : 0;
	handle(skb, 0, &k, skb->len + 4 * tagged, skb->ifindex, dir, tagged);
	return TC_ACT_UNSPEC;
}

SEC("tc")
int flowmon_tc_ingress(struct __sk_buff *skb)
{
	return tc(skb, 0);
}

SEC("tc")
int flowmon_tc_egress(struct __sk_buff *skb)
{
	return tc(skb, 1);
}

/* Referenced so that the record's type is in the object's BTF, which
 * bpf2go turns into its Go type (the maps' types are there already). */
const struct record *unused_record __attribute__((unused));
