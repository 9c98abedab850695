/* xdp_common.h — small shared definitions for the linerate example programs.
 *
 * Only always-inline helpers live here (checksum folding, constants), so every
 * object stays self-contained: no extra sub-programs are introduced by this file.
 */
#ifndef LINERATE_XDP_COMMON_H
#define LINERATE_XDP_COMMON_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef IPPROTO_ICMP
#define IPPROTO_ICMP 1
#endif
#define IPPROTO_IPIP_ 4
#ifndef IPPROTO_TCP
#define IPPROTO_TCP 6
#endif
#ifndef IPPROTO_UDP
#define IPPROTO_UDP 17
#endif
#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_DEST 60

#define ETH_P_8021Q_ 0x8100
#define ETH_P_8021AD_ 0x88A8

/* VLAN tag as it follows the outer EtherType field. */
struct vlan_tag {
	__be16 tci;
	__be16 inner_proto;
};

/* Fold a 32-bit one's-complement sum into a 16-bit checksum (inverted). */
static __always_inline __u16 csum_fold32(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* Full checksum of a 20-byte IPv4 header (options not supported); the
 * header's check field must already be zero. */
static __always_inline __u16 ipv4_csum20(const struct iphdr *ip)
{
	const __u16 *w = (const __u16 *)ip;
	__u32 sum = 0;

#pragma clang loop unroll(full)
	for (int i = 0; i < 10; i++)
		sum += w[i];
	return csum_fold32(sum);
}

char LICENSE[] SEC("license") = "GPL";

#endif
