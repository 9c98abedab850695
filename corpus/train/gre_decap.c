/* gre_decap.c — GRE-in-IPv4 tunnel termination.
 *
 * Untagged IPv4 packets with protocol 47 and a 20-byte outer header carry a
 * GRE header (RFC 2784/2890): version 0, no routing bit, optional checksum
 * (C, +4 bytes), key (K, +4) and sequence number (S, +4). A keyed tunnel must
 * have its key in `gre_keys` (else drop), a key-less one is accepted only when
 * `gre_keys` holds key 0. The inner protocol must be IPv4 or IPv6 (else drop).
 * The outer IP and GRE headers are removed, the Ethernet header kept with the
 * inner EtherType, and the packet passes; the tunnel's packet count is kept
 * in the key's map value. Other traffic passes; malformed GRE drops.
 *
 * Maps: gre_keys (HASH be32 key -> u64 count). Helpers: map_lookup_elem,
 * xdp_adjust_head.
 */
#include "corpus.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} gre_keys SEC(".maps");

#define GRE_C 0x80
#define GRE_R 0x40
#define GRE_K 0x20
#define GRE_S 0x10

SEC("xdp")
int gre_decap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETHTYPE_IP))
		return XDP_PASS;
	if ((void *)(ip + 1) > end)
		return XDP_DROP;
	if (ip->protocol != P_GRE)
		return XDP_PASS;
	if (ip->ihl != 5)
		return XDP_DROP;

	__u8 *gre = (void *)(ip + 1);
	if (gre + 4 > (__u8 *)end)
		return XDP_DROP;
	__u8 f0 = gre[0], f1 = gre[1];
	if ((f0 & (GRE_R | 0x0f)) || (f1 & 0x07))
		return XDP_DROP;
	__u16 inner = ((__u16)gre[2] << 8) | gre[3];
	if (inner != ETHTYPE_IP && inner != ETHTYPE_IP6)
		return XDP_DROP;

	__u32 len = 4;
	if (f0 & GRE_C)
		len += 4;
	__u32 key = 0;
	if (f0 & GRE_K) {
		__u8 *k = gre + len;
		if (k + 4 > (__u8 *)end)
			return XDP_DROP;
		key = *(__u32 *)k;
		len += 4;
	}
	if (f0 & GRE_S)
		len += 4;
	if (gre + len > (__u8 *)end)
		return XDP_DROP;

	__u64 *count = bpf_map_lookup_elem(&gre_keys, &key);
	if (!count)
		return XDP_DROP;
	__sync_fetch_and_add(count, 1);

	/* New Ethernet header right before the inner packet. */
	__u32 strip = sizeof(struct iphdr) + len;
	struct ethhdr *neweth = (void *)eth + strip;
	if ((void *)(neweth + 1) > end)
		return XDP_DROP;
	struct ethhdr copy = *eth;
	__builtin_memcpy(neweth->h_dest, copy.h_dest, ETH_ALEN);
	__builtin_memcpy(neweth->h_source, copy.h_source, ETH_ALEN);
	neweth->h_proto = bpf_htons(inner);
	if (bpf_xdp_adjust_head(ctx, strip))
		return XDP_ABORTED;
	return XDP_PASS;
}
