//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* flowmon's kernel flow state: parses each frame as capture.c does and
 * keeps its flow's state in a cell of a fixed-size map, where capture.c
 * hands every packet up: the ACSM's machine value (stepped over
 * acsm.MachineTables, loaded into the machine map), first and last packet
 * times, packets, IP bytes and payload bytes each way, and each side's
 * TCP flag union. Only flow events go up, through one ring: a flow's
 * start and its end (the packet that ended it, or its 5-tuple reused by a
 * new flow), each carrying the cell's counts. User space ages the cells
 * (it sweeps the map) and writes the records.
 *
 * Cells are a hash map keyed by the canonical key (capture.Key's 40-byte
 * layout), preallocated to the size user space sets, so memory is fixed:
 * a flow that finds the map full is counted (insert_failed), not kept.
 * Several CPUs may update one cell at once: each update holds the cell's
 * spin lock, and a new flow is entered with BPF_NOEXIST, so two CPUs
 * starting one flow make one cell.
 *
 * The replay program (flowmon_state_replay) takes the packet time from
 * the frame's first 8 bytes (nanoseconds, little-endian), put there by
 * user space running a capture's frames with BPF_PROG_TEST_RUN, and
 * answers XDP_TX for a frame it leaves to user space to decode, XDP_DROP
 * for one it leaves out (as the ACSM does); the live programs
 * take bpf_ktime_get_ns and pass every frame on. */

#include "include/parse.h"

char __license[] SEC("license") = "Dual BSD/GPL";

#define MAX_VALUES 512 /* acsm: the Zeek machine has 276 values, the flag machine 128 */
#define TRANS_ENDS (1 << 15)
#define INFO_ORIG_IS_DST (1 << 0)
#define INFO_TERMINAL (1 << 1)
#define INFO_CLOSED (1 << 2)

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10

/* acsm.Tables. */
struct machine_tables {
	__u16 next[MAX_VALUES * 256];
	__u8 info[MAX_VALUES];
	__u16 start[3][2][2];
	__u64 server_ports[1024];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct machine_tables);
} machine SEC(".maps");

/* One flow. Sides are indexed by the key's direction: 0 sent by the key's
 * Src. */
struct flow_cell {
	struct bpf_spin_lock lock;
	__u16 value; /* the machine's value */
	__u8 ended;  /* the value ended the flow: its end event is sent */
	__u8 pad;
	__u64 first, last;
	__u64 pkts[2];
	__u64 ip_bytes[2];
	__u64 payload[2];
	__u16 tcp_flags[2];
	__u32 starts; /* flows this cell has held: a reuse makes a new one */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u8[40]);
	__type(value, struct flow_cell);
} cells SEC(".maps");

#define EV_START 1
#define EV_END 2

/* What goes up: a flow's start, or its end with its counts. */
struct flow_event {
	__u8 type;
	__u8 pad;
	__u16 value;
	__u32 starts;
	__u8 key[40];
	__u64 first, last;
	__u64 pkts[2];
	__u64 ip_bytes[2];
	__u64 payload[2];
	__u16 tcp_flags[2];
	__u32 pad2;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* Per CPU: every frame once in seen and once more in exactly one of
 * counted (its flow's cell took it), skipped (a later fragment or a TCP
 * packet without its header: the ACSM leaves them), whole (a tunnel or a
 * link layer this parser leaves to user space), insert_failed (a new flow
 * and the map full) or reasons[] (it did not parse). */
struct state_counters {
	__u64 seen;
	__u64 counted;
	__u64 skipped;
	__u64 whole;
	__u64 insert_failed;
	__u64 new_flows;
	__u64 ended;
	__u64 events_lost;
	__u64 reasons[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct state_counters);
} state_stats SEC(".maps");

/* The events and the new cell a packet builds: per CPU, off the stack
 * (the parser's state takes most of its 512 bytes). */
struct state_buf {
	struct flow_event ev, old;
	/* A new flow's cell, entered with bpf_map_update_elem: bytes, as a
	 * per-CPU map's value may not hold a spin lock. */
	__u64 init[(sizeof(struct flow_cell) + 7) / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct state_buf);
} state_buf SEC(".maps");

/* acsm's inputOf. */
static __always_inline __u32 input_of(int is_orig, int data, __u16 flags)
{
	return (flags & 0x3f) | (data ? 1 << 6 : 0) | (is_orig ? 1 << 7 : 0);
}

static __always_inline int server_port(const struct machine_tables *m, __u16 p)
{
	return (m->server_ports[(p >> 6) & 1023] >> (p & 63)) & 1;
}

/* acsm's flipNew: whether a new flow's first packet came from its
 * responder. src and dst are the packet's own ports; dst_mcast says its
 * destination is a multicast or the broadcast address. */
static __always_inline int flip_new(const struct machine_tables *m, __u8 proto, __u16 flags, __u16 src, __u16 dst,
				    int dst_mcast)
{
	if (proto == 6) {
		if ((flags & (TCP_SYN | TCP_ACK | TCP_RST | TCP_FIN)) == (TCP_SYN | TCP_ACK))
			return 1;
		if ((flags & TCP_SYN) || !server_port(m, src))
			return 0;
		if (server_port(m, dst))
			return src < dst;
		return 1;
	}
	if (proto == 17) {
		if (dst_mcast)
			return 0;
		return server_port(m, src) && (!server_port(m, dst) || src < dst);
	}
	return 0;
}

/* first_value is a new flow's value after its first packet, and sets
 * *ends when that packet ends the flow. */
static __always_inline __u16 first_value(const struct machine_tables *m, struct pkt *k, const struct parsed *p, int rev,
					 __u16 flags, int data, int *ends)
{
	int dst_mcast = 0;
	if (p->proto == 17) {
		/* set_key read the address: it is in the frame. */
		__u8 *d = at(k, p->daddr, p->v6 ? 16 : 4);
		if (d)
			dst_mcast = p->v6 ? d[0] == 0xff
					  : ((d[0] & 0xf0) == 0xe0 || (d[0] == 0xff && d[1] == 0xff && d[2] == 0xff && d[3] == 0xff));
	}
	int flip = flip_new(m, p->proto, flags, p->sport, p->dport, dst_mcast); /* the packet's own ports */
	int orig_is_dst = rev != flip;
	int kind = p->proto == 6 ? 0 : p->proto == 17 ? 1 : 2;
	int rst = kind == 0 && !flip && (flags & (TCP_SYN | TCP_ACK | TCP_FIN | TCP_RST)) == TCP_SYN;
	__u16 v0 = m->start[kind][orig_is_dst][rst];
	__u16 n = m->next[((__u32)v0 * 256 + input_of(!flip, data, flags)) & (MAX_VALUES * 256 - 1)];
	__u16 v = n & ~TRANS_ENDS;
	*ends = (n & TRANS_ENDS) || (m->info[v & (MAX_VALUES - 1)] & INFO_TERMINAL);
	return v;
}

static __always_inline void fill_event(struct flow_event *e, __u8 type, const struct flow_cell *c, const __u8 *key)
{
	e->type = type;
	e->value = c->value;
	e->starts = c->starts;
	__builtin_memcpy(e->key, key, 40);
	e->first = c->first;
	e->last = c->last;
	e->pkts[0] = c->pkts[0];
	e->pkts[1] = c->pkts[1];
	e->ip_bytes[0] = c->ip_bytes[0];
	e->ip_bytes[1] = c->ip_bytes[1];
	e->payload[0] = c->payload[0];
	e->payload[1] = c->payload[1];
	e->tcp_flags[0] = c->tcp_flags[0];
	e->tcp_flags[1] = c->tcp_flags[1];
}

static __always_inline void send(struct state_counters *sc, const struct flow_event *e)
{
	if (bpf_ringbuf_output(&events, (void *)e, sizeof(*e), 0))
		sc->events_lost++;
}

/* count adds the packet to cell c (held locked). */
static __always_inline void count(struct flow_cell *c, __u64 now, int dir, const struct parsed *p)
{
	/* A branch, not an index: the compiler would OR the index into the
	 * address of a cell on the stack, which the verifier refuses. */
	c->last = now;
	if (dir) {
		c->pkts[1]++;
		c->ip_bytes[1] += p->ip_len;
		c->payload[1] += p->payload_len;
		c->tcp_flags[1] |= p->tcp_flags;
	} else {
		c->pkts[0]++;
		c->ip_bytes[0] += p->ip_len;
		c->payload[0] += p->payload_len;
		c->tcp_flags[0] |= p->tcp_flags;
	}
}

/* state_packet takes the frame into its flow's cell and returns 1, or
 * leaves it to user space: 2 for a frame to decode there (a tunnel, a
 * link layer only the Go decoder knows), 0 for one that does not parse,
 * a later fragment, a TCP packet without its header, or a new flow the
 * map has no room for. */
static __always_inline int state_packet(struct pkt *k, __u64 now)
{
	__u32 zero = 0;
	struct state_counters *sc = bpf_map_lookup_elem(&state_stats, &zero);
	struct machine_tables *m = bpf_map_lookup_elem(&machine, &zero);
	struct state_buf *sb = bpf_map_lookup_elem(&state_buf, &zero);
	if (!sc || !m || !sb)
		return 0;
	k->tmp = bpf_map_lookup_elem(&scratch, &zero);
	if (!k->tmp)
		return 0;
	sc->seen++;
	struct parsed p = {};
	__u64 key[5] = {};
	int reason = parse(k, &p);
	int rev = 0;
	if (reason == R_NONE) {
		rev = set_key(k, &p, key);
		if (rev < 0)
			reason = R_IP_TRUNCATED;
	}
	if (reason != R_NONE) {
		sc->reasons[reason & 15]++;
		return 0;
	}
	if (p.encap) {
		sc->whole++;
		return 2;
	}
	if (p.fragment == LATER_FRAGMENT || (p.proto == 6 && !p.has_tcp)) {
		sc->skipped++;
		return 0;
	}
	__u16 flags = p.proto == 6 ? p.tcp_flags : 0;
	int data = p.payload_len > 0;
	int syn = (flags & (TCP_SYN | TCP_ACK | TCP_FIN | TCP_RST)) == TCP_SYN;
	struct flow_event *ev = &sb->ev, *old = &sb->old;
	struct flow_cell *c = bpf_map_lookup_elem(&cells, key);
	if (!c) {
		struct flow_cell *init = (struct flow_cell *)sb->init;
		__builtin_memset(init, 0, sizeof(*init));
		int ends;
		init->value = first_value(m, k, &p, rev, flags, data, &ends);
		init->ended = ends;
		init->first = now;
		init->starts = 1;
		count(init, now, rev, &p);
		long err = bpf_map_update_elem(&cells, key, init, BPF_NOEXIST);
		if (!err) {
			sc->counted++;
			sc->new_flows++;
			fill_event(ev, EV_START, init, (__u8 *)key);
			send(sc, ev);
			if (ends) {
				sc->ended++;
				ev->type = EV_END;
				send(sc, ev);
			}
			return 1;
		}
		/* Another CPU entered the flow first, or the map is full. */
		c = bpf_map_lookup_elem(&cells, key);
		if (!c) {
			sc->insert_failed++;
			return 0;
		}
	}
	/* The flow's cell: step its value, or, when a side closed and a SYN
	 * comes, end it and start a new flow in the cell (acsm's reuse). */
	int sent = 0; /* 1: the flow ended; 2: reused (an end, then a start); 3: and the new one ended */
	/* A reuse's first value, made before the lock (a SYN only can reuse). */
	int v0_ends = 0;
	__u16 v0 = syn ? first_value(m, k, &p, rev, flags, data, &v0_ends) : 0;
	bpf_spin_lock(&c->lock);
	__u16 v = c->value & (MAX_VALUES - 1);
	if ((m->info[v] & INFO_CLOSED) && syn) {
		fill_event(old, EV_END, c, (__u8 *)key);
		__u32 starts = c->starts + 1;
		__builtin_memset((__u8 *)c + sizeof(struct bpf_spin_lock), 0,
				 sizeof(*c) - sizeof(struct bpf_spin_lock));
		c->starts = starts;
		c->first = now;
		c->value = v0;
		c->ended = v0_ends;
		count(c, now, rev, &p);
		fill_event(ev, EV_START, c, (__u8 *)key);
		sent = c->ended ? 3 : 2;
	} else {
		int is_orig = rev == !!(m->info[v] & INFO_ORIG_IS_DST);
		__u16 n = m->next[((__u32)v * 256 + input_of(is_orig, data, flags)) & (MAX_VALUES * 256 - 1)];
		c->value = n & ~TRANS_ENDS;
		count(c, now, rev, &p);
		if ((n & TRANS_ENDS) && !c->ended) {
			c->ended = 1;
			fill_event(ev, EV_END, c, (__u8 *)key);
			sent = 1;
		}
	}
	bpf_spin_unlock(&c->lock);
	sc->counted++;
	if (sent >= 2) {
		sc->ended++;
		send(sc, old);
		sc->new_flows++;
		send(sc, ev);
		if (sent == 3) {
			sc->ended++;
			ev->type = EV_END;
			send(sc, ev);
		}
	} else if (sent == 1) {
		sc->ended++;
		send(sc, ev);
	}
	return 1;
}

SEC("xdp")
int flowmon_state_xdp(struct xdp_md *ctx)
{
	struct pkt k = {
		.data = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	k.len = k.end - k.data;
	state_packet(&k, bpf_ktime_get_ns());
	return XDP_PASS;
}

/* The replay's program: the frame's first 8 bytes are its packet time. */
SEC("xdp")
int flowmon_state_replay(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	if (data + 8 > end)
		return XDP_ABORTED;
	__u64 now = *(__u64 *)data;
	if (bpf_xdp_adjust_head(ctx, 8))
		return XDP_ABORTED;
	struct pkt k = {
		.data = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	k.len = k.end - k.data;
	/* The verdict tells the replay which frames are user space's. */
	switch (state_packet(&k, now)) {
	case 1:
		return XDP_PASS;
	case 2:
		return XDP_TX;
	}
	return XDP_DROP;
}

/* Referenced so that their types are in the object's BTF, which bpf2go
 * turns into Go types. */
const struct flow_event *unused_flow_event __attribute__((unused));
const struct state_counters *unused_state_counters __attribute__((unused));
