/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* A packet's record as the capture program writes it, and a frame
 * handed up whole: the record (reason R_RAW) and the frame's first bytes
 * after it, which user space decodes as it decodes a frame it captured.
 * capture.c hands up the tunnels and the link layers the parser leaves;
 * flowstate.c's live programs the frames state_packet leaves to user
 * space. Both write the same sample, so bpf/source reads either ring
 * with one decoder. */
#ifndef FLOWMON_HANDUP_H
#define FLOWMON_HANDUP_H

#include "parse.h"

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


/* hand_up writes the frame's first bytes (RAW_MAX at most) after a record
 * of reason R_RAW into ring: user space decodes them as it decodes a
 * frame it captured. ctx is the program's context, xdp says which. The
 * reader is woken as the unread bytes cross wake, or at once with wake
 * 0. */
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
	int cross = wake == 0 || (avail < wake && avail + sizeof(w->r) + n + 8 >= wake);
	return bpf_ringbuf_output(ring, w, sizeof(w->r) + n, cross ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* HOOKS(NAME, FN) defines a program's entry points, NAME_xdp and
 * NAME_tc_ingress and NAME_tc_egress, around
 * FN(ctx, xdp, k, wire, ifindex, dir, vlans): capture.c's and the kernel
 * flow state's live programs take a frame alike. At TC the kernel has
 * already taken the outer VLAN tag out of the frame (skb->vlan_tci): it
 * is counted, and its 4 bytes added to the wire length, as the AF_PACKET
 * source puts it back; headers outside the linear part are pulled in
 * first. The frame always goes on: XDP_PASS, and at TC TC_ACT_UNSPEC,
 * which lets the programs and filters after it run where TC_ACT_OK would
 * end the chain. */
#define HOOKS(NAME, FN)                                                                       \
	SEC("xdp")                                                                            \
	int NAME##_xdp(struct xdp_md *ctx)                                                    \
	{                                                                                     \
		struct pkt k = {                                                              \
			.data = (void *)(long)ctx->data,                                      \
			.end = (void *)(long)ctx->data_end,                                   \
		};                                                                            \
		k.len = k.end - k.data;                                                       \
		FN(ctx, 1, &k, k.len, ctx->ingress_ifindex, 0, 0);                            \
		return XDP_PASS;                                                              \
	}                                                                                     \
	static __always_inline int NAME##_tc(struct __sk_buff *skb, __u8 dir)                 \
	{                                                                                     \
		__u32 want = skb->len < 256 ? skb->len : 256;                                 \
		if (skb->data_end - skb->data < want)                                         \
			bpf_skb_pull_data(skb, want);                                         \
		struct pkt k = {                                                              \
			.data = (void *)(long)skb->data,                                      \
			.end = (void *)(long)skb->data_end,                                   \
		};                                                                            \
		k.len = k.end - k.data;                                                       \
		__u8 tagged = skb->vlan_present ? 1 : 0;                                      \
		FN(skb, 0, &k, skb->len + 4 * tagged, skb->ifindex, dir, tagged);             \
		return TC_ACT_UNSPEC;                                                         \
	}                                                                                     \
	SEC("tc")                                                                             \
	int NAME##_tc_ingress(struct __sk_buff *skb)                                          \
	{                                                                                     \
		return NAME##_tc(skb, 0);                                                     \
	}                                                                                     \
	SEC("tc")                                                                             \
	int NAME##_tc_egress(struct __sk_buff *skb)                                           \
	{                                                                                     \
		return NAME##_tc(skb, 1);                                                     \
	}

#endif
