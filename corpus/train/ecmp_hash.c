/* ecmp_hash.c — equal-cost multipath forwarding with a flow hash.
 *
 * IPv4 and IPv6 packets (untagged) are hashed on addresses, protocol and, for
 * TCP/UDP, ports (a jhash-style final mix); the hash modulo the number of next
 * hops in the mutable global `nh_count` (.data) picks an entry of `nexthops`.
 * A next hop with ifindex 0 drops; otherwise the TTL / hop limit is
 * decremented (IPv4 checksum updated incrementally; 0 or 1 passes to the stack
 * for its ICMP error), the MACs are set from the entry, the global `forwarded`
 * (.bss) counts it and the packet is redirected to the entry's interface. With
 * no next hops, or for other traffic, it passes; truncated headers drop.
 *
 * Maps: nexthops (ARRAY 8 of struct nexthop), .data, .bss. Helpers:
 * map_lookup_elem, redirect.
 */
#include "corpus.h"

struct nexthop {
	__u32 ifindex;
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct nexthop);
} nexthops SEC(".maps");

volatile __u32 nh_count = 2;
__u64 forwarded;

static __always_inline __u32 rol32(__u32 w, int s)
{
	return (w << s) | (w >> (32 - s));
}

static __always_inline __u32 final_mix(__u32 a, __u32 b, __u32 c)
{
	c ^= b; c -= rol32(b, 14);
	a ^= c; a -= rol32(c, 11);
	b ^= a; b -= rol32(a, 25);
	c ^= b; c -= rol32(b, 16);
	a ^= c; a -= rol32(c, 4);
	b ^= a; b -= rol32(a, 14);
	c ^= b; c -= rol32(b, 24);
	return c;
}

static __always_inline __u32 ports_of(__u8 proto, void *l4, void *end)
{
	if ((proto == P_TCP || proto == P_UDP) && l4 + 4 <= end)
		return *(__u32 *)l4;
	return 0;
}

SEC("xdp")
int ecmp_hash(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 h;

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETHTYPE_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end)
			return XDP_DROP;
		__u32 ports = ports_of(ip->protocol, (void *)ip + ip->ihl * 4, end);
		h = final_mix(ip->saddr, ip->daddr ^ ip->protocol, ports);
	} else if (eth->h_proto == bpf_htons(ETHTYPE_IP6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			return XDP_DROP;
		__u32 *s = (__u32 *)&ip6->saddr, *d = (__u32 *)&ip6->daddr;
		__u32 a = s[0] ^ s[1] ^ s[2] ^ s[3];
		__u32 b = d[0] ^ d[1] ^ d[2] ^ d[3];
		h = final_mix(a, b ^ ip6->nexthdr, ports_of(ip6->nexthdr, ip6 + 1, end));
	} else {
		return XDP_PASS;
	}

	__u32 n = nh_count;
	if (n == 0 || n > 8)
		return XDP_PASS;
	__u32 idx = h % n;
	struct nexthop *nh = bpf_map_lookup_elem(&nexthops, &idx);
	if (!nh || nh->ifindex == 0)
		return XDP_DROP;

	if (eth->h_proto == bpf_htons(ETHTYPE_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end)
			return XDP_DROP;
		if (ip->ttl <= 1)
			return XDP_PASS;
		__u16 old = *(__u16 *)&ip->ttl;
		ip->ttl--;
		ip->check = csum_replace16(ip->check, old, *(__u16 *)&ip->ttl);
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			return XDP_DROP;
		if (ip6->hop_limit <= 1)
			return XDP_PASS;
		ip6->hop_limit--;
	}
	__builtin_memcpy(eth->h_dest, nh->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, nh->smac, ETH_ALEN);
	__sync_fetch_and_add(&forwarded, 1);
	return bpf_redirect(nh->ifindex, 0);
}
