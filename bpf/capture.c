//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* flowmon's capture program: parses a frame's headers as capture.Decode
 * does and writes one fixed-size record per packet into a BPF ring buffer,
 * one ring per worker shard, chosen by a symmetric hash of the flow key so
 * that both directions of a flow reach one shard. The packet always goes
 * on (XDP_PASS, TC_ACT_UNSPEC): flowmon observes, it never drops. The
 * parser is include/parse.h's. */

#include "include/parse.h"
#include "include/handup.h"

char __license[] SEC("license") = "Dual BSD/GPL";

#define MAX_RINGS 256

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


struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_bits);
} ports SEC(".maps");


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

HOOKS(flowmon, handle)

/* Referenced so that the record's type is in the object's BTF, which
 * bpf2go turns into its Go type (the maps' types are there already). */
const struct record *unused_record __attribute__((unused));
