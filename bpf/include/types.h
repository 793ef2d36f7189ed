/* The few kernel types and constants the capture program uses, copied from
 * the kernel's UAPI headers (linux/bpf.h, linux/pkt_cls.h), so that
 * compiling it needs no kernel headers for the build machine's
 * architecture: the objects for both byte orders come from one source. */
#ifndef FLOWMON_TYPES_H
#define FLOWMON_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u32 __wsum;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LPM_TRIE = 11,
	BPF_MAP_TYPE_ARRAY_OF_MAPS = 12,
	BPF_MAP_TYPE_RINGBUF = 27,
};

#define BPF_F_NO_PREALLOC (1U << 0)

/* bpf_map_update_elem flags. */
#define BPF_NOEXIST 1

/* A lock in a map value (bpf_spin_lock, bpf_spin_unlock). */
struct bpf_spin_lock {
	__u32 val;
};

/* bpf_ringbuf_submit flags and bpf_ringbuf_query's question. */
#define BPF_RB_NO_WAKEUP (1ULL << 0)
#define BPF_RB_FORCE_WAKEUP (1ULL << 1)
#define BPF_RB_AVAIL_DATA 0

enum xdp_action {
	XDP_ABORTED = 0,
	XDP_DROP,
	XDP_PASS,
	XDP_TX,
};

/* TC_ACT_UNSPEC is TCX_NEXT: the next program, or the default action. */
#define TC_ACT_UNSPEC (-1)

struct xdp_md {
	__u32 data;
	__u32 data_end;
	__u32 data_meta;
	__u32 ingress_ifindex;
	__u32 rx_queue_index;
	__u32 egress_ifindex;
};

/* The leading fields of struct __sk_buff, up to the ones read here; the
 * verifier rewrites each access by its offset. */
struct __sk_buff {
	__u32 len;
	__u32 pkt_type;
	__u32 mark;
	__u32 queue_mapping;
	__u32 protocol;
	__u32 vlan_present;
	__u32 vlan_tci;
	__u32 vlan_proto;
	__u32 priority;
	__u32 ingress_ifindex;
	__u32 ifindex;
	__u32 tc_index;
	__u32 cb[5];
	__u32 hash;
	__u32 tc_classid;
	__u32 data;
	__u32 data_end;
	__u32 napi_id;
};

#endif
