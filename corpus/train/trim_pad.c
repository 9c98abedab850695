/* trim_pad.c — verify IPv4 header checksums and trim Ethernet padding.
 *
 * Untagged IPv4 frames with a 20-byte header have the header checksum
 * verified with bpf_csum_diff (a wrong one drops, counted in `trim_stats[0]`).
 * A frame longer than 14 + the IP total length carries padding or trailing
 * junk: the excess is cut off with bpf_xdp_adjust_tail and added to
 * `trim_stats[1]`; a frame shorter than that drops (truncated). Total lengths
 * below 20 drop. The frame then passes; other traffic passes unchanged.
 *
 * Maps: trim_stats (ARRAY 2 of u64). Helpers: csum_diff, xdp_adjust_tail,
 * map_lookup_elem.
 */
#include "corpus.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} trim_stats SEC(".maps");

static __always_inline void add(__u32 i, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&trim_stats, &i);
	if (c)
		__sync_fetch_and_add(c, v);
}

SEC("xdp")
int trim_pad(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETHTYPE_IP))
		return XDP_PASS;
	if (ip->ihl != 5)
		return XDP_PASS;
	__s64 sum = bpf_csum_diff(0, 0, (__be32 *)ip, sizeof(*ip), 0);
	if (sum < 0)
		return XDP_ABORTED;
	__u32 s = sum;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	if (s != 0xffff) {
		add(0, 1);
		return XDP_DROP;
	}

	__u32 tot = bpf_ntohs(ip->tot_len);
	__u32 frame = end - data;
	if (tot < 20 || tot + 14 > frame)
		return XDP_DROP;
	__u32 excess = frame - (tot + 14);
	if (excess) {
		if (bpf_xdp_adjust_tail(ctx, -(int)excess))
			return XDP_ABORTED;
		add(1, excess);
	}
	return XDP_PASS;
}
