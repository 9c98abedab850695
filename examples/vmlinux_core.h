/* vmlinux_core.h — a small hand-written vmlinux.h-style header for xdp_core.c.
 *
 * The way programs built against a generated vmlinux.h see kernel types: every
 * struct is preserve_access_index, so each field access becomes a CO-RE
 * relocation that the loader resolves against the running kernel's BTF. The
 * layouts here match Linux 6.x on x86-64 except where said.
 */
#ifndef LINERATE_VMLINUX_CORE_H
#define LINERATE_VMLINUX_CORE_H

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
typedef __u16 __sum16;
typedef __u32 __wsum;

enum bpf_map_type {
	BPF_MAP_TYPE_ARRAY = 2,
};

enum xdp_action {
	XDP_ABORTED = 0,
	XDP_DROP = 1,
	XDP_PASS = 2,
	XDP_TX = 3,
	XDP_REDIRECT = 4,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct xdp_md {
	__u32 data;
	__u32 data_end;
	__u32 data_meta;
	__u32 ingress_ifindex;
	__u32 rx_queue_index;
	__u32 egress_ifindex;
};

struct ethhdr {
	unsigned char h_dest[6];
	unsigned char h_source[6];
	__be16 h_proto;
};

/* The kernel keeps saddr and daddr inside an anonymous union (__struct_group);
 * declared flat here, they still match by name. `no_such_field` is not in the
 * kernel's struct iphdr: bpf_core_field_exists() of it is 0. */
struct iphdr {
	__u8 ihl : 4, version : 4;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__sum16 check;
	__be32 saddr;
	__be32 daddr;
	__u32 no_such_field;
};

/* A flavor: the ___old suffix is ignored when matching, so this is the
 * kernel's struct udphdr (the field order differs on purpose). */
struct udphdr___old {
	__be16 dest;
	__be16 source;
	__be16 len;
	__sum16 check;
};

#pragma clang attribute pop

#endif
