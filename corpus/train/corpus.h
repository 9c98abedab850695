/* corpus.h — definitions shared by the training-corpus programs.
 *
 * The training corpus (see ../README.md) is kept apart from examples/ so that the
 * rewrite-rule library grown from it is never scored on the programs it came from;
 * this header is therefore separate from examples/xdp_common.h as well. Only
 * always-inline functions live here, so no object gains sub-programs from it.
 */
#ifndef LINERATE_CORPUS_H
#define LINERATE_CORPUS_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* ICMP echo header (RFC 792); <linux/icmp.h> drags in libc headers. */
struct echohdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be16 id;
	__be16 seq;
};

#define P_ICMP 1
#define P_TCP 6
#define P_UDP 17
#define P_GRE 47
#define P_ICMP6 58

#define ETHTYPE_IP 0x0800
#define ETHTYPE_ARP 0x0806
#define ETHTYPE_VLAN 0x8100
#define ETHTYPE_IP6 0x86DD
#define ETHTYPE_MPLS 0x8847

/* RFC 1624 incremental update of a one's-complement checksum `check` when a
 * 16-bit field changes from `old` to `new` (all in network order). */
static __always_inline __u16 csum_replace16(__u16 check, __u16 old, __u16 new)
{
	__u32 sum = (__u16)~check + (__u16)~old + (__u32)new;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* The same for a 32-bit field (an address), as two 16-bit halves. */
static __always_inline __u16 csum_replace32(__u16 check, __u32 old, __u32 new)
{
	check = csum_replace16(check, (__u16)old, (__u16)new);
	return csum_replace16(check, (__u16)(old >> 16), (__u16)(new >> 16));
}

char LICENSE[] SEC("license") = "GPL";

#endif
