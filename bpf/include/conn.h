/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* conn.log's fields of a flow as the kernel flow state keeps them: a port
 * of pipeline/flowtable's Conn.Observe (connfields.go), rule for rule, in
 * Conn's own memory layout, so that user space reads the bytes as a Conn
 * (flowtable.ConnFromBytes) and one Fill spells the record from either.
 * Sequence numbers are compared modulo 2^32, as the Go code's int32
 * casts do. Every function here runs with the cell's spin lock held: no
 * helper calls, and loops bounded for the verifier. */
#ifndef FLOWMON_CONN_H
#define FLOWMON_CONN_H

#include "parse.h"

/* flowtable.connSide, 64 bytes. */
struct conn_side {
	__u64 ip_bytes;
	__u64 top, acked;
	__u32 start;
	__u32 contig, hole;
	__u32 missed;
	__u32 fin_seq;
	__u16 last_syn, last_fin, last_rst;
	__u16 pad;
	__u32 rxmt;
	__u16 win0, gaps;
	__u8 flags;
	__u8 pad2;
	__u16 tcp_flags;
};

/* flowtable.Conn, 152 bytes. */
struct conn_fields {
	struct conn_side side[2];
	__u64 hist[2];
	__u8 nhist;
	__u8 pad;
	__u16 seen;
	__u8 orig_is_dst;
	__u8 pad2[3];
};

_Static_assert(sizeof(struct conn_side) == 64, "conn_side is flowtable.connSide");
_Static_assert(sizeof(struct conn_fields) == 152, "conn_fields is flowtable.Conn");

/* sideFlags. */
#define SIDE_ACTIVE 1
#define SIDE_SYN 2
#define SIDE_FIN 4
#define SIDE_RST 8

/* History letter codes: histLetters' indexes. */
#define H_S 1
#define H_H 2
#define H_A 3
#define H_D 4
#define H_F 5
#define H_R 6
#define H_I 7
#define H_Q 8
#define H_T 9
#define H_W 10
#define H_G 11
#define H_FLIP 12
#define HIST_RESP H_FLIP
#define HIST_MAX 24 /* record.HistoryMax */

#define TOO_LARGE_DELTA (1 << 20)

#define CF_FIN 0x01
#define CF_SYN 0x02
#define CF_RST 0x04
#define CF_ACK 0x10

static __always_inline void add_letter(struct conn_fields *c, __u8 code, int is_orig)
{
	if (code != H_FLIP && !is_orig)
		code += HIST_RESP;
	__u8 n = c->nhist;
	if (n >= HIST_MAX)
		return;
	__u32 sh = (n % 12) * 5;
	if (n >= 12)
		c->hist[1] |= (__u64)code << sh;
	else
		c->hist[0] |= (__u64)code << sh;
	c->nhist = n + 1;
}

/* check_bit records letter code the first time the role sends it, keyed
 * by bit_code's seen bit, and says whether it had been recorded before. */
static __always_inline int check_bit(struct conn_fields *c, __u8 bit_code, __u8 code, int is_orig)
{
	__u16 bit = (__u16)1 << (bit_code - 1);
	if (!is_orig)
		bit <<= 8;
	if (c->seen & bit)
		return 1;
	c->seen |= bit;
	add_letter(c, code, is_orig);
	return 0;
}

static __always_inline int check(struct conn_fields *c, __u8 code, int is_orig)
{
	return check_bit(c, code, code, is_orig);
}

/* scaled records a letter at an event's 1st, 10th, 100th, ... time: a u32
 * has at most 10 decimal digits. */
static __always_inline void scaled(struct conn_fields *c, __u8 code, int is_orig, __u32 n)
{
	for (int i = 0; i < 10; i++) {
		if (n % 10 != 0 || n <= 1)
			break;
		n /= 10;
	}
	if (n == 1)
		add_letter(c, code, is_orig);
}

static __always_inline void conn_flip(struct conn_fields *c)
{
	add_letter(c, H_FLIP, 1);
}

static __always_inline __u32 max32(__u32 a, __u32 b)
{
	return (__s32)(a - b) > 0 ? a : b;
}

static __always_inline __u32 data_end(const struct conn_side *s)
{
	__u32 e = (__u32)s->top;
	if ((s->flags & SIDE_FIN) && e == s->fin_seq)
		e--;
	return e;
}

static __always_inline void sent(struct conn_side *s, __u32 from, __u32 to)
{
	if ((__s32)(from - s->contig) <= 0) {
		if ((__s32)(to - s->contig) > 0)
			s->contig = to;
		if (s->hole != 0 && (__s32)(s->contig - s->hole) >= 0) {
			s->contig = max32(s->contig, data_end(s));
			s->hole = 0;
		}
	} else if (s->hole == 0 || (__s32)(from - s->hole) < 0) {
		s->hole = from;
	}
}

/* gap: the acker acknowledged s's data up to ack. s_is_orig is s's role. */
static __always_inline void gap(struct conn_fields *c, struct conn_side *s, const struct conn_side *acker, __u32 ack,
				int s_is_orig)
{
	if ((s->flags & SIDE_FIN) && (__s32)(ack - s->fin_seq) >= 0)
		ack = s->fin_seq - 1;
	if ((__s32)(ack - s->contig) <= 0)
		return;
	__u32 end = ack;
	if (s->hole != 0 && (__s32)(s->hole - ack) < 0)
		end = s->hole;
	__u32 n = end - s->contig;
	if (end == s->hole) {
		s->contig = max32(ack, data_end(s));
		s->hole = 0;
	} else {
		s->contig = ack;
	}
	int clean = (s->flags & acker->flags & SIDE_SYN) && !((s->flags | acker->flags) & SIDE_RST);
	if (!clean)
		return;
	s->missed += n;
	if (s->gaps < 0xffff) {
		s->gaps++;
		scaled(c, H_G, s_is_orig, s->gaps);
	}
}

static __always_inline void tcp_letters(struct conn_fields *c, __u16 f, struct conn_side *s, __u32 rel, __u32 n,
					int is_orig)
{
	int syn = !!(f & CF_SYN), fin = !!(f & CF_FIN), rst = !!(f & CF_RST);
	switch (syn + fin + rst) {
	case 0:
		if (n > 0)
			check(c, H_D, is_orig);
		else if (f & CF_ACK)
			check(c, H_A, is_orig);
		break;
	case 1:
		if (syn) {
			__u8 code = (f & CF_ACK) ? H_H : H_S;
			if (check_bit(c, H_S, code, is_orig) && (__u16)rel != s->last_syn)
				add_letter(c, code, is_orig);
			s->last_syn = (__u16)rel;
		} else if (fin) {
			if (check(c, H_F, is_orig) && (__u16)(rel + n) != s->last_fin)
				add_letter(c, H_F, is_orig);
			s->last_fin = (__u16)(rel + n);
		} else {
			if (check(c, H_R, is_orig) && (__u16)rel != s->last_rst)
				add_letter(c, H_R, is_orig);
			s->last_rst = (__u16)rel;
		}
		break;
	default:
		if (fin && rst)
			check(c, H_I, is_orig);
		else
			check(c, H_Q, is_orig);
	}
}

/* conn_tcp is Conn.tcp: the packet p went from side s to peer. peer_is_orig
 * is peer's role (not is_orig, unless both sides have one role). */
static __always_inline void conn_tcp(struct conn_fields *c, const struct parsed *p, struct conn_side *s,
				     struct conn_side *peer, int is_orig, int peer_is_orig)
{
	__u16 f = p->tcp_flags;
	int syn = !!(f & CF_SYN), fin = !!(f & CF_FIN), rst = !!(f & CF_RST), ack = !!(f & CF_ACK);
	__u32 n = p->payload_len;
	__u32 seg = n;
	if (syn)
		seg++;
	if (fin)
		seg++;
	if (rst)
		seg -= n;
	__u32 seq = p->seq;
	__u32 end = seq + seg;

	if (!(s->flags & SIDE_ACTIVE)) {
		s->flags |= SIDE_ACTIVE;
		if (syn) {
			s->start = seq;
			s->top = seg;
		} else {
			s->start = seq - 1;
			s->top = 1;
		}
		s->acked = 0;
		s->contig = 1;
		s->hole = 0;
	} else if (syn && seq != s->start && !(s->flags & (SIDE_FIN | SIDE_RST))) {
		s->start = seq;
		s->top = seg;
		s->acked = 0;
		s->contig = 1;
		s->hole = 0;
	}
	__u32 rel = seq - s->start;

	tcp_letters(c, f, s, rel, n, is_orig);

	if (p->window == 0 && !rst && !(peer->flags & SIDE_FIN) && !(s->flags & SIDE_RST)) {
		if (s->win0 < 0xffff) {
			s->win0++;
			scaled(c, H_W, is_orig, s->win0);
		}
	}
	if (fin)
		s->fin_seq = rel + seg;

	__u32 rel_ack = 0;
	int ack_ok = ack && (peer->flags & SIDE_ACTIVE) && (__s32)(p->ack - peer->start) >= 0;
	if (ack_ok) {
		rel_ack = p->ack - peer->start;
		__u32 cur = peer->start + (__u32)peer->acked;
		__s32 d = (__s32)(p->ack - cur);
		if (!rst && !(p->ack == 0 && d > TOO_LARGE_DELTA) && d > 0)
			peer->acked += (__u64)d;
	}

	__u32 cur = s->start + (__u32)s->top;
	__s32 d = (__s32)(end - cur);
	if ((syn || rst) && (d > TOO_LARGE_DELTA || d < -TOO_LARGE_DELTA)) {
	} else if (fin && s->top == 1) {
		s->top = (__u32)(end - s->start);
	} else if (s->flags & SIDE_RST) {
	} else if (d > 0) {
		s->top += (__u64)d;
	} else if (n > 0) {
		s->rxmt++;
		scaled(c, H_T, is_orig, s->rxmt);
	}

	if (syn)
		s->flags |= SIDE_SYN;
	if (fin)
		s->flags |= SIDE_FIN;
	if (rst)
		s->flags |= SIDE_RST;

	if (n > 0 && !rst) {
		__u32 data = rel;
		if (syn)
			data++;
		sent(s, data, data + n);
	}
	if (ack_ok)
		gap(c, peer, s, rel_ack, peer_is_orig);
}

/* observe is Conn.Observe of the packet p, sent from the key's Dst when
 * rev: orig_is_dst is the flow's orientation after it (the machine's
 * value), first says it started the flow. */
static __always_inline void observe(struct conn_fields *c, const struct parsed *p, int rev, int orig_is_dst, int first)
{
	if (first) {
		c->orig_is_dst = orig_is_dst;
		if (rev != orig_is_dst)
			conn_flip(c);
	}
	int is_orig = rev == c->orig_is_dst;
	/* Branches, not an index: each side's pointer is then a constant
	 * offset into the cell. */
	struct conn_side *s = rev ? &c->side[1] : &c->side[0];
	struct conn_side *peer = rev ? &c->side[0] : &c->side[1];
	s->ip_bytes += p->ip_len;
	switch (p->proto) {
	case 6:
		if (p->has_tcp) {
			s->tcp_flags |= p->tcp_flags;
			/* The peer is side 1 when the sender is side 0. */
			conn_tcp(c, p, s, peer, is_orig, (!rev) == c->orig_is_dst);
		}
		break;
	case 17:
		s->top += p->payload_len;
		check(c, H_D, is_orig);
		break;
	case 1:
	case 58:
		s->top += p->payload_len;
		break;
	}
	if (!first && orig_is_dst != c->orig_is_dst) {
		conn_flip(c);
		c->orig_is_dst = orig_is_dst;
	}
}

#endif
