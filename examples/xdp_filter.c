/* xdp_filter.c — pass/drop by EtherType.
 *
 * Passes IPv4 (0x0800), IPv6 (0x86DD) and ARP (0x0806) frames and drops every
 * other EtherType. One 802.1Q (0x8100) or 802.1ad (0x88A8) tag is skipped and
 * the inner EtherType decides; a second stacked tag is not parsed, so QinQ
 * frames (inner EtherType 0x8100) are dropped.
 *
 * Branches:
 *   frame shorter than 14 bytes                    -> XDP_DROP  (stats[3])
 *   tagged frame shorter than 18 bytes             -> XDP_DROP  (stats[3])
 *   untagged IPv4 / IPv6 / ARP                     -> XDP_PASS  (stats[0])
 *   tagged IPv4 / IPv6 / ARP                       -> XDP_PASS  (stats[1]) and
 *       4 bytes of XDP metadata are prepended with bpf_xdp_adjust_meta(-4):
 *       a __u32 = (VLAN id) | (class << 16), class 1 = IPv4, 2 = IPv6, 3 = ARP;
 *       if adjust_meta fails the frame still passes without metadata
 *   any other EtherType (tagged or not)            -> XDP_DROP  (stats[2])
 *
 * Maps: filter_stats — PERCPU_ARRAY, 4 entries, key __u32, value __u64
 *       (0 = passed untagged, 1 = passed tagged, 2 = dropped by type, 3 = runt).
 * Helpers: bpf_map_lookup_elem, bpf_xdp_adjust_meta.
 */
#include "xdp_common.h"

enum { ST_PASS = 0, ST_PASS_VLAN = 1, ST_DROP_TYPE = 2, ST_DROP_RUNT = 3 };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} filter_stats SEC(".maps");

static __always_inline int count(__u32 idx, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&filter_stats, &idx);

	if (c)
		*c += 1;
	return verdict;
}

static __always_inline __u32 ether_class(__u16 proto)
{
	switch (proto) {
	case ETH_P_IP:
		return 1;
	case ETH_P_IPV6:
		return 2;
	case ETH_P_ARP:
		return 3;
	default:
		return 0;
	}
}

SEC("xdp")
int xdp_filter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u16 proto;
	__u32 cls, meta_word;

	if ((void *)(eth + 1) > data_end)
		return count(ST_DROP_RUNT, XDP_DROP);

	proto = bpf_ntohs(eth->h_proto);
	if (proto != ETH_P_8021Q_ && proto != ETH_P_8021AD_) {
		if (!ether_class(proto))
			return count(ST_DROP_TYPE, XDP_DROP);
		return count(ST_PASS, XDP_PASS);
	}

	struct vlan_tag *tag = (void *)(eth + 1);
	if ((void *)(tag + 1) > data_end)
		return count(ST_DROP_RUNT, XDP_DROP);
	cls = ether_class(bpf_ntohs(tag->inner_proto));
	if (!cls)
		return count(ST_DROP_TYPE, XDP_DROP);

	meta_word = (bpf_ntohs(tag->tci) & 0x0fff) | (cls << 16);
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(__u32)) == 0) {
		__u32 *meta = (void *)(long)ctx->data_meta;
		void *start = (void *)(long)ctx->data;

		if ((void *)(meta + 1) <= start)
			*meta = meta_word;
	}
	return count(ST_PASS_VLAN, XDP_PASS);
}
