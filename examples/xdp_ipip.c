/* xdp_ipip.c — IP-in-IP (protocol 4) encapsulation towards tunnel endpoints.
 *
 * IPv4 packets whose destination address has an entry in the tunnel map are
 * encapsulated: bpf_xdp_adjust_head(ctx, -20) makes room for an outer IPv4
 * header between the Ethernet header and the original (inner) IPv4 header.
 * The outer header is built on the stack (version 4, IHL 5, inner TOS, total
 * length = inner total length + 20, ID 0, DF, TTL 64, protocol 4, source and
 * destination from the tunnel entry), its checksum computed with
 * bpf_csum_diff, and written to the packet; the Ethernet header is rewritten
 * at the new packet start with the tunnel's MAC addresses. Then XDP_TX.
 *
 * Branches:
 *   not Ethernet+IPv4                                  -> XDP_PASS
 *   IPv4 header truncated / IHL < 5                    -> XDP_DROP
 *   already IP-in-IP (protocol 4)                      -> XDP_PASS (no nesting)
 *   inner total length > 65515 (outer would overflow)  -> XDP_DROP
 *   destination not in ipip_tunnels                    -> XDP_PASS
 *   bpf_xdp_adjust_head fails                          -> XDP_DROP
 *   encapsulated                                       -> XDP_TX
 *
 * Maps: ipip_tunnels — HASH, key __be32 inner destination, value struct tunnel
 *       {__be32 local; __be32 remote; __u8 dmac[6]; __u8 smac[6]}.
 * Helpers: bpf_map_lookup_elem, bpf_xdp_adjust_head, bpf_csum_diff.
 */
#include "xdp_common.h"

struct tunnel {
	__be32 local;
	__be32 remote;
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __be32);
	__type(value, struct tunnel);
} ipip_tunnels SEC(".maps");

SEC("xdp")
int xdp_ipip(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *inner, outer;
	struct tunnel *t;
	__be32 daddr;
	__u16 inner_len;
	__u8 tos;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	inner = (void *)(eth + 1);
	if ((void *)(inner + 1) > data_end || inner->ihl < 5)
		return XDP_DROP;
	if (inner->protocol == IPPROTO_IPIP_)
		return XDP_PASS;
	inner_len = bpf_ntohs(inner->tot_len);
	if (inner_len > 0xffff - sizeof(struct iphdr))
		return XDP_DROP;

	daddr = inner->daddr;
	t = bpf_map_lookup_elem(&ipip_tunnels, &daddr);
	if (!t)
		return XDP_PASS;
	tos = inner->tos;

	__builtin_memset(&outer, 0, sizeof(outer));
	outer.version = 4;
	outer.ihl = 5;
	outer.tos = tos;
	outer.tot_len = bpf_htons(inner_len + sizeof(struct iphdr));
	outer.frag_off = bpf_htons(0x4000); /* DF */
	outer.ttl = 64;
	outer.protocol = IPPROTO_IPIP_;
	outer.saddr = t->local;
	outer.daddr = t->remote;
	outer.check = csum_fold32((__u32)bpf_csum_diff(0, 0, (__be32 *)&outer, sizeof(outer), 0));

	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
		return XDP_DROP;

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	struct iphdr *oip = (void *)(eth + 1);
	if ((void *)(oip + 1) > data_end)
		return XDP_DROP;

	__builtin_memcpy(eth->h_dest, t->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, t->smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	__builtin_memcpy(oip, &outer, sizeof(outer));
	return XDP_TX;
}
