/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The kernel flow state's live programs, at XDP and at TC ingress and
 * egress: each frame goes through state_packet at the kernel's clock
 * (bpf_ktime_get_ns, CLOCK_MONOTONIC: user space moves the cells' times
 * to the wall clock by the offset it measures), and a frame state_packet
 * leaves to user space (a tunnel, a fragment, a link layer or a frame the
 * parser leaves) goes up whole through the frames ring, as capture.c
 * hands its tunnels up (handup.h), for the Go decoder and the shards.
 * The frame always goes on (handup.h's HOOKS): flowmon observes, it
 * never drops.
 *
 * One frames ring serves every CPU: the frames it carries are few (the
 * flows' packets stay in the cells), and one reader keeps a datagram's
 * fragments and a tunnel's carriers together for user space without the
 * program parsing a frame twice to pick a ring by its addresses.
 *
 * flowstate.c includes this file after state_packet. */
#ifndef FLOWMON_STATELIVE_H
#define FLOWMON_STATELIVE_H

#include "handup.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} frames SEC(".maps");

/* What user space sets: wake the frames' reader once the ring holds this
 * many bytes (below it the reader finds them at its poll's timeout). */
struct frame_config {
	__u32 wakeup_bytes;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame_config);
} frame_settings SEC(".maps");

/* Per CPU: the frames handed up, and those the full ring refused. */
struct frame_counters {
	__u64 handed;
	__u64 lost;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame_counters);
} frame_stats SEC(".maps");

/* live_packet runs the frame through its flow's cell and hands it up
 * whole when state_packet leaves it to user space. A fragment wakes the
 * reader at once: its datagram comes back (the replay program, run by
 * user space) into a cell that may be new, and the sooner it does, the
 * less likely the flow's answer comes first and orients the flow. */
static __always_inline void live_packet(void *ctx, int xdp, struct pkt *k, __u32 wire, __u32 ifindex, __u8 dir,
					__u8 vlans)
{
	int r = state_packet(k, bpf_ktime_get_ns());
	if (r != 2 && r != 3)
		return;
	__u32 zero = 0;
	struct frame_counters *fc = bpf_map_lookup_elem(&frame_stats, &zero);
	struct frame_config *cfg = bpf_map_lookup_elem(&frame_settings, &zero);
	if (!fc || !cfg)
		return;
	if (hand_up(ctx, xdp, k, &frames, r == 3 ? 0 : cfg->wakeup_bytes, wire, ifindex, dir, vlans))
		fc->lost++;
	else
		fc->handed++;
}

HOOKS(flowmon_state, live_packet)

const struct frame_counters *unused_frame_counters __attribute__((unused));
const struct frame_config *unused_frame_config __attribute__((unused));

#endif
