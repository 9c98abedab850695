/* ttl_dec.c — router fast path: decrement the IPv4 TTL / IPv6 hop limit.
 *
 * Behind an optional 802.1Q tag, IPv4 packets with a 20..60 byte header have
 * their TTL decremented and the header checksum updated incrementally (the TTL
 * shares a 16-bit word with the protocol field); TTL 0 or 1 is dropped. IPv6
 * packets have their hop limit decremented (no checksum), 0 or 1 drops. The
 * frame goes back out (XDP_TX) with its MAC addresses swapped. Other frames
 * pass; truncated headers drop.
 *
 * Maps: none. Helpers: none.
 */
#include "corpus.h"

static __always_inline void swap_macs(struct ethhdr *eth)
{
	__u8 t[ETH_ALEN];

	__builtin_memcpy(t, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, t, ETH_ALEN);
}

SEC("xdp")
int ttl_dec(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *l3 = eth + 1;

	if (l3 > end)
		return XDP_DROP;
	__be16 proto = eth->h_proto;
	if (proto == bpf_htons(ETHTYPE_VLAN)) {
		if (l3 + 4 > end)
			return XDP_DROP;
		proto = *(__be16 *)(l3 + 2);
		l3 += 4;
	}

	if (proto == bpf_htons(ETHTYPE_IP)) {
		struct iphdr *ip = l3;
		if ((void *)(ip + 1) > end)
			return XDP_DROP;
		if (ip->ihl < 5 || (void *)ip + ip->ihl * 4 > end)
			return XDP_DROP;
		if (ip->ttl <= 1)
			return XDP_DROP;
		__u16 *word = (__u16 *)&ip->ttl;
		__u16 old = *word;
		ip->ttl--;
		ip->check = csum_replace16(ip->check, old, *word);
	} else if (proto == bpf_htons(ETHTYPE_IP6)) {
		struct ipv6hdr *ip6 = l3;
		if ((void *)(ip6 + 1) > end)
			return XDP_DROP;
		if (ip6->hop_limit <= 1)
			return XDP_DROP;
		ip6->hop_limit--;
	} else {
		return XDP_PASS;
	}
	swap_macs(eth);
	return XDP_TX;
}
