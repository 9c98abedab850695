/* icmp_echo.c — answer ICMP echo requests addressed to us.
 *
 * An untagged IPv4 ICMP echo request (type 8, code 0) to the address in
 * `icmp_cfg[0]` whose header is 20 bytes and not a fragment becomes the echo
 * reply in place: type 0 (ICMP checksum updated incrementally), addresses and
 * MACs swapped, TTL reset to 64 (IP checksum recomputed in full, word by word)
 * and sent back (XDP_TX). Echo requests to other addresses, other ICMP and
 * other traffic pass; fragments and IP options pass; truncated headers drop.
 * With `icmp_cfg[1]` non-zero, echo requests whose payload exceeds that many
 * bytes are dropped (ping-of-death guard).
 *
 * Maps: icmp_cfg (ARRAY 2 of u32). Helpers: map_lookup_elem.
 */
#include "corpus.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} icmp_cfg SEC(".maps");

static __always_inline __u32 cfg(__u32 i)
{
	__u32 *v = bpf_map_lookup_elem(&icmp_cfg, &i);
	return v ? *v : 0;
}

SEC("xdp")
int icmp_echo(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct echohdr *icmp = (void *)(ip + 1);

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETHTYPE_IP))
		return XDP_PASS;
	if ((void *)(ip + 1) > end)
		return XDP_DROP;
	if (ip->protocol != P_ICMP || ip->ihl != 5)
		return XDP_PASS;
	if (ip->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;
	if ((void *)(icmp + 1) > end)
		return XDP_DROP;
	if (icmp->type != 8 || icmp->code != 0)
		return XDP_PASS;
	if (ip->daddr != cfg(0))
		return XDP_PASS;
	__u32 limit = cfg(1);
	if (limit && bpf_ntohs(ip->tot_len) > limit + 28)
		return XDP_DROP;

	__u16 old = *(__u16 *)icmp;
	icmp->type = 0;
	icmp->checksum = csum_replace16(icmp->checksum, old, *(__u16 *)icmp);

	__be32 a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	ip->ttl = 64;
	ip->check = 0;
	__u32 sum = 0;
	__u16 *w = (__u16 *)ip;
#pragma clang loop unroll(full)
	for (int i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum += sum >> 16;
	ip->check = ~sum;

	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	return XDP_TX;
}
