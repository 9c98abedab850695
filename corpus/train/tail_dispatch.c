/* tail_dispatch.c — a parser that hands over to per-protocol programs by tail call.
 *
 * tail_dispatch skips up to two VLAN tags (802.1Q or 802.1ad, read byte by
 * byte), stores the network header's offset in 4 bytes of XDP metadata
 * (bpf_xdp_adjust_meta) and tail-calls slot 0 of `dispatch` for IPv4 and slot
 * 1 for IPv6; slot 2 (ARP) is empty, so ARP falls through and passes, as does
 * everything else. A truncated tag drops.
 * dispatch_v4 drops TTL 0, "land" packets (source == destination) and
 * fragments with offset 1 (RFC 1858), counts the rest per protocol in
 * `proto_hits` and passes them. dispatch_v6 drops hop limit 0 and multicast
 * sources and passes the rest. Both drop frames without the metadata (run
 * directly) or with a truncated header.
 *
 * Maps: dispatch (PROG_ARRAY 3: [0] dispatch_v4, [1] dispatch_v6),
 * proto_hits (ARRAY 256 of u64). Helpers: xdp_adjust_meta, tail_call,
 * map_lookup_elem.
 */
#include "corpus.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} proto_hits SEC(".maps");

/* The network header's offset from the metadata, bounded for the verifier. */
static __always_inline int l3_offset(struct xdp_md *ctx)
{
	void *meta = (void *)(long)ctx->data_meta;
	void *data = (void *)(long)ctx->data;

	if (meta + 4 > data)
		return -1;
	__u32 off = *(__u32 *)meta;
	if (off != 14 && off != 18 && off != 22)
		return -1;
	return off;
}

SEC("xdp")
int dispatch_v4(struct xdp_md *ctx)
{
	int off = l3_offset(ctx);
	if (off < 0)
		return XDP_DROP;
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + off;
	if ((void *)(ip + 1) > end)
		return XDP_DROP;
	if (ip->ttl == 0 || ip->saddr == ip->daddr)
		return XDP_DROP;
	if ((bpf_ntohs(ip->frag_off) & 0x1fff) == 1)
		return XDP_DROP;
	__u32 p = ip->protocol;
	__u64 *c = bpf_map_lookup_elem(&proto_hits, &p);
	if (c)
		(*c)++;
	return XDP_PASS;
}

SEC("xdp")
int dispatch_v6(struct xdp_md *ctx)
{
	int off = l3_offset(ctx);
	if (off < 0)
		return XDP_DROP;
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6 = data + off;
	if ((void *)(ip6 + 1) > end)
		return XDP_DROP;
	if (ip6->hop_limit == 0 || ip6->saddr.in6_u.u6_addr8[0] == 0xff)
		return XDP_DROP;
	return XDP_PASS;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__array(values, int(struct xdp_md *));
} dispatch SEC(".maps") = {
	.values = { [0] = (void *)&dispatch_v4, [1] = (void *)&dispatch_v6 },
};

SEC("xdp")
int tail_dispatch(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	__u32 off = 12;

	if (data + 14 > end)
		return XDP_DROP;
	__u16 type = (data[12] << 8) | data[13];
#pragma clang loop unroll(full)
	for (int i = 0; i < 2; i++) {
		if (type != ETHTYPE_VLAN && type != 0x88A8)
			break;
		off += 4;
		__u8 *t = data + off;
		if (t + 2 > end)
			return XDP_DROP;
		type = (t[0] << 8) | t[1];
	}
	off += 2;

	__u32 slot;
	if (type == ETHTYPE_IP)
		slot = 0;
	else if (type == ETHTYPE_IP6)
		slot = 1;
	else if (type == ETHTYPE_ARP)
		slot = 2;
	else
		return XDP_PASS;

	if (bpf_xdp_adjust_meta(ctx, -4))
		return XDP_ABORTED;
	void *meta = (void *)(long)ctx->data_meta;
	if (meta + 4 > (void *)(long)ctx->data)
		return XDP_ABORTED;
	*(__u32 *)meta = off;
	bpf_tail_call(ctx, &dispatch, slot);
	return XDP_PASS;
}
