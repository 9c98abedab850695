/* xdp_legacy_maps.c — source-MAC blocklist in the legacy map convention.
 *
 * Maps are declared as `struct bpf_map_def` instances in SEC("maps") (no BTF
 * map definitions) and the program lives in the old-style SEC("xdp_prog").
 * libbpf >= 1.0 refuses SEC("maps"); linerate's own loader reads it. Built with
 * clang-14 -mcpu=v1 (no 32-bit jumps/ALU; counters use the legacy XADD).
 *
 * Branches:
 *   frame shorter than 14 bytes               -> XDP_DROP, legacy_stats[3]++
 *   source MAC in legacy_blocked              -> XDP_DROP, legacy_stats[2]++
 *   IPv4                                      -> XDP_PASS, legacy_stats[0]++
 *   anything else                             -> XDP_PASS, legacy_stats[1]++
 *
 * Maps (SEC("maps"), struct bpf_map_def {type, key_size, value_size, max_entries, map_flags}):
 *   legacy_blocked — HASH, key 8 bytes (source MAC + 2 zero bytes), value __u32 (reason)
 *   legacy_stats   — ARRAY, 4 x __u64
 * Helpers: bpf_map_lookup_elem.
 */
#include "legacy.h"

struct bpf_map_def SEC("maps") legacy_blocked = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = 8,
	.value_size = sizeof(__u32),
	.max_entries = 128,
	.map_flags = 0,
};

struct bpf_map_def SEC("maps") legacy_stats = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u64),
	.max_entries = 4,
	.map_flags = 0,
};

static __attribute__((always_inline)) int count(__u32 idx, int action)
{
	__u64 *c = bpf_map_lookup_elem(&legacy_stats, &idx);

	if (c)
		__sync_fetch_and_add(c, 1);
	return action;
}

SEC("xdp_prog")
int xdp_legacy_maps(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 key[8];

	if ((void *)(eth + 1) > data_end)
		return count(3, XDP_DROP);

	__builtin_memcpy(key, eth->h_source, ETH_ALEN);
	key[6] = 0;
	key[7] = 0;
	if (bpf_map_lookup_elem(&legacy_blocked, key))
		return count(2, XDP_DROP);
	if (eth->h_proto == legacy_htons(ETH_P_IP))
		return count(0, XDP_PASS);
	return count(1, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
