/* vlan_tag.c — 802.1Q access port: pop or keep tags, push the native VLAN.
 *
 * Tagged frames look up their VID in `vlan_mode`: 0 (absent) drops, 1 strips
 * the tag (the frame leaves untagged), 2 keeps it (trunk) and rewrites the PCP
 * to the configured class. Untagged frames get the native VID of `vlan_cfg[0]`
 * pushed when it is non-zero, and pass unchanged otherwise. Double-tagged
 * (802.1ad outer) frames are dropped.
 *
 * Maps: vlan_mode (ARRAY 4096 of u32), vlan_cfg (ARRAY 2 of u32: native VID,
 * trunk PCP). Helpers: map_lookup_elem, xdp_adjust_head.
 */
#include "corpus.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} vlan_mode SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} vlan_cfg SEC(".maps");

struct tag {
	__be16 tci;
	__be16 proto;
};

static __always_inline __u32 cfg(__u32 i)
{
	__u32 *v = bpf_map_lookup_elem(&vlan_cfg, &i);
	return v ? *v : 0;
}

SEC("xdp")
int vlan_tag(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return XDP_DROP;

	if (eth->h_proto == bpf_htons(0x88A8))
		return XDP_DROP;

	if (eth->h_proto == bpf_htons(ETHTYPE_VLAN)) {
		struct tag *t = (void *)(eth + 1);
		if ((void *)(t + 1) > end)
			return XDP_DROP;
		__u32 vid = bpf_ntohs(t->tci) & 0x0fff;
		__u32 *mode = bpf_map_lookup_elem(&vlan_mode, &vid);
		if (!mode || *mode == 0)
			return XDP_DROP;
		if (*mode == 2) {
			__u16 pcp = cfg(1) & 7;
			t->tci = bpf_htons((bpf_ntohs(t->tci) & 0x1fff) | (pcp << 13));
			return XDP_PASS;
		}
		/* Pop: slide the MAC addresses over the tag, then drop 4 bytes. */
		__be16 inner = t->proto;
		__u8 macs[12];
		__builtin_memcpy(macs, eth, 12);
		struct ethhdr *moved = (void *)eth + 4;
		__builtin_memcpy(moved, macs, 12);
		moved->h_proto = inner;
		if (bpf_xdp_adjust_head(ctx, 4))
			return XDP_ABORTED;
		return XDP_PASS;
	}

	__u32 native = cfg(0) & 0x0fff;
	if (!native)
		return XDP_PASS;
	if (bpf_xdp_adjust_head(ctx, -4))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)eth + sizeof(*eth) + sizeof(struct tag) > end)
		return XDP_ABORTED;
	__u8 *old = (void *)eth + 4;
	__u8 macs[12];
	__builtin_memcpy(macs, old, 12);
	__be16 proto = ((struct ethhdr *)old)->h_proto;
	__builtin_memcpy(eth, macs, 12);
	eth->h_proto = bpf_htons(ETHTYPE_VLAN);
	struct tag *t = (void *)(eth + 1);
	t->tci = bpf_htons(native);
	t->proto = proto;
	return XDP_PASS;
}
