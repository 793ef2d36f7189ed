//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* flowmon's kernel flow state: parses each frame as capture.c does and
 * keeps its flow's state in a cell of a fixed-size map, where capture.c
 * hands every packet up: the ACSM's value (stepped over
 * acsm.MachineTables, loaded into the machine map), first, last and end
 * packet times, packets each way, the first packet's uid inputs, the flag
 * anomalies seen, and conn.log's fields (struct conn_fields: conn.h ports
 * flowtable.Conn.Observe, in Conn's memory layout). Time is packet time,
 * as the user-space flow table (pipeline/flowtable) has it: an open flow
 * idle past its timeout, or an ended flow whose linger is over, is done
 * at its 5-tuple's next packet, which starts another flow in the cell,
 * and an open flow gets an interim event at each active timeout. Only
 * flow events go up, through one ring, each with the whole cell; user
 * space sweeps the cells of flows that send nothing more (State.Take) and
 * writes the records.
 *
 * Cells are a hash map keyed by the canonical key (capture.Key's 40-byte
 * layout), preallocated to the size user space sets, so memory is fixed:
 * a flow that finds the map full is counted (insert_failed), not kept.
 * Several CPUs may update one cell at once: each update holds the cell's
 * spin lock, and a new flow's cell is entered empty with BPF_NOEXIST and
 * filled under the lock, so two CPUs starting one flow make one flow.
 *
 * The replay program (flowmon_state_replay) takes the packet time from
 * the frame's first 8 bytes (nanoseconds, little-endian), put there by
 * user space running a capture's frames with BPF_PROG_TEST_RUN, and
 * answers XDP_PASS for a frame its cell took, XDP_TX for one it leaves to
 * user space to decode, and XDP_DROP for a new flow the map had no room
 * for; the live programs take bpf_ktime_get_ns and pass every frame on. */

#include "include/parse.h"
#include "include/conn.h"

char __license[] SEC("license") = "Dual BSD/GPL";

#define MAX_VALUES 512 /* acsm: the Zeek machine has 276 values, the flag machine 128 */
#define TRANS_ENDS (1 << 15)
#define INFO_ORIG_IS_DST (1 << 0)
#define INFO_TERMINAL (1 << 1)
#define INFO_CLOSED (1 << 2)
#define INFO_IDLE_NEW (1 << 3) /* times out after idle_new: S0, SH, SHR, unknown */
#define INFO_S0 (1 << 4)       /* conn state S0: the flow leaving it is answered */

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_URG 0x20

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

/* Time as the user-space flow table has it (nanoseconds of packet time):
 * an open flow times out idle_new or idle_est after its last packet (by
 * its value's INFO_IDLE_NEW), an ended one lingers for its stragglers,
 * and an open flow gets an interim event every active_sec seconds (0:
 * never). A timeout user space leaves unset is 2^63-1: the program
 * compares it with the distance of two times, never larger. */
struct state_config {
	__s64 idle_new, idle_est, linger;
	/* A flow that began with a pure SYN and is still unanswered (S0)
	 * ends this long after the SYN, whatever else its originator sends
	 * (flowtable.AttemptDelay: Zeek's tcp_attempt_delay); 2^63-1: never. */
	__s64 attempt;
	__u32 active_sec;
	/* The duplicate window (see dedup_seen): buckets in the dedup map
	 * (0: off), a tick of it (a quarter of the window, ns) and the
	 * payload bytes a fingerprint takes. */
	__u32 dedup_buckets;
	__s64 dedup_tick;
	__u32 payload_bytes;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct state_config);
} config SEC(".maps");

/* The duplicate window: pipeline/dedup's fingerprint table
 * (filters/recent) in the kernel. A frame's fingerprint (dedup_print)
 * picks a bucket and a 32-bit tag; a bucket is a ring of the last
 * DEDUP_CELLS fingerprints that fell in it, each with the tick of packet
 * time it was written in (a tick is a quarter of the window), the oldest
 * overwritten first. A fingerprint written at tick t is held while the
 * clock's tick is at most t + 4: for the window at least and 1.25
 * windows at most, as the user-space table holds it. The user-space
 * table keeps 7 bits of the tick and sweeps expired cells before they
 * wrap; nothing sweeps here, so a cell keeps 32 bits of its tick, and two
 * cache lines a bucket where the user-space table has one: with 7 bits,
 * an expired cell whose age is near a multiple of 128 ticks looks held
 * again, and the same frame sent periodically (a routing protocol's
 * hello) would be taken for a duplicate of its earlier copy. */
#define DEDUP_CELLS 15
#define DEDUP_HELD_TICKS 4

struct dedup_bucket {
	__u64 cell[DEDUP_CELLS]; /* tick << 32 | tag; 0: empty */
	__u32 cursor;            /* the next cell written */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dedup_bucket);
} dedup SEC(".maps");

/* The clock: the latest packet time seen (ns). Timeouts, the linger and
 * the duplicate window age by it, as the user-space table and dedup
 * stage age by theirs: a packet whose time goes back counts as at the
 * clock for them, while the flow's first and last times are its
 * packets' own. set is 0 until the first packet. */
struct clock {
	__s64 now;
	__u64 set;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct clock);
} clock SEC(".maps");

/* One flow, as a cell and an event carry it. Sides are indexed by the
 * key's direction: 0 sent by the key's Src. */
struct flow_state {
	/* value is the flow's value for its record: the machine's, and after
	 * the end the one it ended at (stragglers do not change a record's
	 * state); machine steps on at every packet, stragglers too, as the
	 * ACSM does, for their orientation and a reuse. */
	__u16 value, machine;
	__u8 ended;    /* the flow ended (at since): its END event is sent */
	__u8 answered; /* its value left S0: its ANSWERED event is sent */
	__u16 anomalies; /* acsm.Anomaly's flag bits (the first five) seen */
	__u32 starts;     /* flows this cell has held, this one included */
	__u32 interim_at; /* seconds after first of the last interim event */
	__u64 first, last; /* packet times */
	/* The clock its timeout counts from: its end's when ended (the
	 * linger), its SYN's for an attempt, else its last packet's. */
	__u64 since;
	__u64 pkts[2];
	/* The first packet's uid inputs (flowtable.UIDSeed), 0 where the
	 * packet has none, as the Go decoder leaves them. */
	__u32 first_seq, first_ack, first_ipid;
	__u16 first_flags;
	__u8 attempt; /* began with a pure SYN, unanswered since: ends attempt after first */
	__u8 pad2;
	struct conn_fields conn;
};

_Static_assert(sizeof(struct flow_state) == 224, "an event is 272 bytes (bpf.EventSize)");

struct flow_cell {
	struct bpf_spin_lock lock;
	__u32 pad;
	struct flow_state s;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u8[40]);
	__type(value, struct flow_cell);
} cells SEC(".maps");

/* Event types (bpf.EventStart...). */
#define EV_START 1   /* a new flow, after its first packet */
#define EV_END 2     /* its packet ended the flow: the record is due after the linger */
#define EV_DONE 3    /* the flow is over and the cell holds another: its record is due now */
#define EV_INTERIM 4 /* an open flow's active timeout */
#define EV_ANSWERED 5 /* the flow's value left S0 (once a flow) */

/* DONE reasons (bpf.ReasonReused...). */
#define RS_REUSED 1 /* a SYN after a side closed: a new flow of the 5-tuple */
#define RS_IDLE 2   /* idle past its timeout */
#define RS_LINGER 3 /* ended, and its linger over */

/* What goes up: an event and the flow's whole state. */
struct flow_event {
	__u8 type, reason;
	__u8 pad[6];
	__u8 key[40];
	struct flow_state s;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* Per CPU: every frame once in seen and once more in exactly one of
 * counted (its flow's cell took it), duplicates (a duplicate within the
 * window, handled: not applied to its cell), skipped (a fragment or a TCP packet
 * without its header, left to user space), whole (a tunnel, left to
 * user space), insert_failed (a new flow and
 * the map full) or reasons[] (it did not parse; left to user space).
 * events_lost counts events the full ring refused, records_lost the DONE
 * events among them: the flow's final counts, gone with the cell's reset. */
struct state_counters {
	__u64 seen;
	__u64 counted;
	__u64 skipped;
	__u64 whole;
	__u64 insert_failed;
	__u64 new_flows;
	__u64 ended;
	__u64 done;
	__u64 interims;
	__u64 answered;
	__u64 duplicates;
	__u64 events_lost;
	__u64 records_lost;
	__u64 reasons[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct state_counters);
} state_stats SEC(".maps");

/* The events a packet sends and the empty cell a new flow enters: per
 * CPU, off the stack (the parser's state takes most of its 512 bytes). */
struct state_buf {
	struct flow_event ev, old;
	/* An empty cell, never written (zero as the map made it): bytes, as
	 * a per-CPU map's value may not hold a spin lock. */
	__u64 empty[(sizeof(struct flow_cell) + 7) / 8];
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
/* step is the machine's transition from value v on a packet from the
 * originator (is_orig) or the responder, TRANS_ENDS set where it ends
 * the flow. */
static __always_inline __u16 step(const struct machine_tables *m, __u16 v, int is_orig, int data, __u16 flags)
{
	return m->next[((__u32)v * 256 + input_of(is_orig, data, flags)) & (MAX_VALUES * 256 - 1)];
}

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
	__u16 n = step(m, v0, !flip, data, flags);
	__u16 v = n & ~TRANS_ENDS;
	*ends = (n & TRANS_ENDS) || (m->info[v & (MAX_VALUES - 1)] & INFO_TERMINAL);
	return v;
}

/* flag_anomalies is acsm's flagAnomalies: the anomalies a TCP header
 * shows by itself. */
static __always_inline __u16 flag_anomalies(__u16 f)
{
	__u16 a = 0;
	if ((f & (TCP_SYN | TCP_FIN)) == (TCP_SYN | TCP_FIN))
		a |= 1;
	if ((f & (TCP_SYN | TCP_RST)) == (TCP_SYN | TCP_RST))
		a |= 2;
	if ((f & (TCP_FIN | TCP_RST)) == (TCP_FIN | TCP_RST))
		a |= 4;
	if ((f & 0x3f) == 0)
		a |= 8;
	if ((f & (TCP_FIN | TCP_PSH | TCP_URG)) == (TCP_FIN | TCP_PSH | TCP_URG))
		a |= 16;
	return a;
}

static __always_inline __u64 fp_mix(__u64 h, __u64 w)
{
	h ^= w;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/* dedup_print is dedup.Fingerprint's identity of a packet, over the same
 * fields (the flow hash, the direction, the fragment kind, the TCP flags,
 * IP id and total length, TCP window, sequence and acknowledgement
 * numbers, the transport payload's length) and the first payload_bytes
 * captured payload bytes; its hash is this program's own, as only the
 * kernel's window compares it. The payload is read a word at a time, up
 * to PAYLOAD_MAX, and only in the linear part. A subprogram, so that the
 * verifier follows the rest of the packet's path once, not once for each
 * length the loop may stop at. */
static __noinline __u64 dedup_print(struct pkt *k, const struct parsed *p, const __u64 *key, int rev, __u32 nbytes)
{
	__u64 h = fp_mix(flow_hash(key), (__u64)rev | (__u64)p->fragment << 8 | (__u64)p->tcp_flags << 16 |
						 (__u64)p->ip_id << 32);
	h = fp_mix(h, (__u64)p->ip_len | (__u64)p->window << 16 | (__u64)p->seq << 32);
	h = fp_mix(h, (__u64)p->ack | (__u64)p->payload_len << 32);
	__u32 n = p->pcap < nbytes ? p->pcap : nbytes;
	__u32 i = 0;
	/* Whole words first, then the last bytes one at a time. */
	for (int j = 0; j < PAYLOAD_MAX / 8; j++) {
		if (i + 8 > n)
			break;
		__u64 *w = at(k, p->poff + i, 8);
		if (!w)
			break;
		h = fp_mix(h, *w);
		i += 8;
	}
	__u64 w = 0;
	for (int j = 0; j < 8; j++) {
		if (i >= n)
			break;
		__u8 *b = at(k, p->poff + i, 1);
		if (!b)
			break;
		w = w << 8 | *b;
		i++;
	}
	return fp_mix(h, w ^ ((__u64)i << 56));
}

/* dedup_seen says whether fp was seen within the window at the clock c,
 * and writes it into its bucket if it was not. CPUs share the map
 * without a lock: a cell is one 64-bit word, written whole, and the
 * cursor is bounded where it is read, so a race corrupts nothing. It may
 * lose a fingerprint: two CPUs writing into one bucket at once may take
 * the same cell (the program is built for BPF v1, which has no atomic
 * fetch); and two copies of one frame checked at once on two CPUs both
 * find the bucket without it. Each costs at worst a duplicate let
 * through. */
static __always_inline int dedup_seen(const struct state_config *cfg, __u64 fp, __u64 c)
{
	if (cfg->dedup_tick <= 0)
		return 0;
	__u32 tick = (__u32)(c / (__u64)cfg->dedup_tick);
	__u32 idx = (__u32)(((fp >> 32) * (__u64)cfg->dedup_buckets) >> 32);
	struct dedup_bucket *b = bpf_map_lookup_elem(&dedup, &idx);
	if (!b)
		return 0;
	__u32 tag = (__u32)fp;
	if (!tag)
		tag = 1;
	for (int i = 0; i < DEDUP_CELLS; i++) {
		__u64 cell = b->cell[i];
		if (cell && (__u32)cell == tag && (__s32)(tick - (__u32)(cell >> 32)) <= DEDUP_HELD_TICKS)
			return 1;
	}
	__u32 cur = b->cursor;
	b->cursor = cur + 1 < DEDUP_CELLS ? cur + 1 : 0;
	b->cell[cur < DEDUP_CELLS ? cur : 0] = (__u64)tick << 32 | tag;
	return 0;
}

static __always_inline void send(struct state_counters *sc, struct flow_event *e, __u8 type)
{
	e->type = type;
	if (bpf_ringbuf_output(&events, e, sizeof(*e), 0)) {
		sc->events_lost++;
		if (type == EV_DONE)
			sc->records_lost++;
	}
}

#define SENT_DONE 1
#define SENT_START 2
#define SENT_END 4
#define SENT_INTERIM 8
#define SENT_ANSWERED 16

/* tick raises the clock to now and returns it. The store is plain: a CPU
 * with an earlier time may undo another's until the next packet, which
 * live (where every CPU reads one monotonic clock) makes the clock behind
 * by a packet's time at most; a replay runs on one CPU. */
static __always_inline __s64 tick(__s64 now)
{
	__u32 zero = 0;
	struct clock *c = bpf_map_lookup_elem(&clock, &zero);
	if (!c)
		return now;
	if (c->set && c->now > now)
		return c->now;
	c->now = now;
	c->set = 1;
	return now;
}

/* state_packet takes the frame into its flow's cell and returns 1, or
 * returns 2 for a frame it leaves to user space (one that does not parse
 * here, a tunnel, a TCP packet without its header), 3 for a fragment,
 * which it leaves to user space to reassemble and run through it again,
 * 0 for a new flow the map has no room for. */
static __always_inline int state_packet(struct pkt *k, __u64 now)
{
	__u32 zero = 0;
	struct state_counters *sc = bpf_map_lookup_elem(&state_stats, &zero);
	struct machine_tables *m = bpf_map_lookup_elem(&machine, &zero);
	struct state_buf *sb = bpf_map_lookup_elem(&state_buf, &zero);
	struct state_config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!sc || !m || !sb || !cfg)
		return 2;
	k->tmp = bpf_map_lookup_elem(&scratch, &zero);
	if (!k->tmp)
		return 2;
	sc->seen++;
	__s64 clk = tick(now);
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
		return 2;
	}
	if (p.encap) {
		sc->whole++;
		return 2;
	}
	/* User space reassembles fragments; a TCP packet without its header
	 * is its to count or leave out. */
	if (p.fragment != NOT_FRAGMENT || (p.proto == 6 && !p.has_tcp)) {
		sc->skipped++;
		return p.fragment != NOT_FRAGMENT ? 3 : 2;
	}
	rev = rev ? 1 : 0;
	/* The dedup stage's place: before anything counts the frame. */
	if (cfg->dedup_buckets && dedup_seen(cfg, dedup_print(k, &p, key, rev, cfg->payload_bytes), clk)) {
		sc->duplicates++;
		return 1;
	}
	__u16 flags = p.proto == 6 ? p.tcp_flags : 0;
	int data = p.payload_len > 0;
	int syn = (flags & (TCP_SYN | TCP_ACK | TCP_FIN | TCP_RST)) == TCP_SYN;
	struct flow_cell *c = bpf_map_lookup_elem(&cells, key);
	if (!c) {
		/* An empty cell (starts 0), filled under its lock below. If
		 * another CPU entered it first, this update fails and the
		 * lookup finds that one. */
		bpf_map_update_elem(&cells, key, sb->empty, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&cells, key);
		if (!c) {
			sc->insert_failed++;
			return 0;
		}
	}
	int sent = 0;
	__u8 why = 0;
	bpf_spin_lock(&c->lock);
	struct flow_state *s = &c->s;
	__u8 info = m->info[s->machine & (MAX_VALUES - 1)];
	/* flowtable.Table's order: an ended flow's linger runs out before
	 * the packet (Advance), then a reuse, then an idle timeout. */
	if (s->starts == 0) {
	} else if (s->ended) {
		if (clk - (__s64)s->since >= cfg->linger)
			why = RS_LINGER;
		else if ((info & INFO_CLOSED) && syn)
			why = RS_REUSED;
	} else if ((info & INFO_CLOSED) && syn) {
		why = RS_REUSED;
	} else if (clk - (__s64)s->since >= (s->attempt ? cfg->attempt : (info & INFO_IDLE_NEW) ? cfg->idle_new : cfg->idle_est)) {
		why = RS_IDLE;
	}
	int first = s->starts == 0 || why;
	/* An attempt past its delay: the flow table writes it and starts
	 * another flow at this packet, while the ACSM goes on from the
	 * machine's value (it forgets only ended flows), as here. */
	int goes_on = why == RS_IDLE && s->attempt;
	int is_orig = rev == !!(info & INFO_ORIG_IS_DST);
	__u16 n = step(m, s->machine, is_orig, data, flags);
	if (first) {
		if (why) {
			sb->old.reason = why;
			sb->old.s = *s;
			sent |= SENT_DONE;
		}
		__u32 starts = s->starts + 1;
		__builtin_memset(s, 0, sizeof(*s));
		s->starts = starts;
		s->first = now;
		s->first_seq = p.seq;
		s->first_ack = p.ack;
		s->first_ipid = p.ip_id;
		s->first_flags = flags;
		int ends;
		__u16 v;
		if (goes_on) {
			v = n & ~TRANS_ENDS;
			ends = !!(n & TRANS_ENDS);
		} else {
			v = first_value(m, k, &p, rev, flags, data, &ends);
		}
		s->value = s->machine = v;
		sent |= SENT_START;
		if (ends) {
			s->ended = 1;
			sent |= SENT_END;
		}
	} else {
		s->machine = n & ~TRANS_ENDS;
		if (!s->ended) {
			/* The rules' half-open count learns here that the
			 * flow was answered, as a packet shard learns at the
			 * answer, not at the record. */
			if (!s->answered && (m->info[s->value & (MAX_VALUES - 1)] & INFO_S0) &&
			    !(m->info[s->machine & (MAX_VALUES - 1)] & INFO_S0)) {
				s->answered = 1;
				sent |= SENT_ANSWERED;
			}
			s->value = s->machine;
			if (n & TRANS_ENDS) {
				s->ended = 1;
				sent |= SENT_END;
			}
		}
	}
	/* flowtable.Table.Packet's attempt: set by a flow's first packet, a
	 * SYN without ACK at S0; kept while the flow stays at S0. */
	if (!s->ended) {
		int s0 = !!(m->info[s->value & (MAX_VALUES - 1)] & INFO_S0);
		s->attempt = s0 && (first ? p.proto == 6 && p.has_tcp && (flags & (TCP_SYN | TCP_ACK)) == TCP_SYN : s->attempt);
		if (!s->attempt || first)
			s->since = clk;
	} else if (sent & SENT_END) {
		s->since = clk;
	}
	int orig_is_dst = !!(m->info[s->machine & (MAX_VALUES - 1)] & INFO_ORIG_IS_DST);
	observe(&s->conn, &p, rev, orig_is_dst, first);
	s->last = now;
	if (rev)
		s->pkts[1]++;
	else
		s->pkts[0]++;
	if (p.proto == 6)
		s->anomalies |= flag_anomalies(flags);
	/* flowtable.Table.interim: a multiplication a packet, the division
	 * only when an event is due. */
	if (!s->ended && cfg->active_sec) {
		__s64 age = clk - (__s64)s->first;
		if (age >= (__s64)(__u32)(s->interim_at + cfg->active_sec) * 1000000000LL) {
			__u64 secs = (__u64)age / 1000000000ULL;
			s->interim_at = secs > 0xffffffffULL ? 0xffffffff : secs;
			sent |= SENT_INTERIM;
		}
	}
	if (sent & (SENT_START | SENT_END | SENT_INTERIM | SENT_ANSWERED)) {
		sb->ev.reason = 0;
		sb->ev.s = *s;
	}
	bpf_spin_unlock(&c->lock);
	sc->counted++;
	if (sent) {
		__builtin_memcpy(sb->ev.key, key, 40);
		if (sent & SENT_DONE) {
			__builtin_memcpy(sb->old.key, key, 40);
			sc->done++;
			send(sc, &sb->old, EV_DONE);
		}
		if (sent & SENT_START) {
			sc->new_flows++;
			send(sc, &sb->ev, EV_START);
		}
		if (sent & SENT_ANSWERED) {
			sc->answered++;
			send(sc, &sb->ev, EV_ANSWERED);
		}
		if (sent & SENT_END) {
			sc->ended++;
			send(sc, &sb->ev, EV_END);
		}
		if (sent & SENT_INTERIM) {
			sc->interims++;
			send(sc, &sb->ev, EV_INTERIM);
		}
	}
	return 1;
}

/* The replay's program: the frame's first 8 bytes are its packet time.
 * It takes frames in several buffers (xdp.frags), so that a test run
 * takes a frame as long as GRO or TSO made it: the kernel puts the first
 * page's worth in the linear part and the rest in fragments. The parser
 * reads headers in the linear part only (data_end) and takes the frame's
 * length, which bounds the IP datagram, from bpf_xdp_get_buff_len. */
SEC("xdp.frags")
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
	k.len = bpf_xdp_get_buff_len(ctx);
	/* The verdict tells the replay which frames are user space's. */
	switch (state_packet(&k, now)) {
	case 1:
		return XDP_PASS;
	case 0:
		return XDP_DROP;
	}
	return XDP_TX;
}

/* Referenced so that their types are in the object's BTF, which bpf2go
 * turns into Go types. */
const struct flow_event *unused_flow_event __attribute__((unused));
const struct state_counters *unused_state_counters __attribute__((unused));
const struct state_config *unused_state_config __attribute__((unused));
const struct dedup_bucket *unused_dedup_bucket __attribute__((unused));

/* The live programs, at XDP and TC. */
#include "include/statelive.h"
