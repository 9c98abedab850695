/* mac_learn.c — learning bridge: MAC table in an LRU hash.
 *
 * Every frame's source MAC (per VLAN: the 802.1Q VID, 0 when untagged) is
 * learned in `fdb` with the ingress interface and a frame count; a station
 * that moves gets its interface overwritten. Frames with a group destination
 * (multicast/broadcast bit) pass (flooded by the stack). A unicast destination
 * known on the ingress interface drops (it is local to the segment), one known
 * elsewhere is redirected there (bpf_redirect), an unknown one passes. Frames
 * with a group source address drop without being learned.
 *
 * Maps: fdb (LRU_HASH struct fdb_key -> struct fdb_val). Helpers:
 * map_lookup_elem, map_update_elem, redirect.
 */
#include "corpus.h"

struct fdb_key {
	__u8 mac[ETH_ALEN];
	__u16 vid;
};

struct fdb_val {
	__u32 ifindex;
	__u32 frames;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct fdb_key);
	__type(value, struct fdb_val);
} fdb SEC(".maps");

SEC("xdp")
int mac_learn(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 in = ctx->ingress_ifindex;
	struct fdb_key k = {};

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	if (eth->h_source[0] & 1)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETHTYPE_VLAN)) {
		__be16 *tci = (void *)(eth + 1);
		if ((void *)(tci + 1) > end)
			return XDP_DROP;
		k.vid = bpf_ntohs(*tci) & 0xfff;
	}

	__builtin_memcpy(k.mac, eth->h_source, ETH_ALEN);
	struct fdb_val *v = bpf_map_lookup_elem(&fdb, &k);
	if (v) {
		v->frames++;
		v->ifindex = in;
	} else {
		struct fdb_val nv = { .ifindex = in, .frames = 1 };
		bpf_map_update_elem(&fdb, &k, &nv, BPF_ANY);
	}

	if (eth->h_dest[0] & 1)
		return XDP_PASS;
	__builtin_memcpy(k.mac, eth->h_dest, ETH_ALEN);
	struct fdb_val *d = bpf_map_lookup_elem(&fdb, &k);
	if (!d)
		return XDP_PASS;
	if (d->ifindex == in)
		return XDP_DROP;
	return bpf_redirect(d->ifindex, 0);
}
