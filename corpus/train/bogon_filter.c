/* bogon_filter.c — drop IPv4 packets from bogon and martian sources.
 *
 * For untagged IPv4 packets the source address is compared byte by byte with
 * the reserved ranges 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12,
 * 192.0.2/24, 192.168/16, 198.18/15 and 224/3 (multicast and class E), and
 * the destination with 0/8, 127/8 and 255.255.255.255 unless it is the limited
 * broadcast from 0.0.0.0 (DHCP). A bogon source drops unless `allow` (an LPM
 * trie of source prefixes) holds it; a martian destination always drops.
 * Drops are counted per reason in `bogon_drops`. Other traffic passes.
 *
 * Maps: allow (LPM_TRIE of struct lpm_v4 -> u32), bogon_drops (ARRAY 2 of u64).
 * Helpers: map_lookup_elem.
 */
#include "corpus.h"

struct lpm_v4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 64);
	__type(key, struct lpm_v4);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} allow SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} bogon_drops SEC(".maps");

static __always_inline int bogon(const __u8 *a)
{
	switch (a[0]) {
	case 0:
	case 10:
	case 127:
		return 1;
	case 100:
		return (a[1] & 0xc0) == 64;
	case 169:
		return a[1] == 254;
	case 172:
		return (a[1] & 0xf0) == 16;
	case 192:
		return (a[1] == 0 && a[2] == 2) || a[1] == 168;
	case 198:
		return (a[1] & 0xfe) == 18;
	default:
		return a[0] >= 224;
	}
}

static __always_inline int drop(__u32 reason)
{
	__u64 *c = bpf_map_lookup_elem(&bogon_drops, &reason);
	if (c)
		__sync_fetch_and_add(c, 1);
	return XDP_DROP;
}

SEC("xdp")
int bogon_filter(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;

	if (data + 34 > end)
		return XDP_PASS;
	if (data[12] != 0x08 || data[13] != 0x00)
		return XDP_PASS;
	__u8 *src = data + 26, *dst = data + 30;

	int bcast = dst[0] == 255 && dst[1] == 255 && dst[2] == 255 && dst[3] == 255;
	int dhcp = bcast && !(src[0] | src[1] | src[2] | src[3]);
	if (dhcp)
		return XDP_PASS;
	if (dst[0] == 0 || dst[0] == 127 || bcast)
		return drop(1);
	if (bogon(src)) {
		struct lpm_v4 k = { .prefixlen = 32 };
		__builtin_memcpy(k.addr, src, 4);
		if (!bpf_map_lookup_elem(&allow, &k))
			return drop(0);
	}
	return XDP_PASS;
}
