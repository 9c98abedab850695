/* xdp_router.c — IPv4 longest-prefix-match router.
 *
 * Looks the IPv4 destination address up in an LPM trie of routes. On a hit the
 * packet is forwarded back out of the same port: TTL is decremented with an
 * incremental header-checksum update (RFC 1624, as the kernel's
 * ip_decrease_ttl), both MAC addresses are rewritten from the route's next hop
 * entry, and the program returns XDP_TX.
 *
 * Branches:
 *   frame shorter than 14 bytes                 -> XDP_DROP  (stats[3])
 *   not IPv4 (incl. VLAN-tagged)                -> XDP_PASS  (stats[3])
 *   IPv4 header truncated, or IHL < 5           -> XDP_DROP  (stats[3])
 *   TTL <= 1                                    -> XDP_DROP  (stats[2]); the
 *                                                  stack would send ICMP time exceeded
 *   no matching route                           -> XDP_PASS  (stats[1])
 *   route found                                 -> TTL-1, checksum, MACs, XDP_TX (stats[0])
 *
 * Maps:
 *   routes       — LPM_TRIE (BPF_F_NO_PREALLOC), key {__u32 prefixlen; __be32 addr},
 *                  value struct nexthop {__u8 dmac[6]; __u8 smac[6]}
 *   router_stats — ARRAY, 4 x __u64: 0 forwarded, 1 no route, 2 TTL expired, 3 other
 * Helpers: bpf_map_lookup_elem.
 */
#include "xdp_common.h"

struct lpm_v4_key {
	__u32 prefixlen;
	__be32 addr;
};

struct nexthop {
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, struct lpm_v4_key);
	__type(value, struct nexthop);
} routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} router_stats SEC(".maps");

enum { RS_FWD = 0, RS_NOROUTE = 1, RS_TTL = 2, RS_OTHER = 3 };

static __always_inline int stat(__u32 idx, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&router_stats, &idx);

	if (c)
		__sync_fetch_and_add(c, 1);
	return verdict;
}

SEC("xdp")
int xdp_router(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct nexthop *nh;
	struct lpm_v4_key key;
	__u32 check;

	if ((void *)(eth + 1) > data_end)
		return stat(RS_OTHER, XDP_DROP);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return stat(RS_OTHER, XDP_PASS);

	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl < 5)
		return stat(RS_OTHER, XDP_DROP);
	if (ip->ttl <= 1)
		return stat(RS_TTL, XDP_DROP);

	key.prefixlen = 32;
	key.addr = ip->daddr;
	nh = bpf_map_lookup_elem(&routes, &key);
	if (!nh)
		return stat(RS_NOROUTE, XDP_PASS);

	/* ip_decrease_ttl(): TTL is the high byte of the TTL/protocol word. */
	check = ip->check;
	check += bpf_htons(0x0100);
	ip->check = (__u16)(check + (check >= 0xFFFF));
	ip->ttl--;

	__builtin_memcpy(eth->h_dest, nh->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, nh->smac, ETH_ALEN);
	return stat(RS_FWD, XDP_TX);
}
