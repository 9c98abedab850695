/* ndp_resp.c — IPv6 neighbour discovery responder (RFC 4861).
 *
 * An untagged IPv6 Neighbor Solicitation (ICMPv6 135, code 0, hop limit 255)
 * of exactly 32 bytes (the solicitation and one source link-layer address
 * option) whose ICMPv6 checksum verifies and whose target is in `ndp_table`
 * becomes the Neighbor Advertisement in place: type 136, Solicited and
 * Override flags, a target link-layer address option with the table's MAC,
 * IPv6 source = the target, destination = the solicitation's source, Ethernet
 * addresses from the requester and the table, checksum recomputed in full over
 * the pseudo-header; it goes back out (XDP_TX). A bad checksum, hop limit
 * other than 255 or a non-zero code drops. Solicitations from the unspecified
 * address (duplicate address detection), other lengths, unknown targets and
 * other traffic pass; truncated headers drop.
 *
 * Maps: ndp_table (HASH 16-byte IPv6 address -> MAC padded to 8). Helpers:
 * map_lookup_elem.
 */
#include "corpus.h"

struct mac8 {
	__u8 mac[ETH_ALEN];
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, struct in6_addr);
	__type(value, struct mac8);
} ndp_table SEC(".maps");

struct ns_msg {
	__u8 type;
	__u8 code;
	__u16 check;
	__be32 flags;
	struct in6_addr target;
	__u8 opt_type;
	__u8 opt_len;
	__u8 opt_mac[ETH_ALEN];
};

/* One's-complement sum of the pseudo-header and the 32-byte message. */
static __always_inline __u16 icmp6_sum(const struct ipv6hdr *ip6, const struct ns_msg *m)
{
	const __u16 *a = (const __u16 *)&ip6->saddr;
	const __u16 *w = (const __u16 *)m;
	__u32 sum = bpf_htons(32) + bpf_htons(P_ICMP6);

#pragma clang loop unroll(full)
	for (int i = 0; i < 16; i++)
		sum += a[i];
#pragma clang loop unroll(full)
	for (int i = 0; i < 16; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

SEC("xdp")
int ndp_resp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct ns_msg *m = (void *)(ip6 + 1);

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETHTYPE_IP6))
		return XDP_PASS;
	if ((void *)(ip6 + 1) > end)
		return XDP_DROP;
	if (ip6->nexthdr != P_ICMP6)
		return XDP_PASS;
	if ((void *)m + 4 > end)
		return XDP_DROP;
	if (m->type != 135)
		return XDP_PASS;
	if (m->code != 0 || ip6->hop_limit != 255)
		return XDP_DROP;
	if (ip6->payload_len != bpf_htons(32) || (void *)(m + 1) > end)
		return XDP_PASS;
	if (m->opt_type != 1 || m->opt_len != 1)
		return XDP_PASS;
	if (icmp6_sum(ip6, m) != 0xffff)
		return XDP_DROP;

	__u32 *s = (__u32 *)&ip6->saddr;
	if (!(s[0] | s[1] | s[2] | s[3]))
		return XDP_PASS;
	struct in6_addr target = m->target;
	struct mac8 *mine = bpf_map_lookup_elem(&ndp_table, &target);
	if (!mine)
		return XDP_PASS;

	ip6->daddr = ip6->saddr;
	ip6->saddr = target;
	ip6->hop_limit = 255;
	__builtin_memcpy(eth->h_dest, m->opt_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mine->mac, ETH_ALEN);
	m->type = 136;
	m->flags = bpf_htonl(0x60000000);
	m->opt_type = 2;
	__builtin_memcpy(m->opt_mac, mine->mac, ETH_ALEN);
	m->check = 0;
	m->check = ~icmp6_sum(ip6, m);
	return XDP_TX;
}
