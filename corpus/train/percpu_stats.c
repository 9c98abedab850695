/* percpu_stats.c — per-CPU traffic accounting by class and size.
 *
 * Every frame passes. Frames are classified (0 runt or other, 1 ARP, 2 IPv4
 * TCP, 3 IPv4 UDP, 4 IPv4 ICMP, 5 IPv4 other, 6 IPv6, 7 VLAN-tagged) and their
 * packet and byte counts added to `class_stats[class]`; their length goes into
 * a log2 histogram `size_hist` (bucket = floor(log2(len)) - 5, clamped to
 * 0..7). IPv4 frames with a header checksum of zero additionally count in
 * class 0's `odd` field. Both maps are per-CPU.
 *
 * Maps: class_stats (PERCPU_ARRAY 8 of struct counters), size_hist
 * (PERCPU_ARRAY 8 of u64). Helpers: map_lookup_elem.
 */
#include "corpus.h"

struct counters {
	__u64 packets;
	__u64 bytes;
	__u64 odd;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct counters);
} class_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} size_hist SEC(".maps");

static __always_inline __u32 log2_u32(__u32 v)
{
	__u32 r = 0;

	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

SEC("xdp")
int percpu_stats(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	__u32 len = end - data;
	__u32 class = 0;
	int odd = 0;

	if (data + 14 <= end) {
		__u16 type = (data[12] << 8) | data[13];
		if (type == ETHTYPE_ARP) {
			class = 1;
		} else if (type == ETHTYPE_IP6) {
			class = 6;
		} else if (type == ETHTYPE_VLAN) {
			class = 7;
		} else if (type == ETHTYPE_IP && data + 34 <= end) {
			__u8 proto = data[23];
			class = proto == P_TCP ? 2 : proto == P_UDP ? 3 : proto == P_ICMP ? 4 : 5;
			odd = data[24] == 0 && data[25] == 0;
		}
	}

	struct counters *c = bpf_map_lookup_elem(&class_stats, &class);
	if (c) {
		c->packets++;
		c->bytes += len;
	}
	if (odd) {
		__u32 zero = 0;
		struct counters *z = bpf_map_lookup_elem(&class_stats, &zero);
		if (z)
			z->odd++;
	}
	__u32 bucket = log2_u32(len);
	bucket = bucket < 5 ? 0 : bucket - 5;
	if (bucket > 7)
		bucket = 7;
	__u64 *h = bpf_map_lookup_elem(&size_hist, &bucket);
	if (h)
		(*h)++;
	return XDP_PASS;
}
