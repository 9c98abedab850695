/* xdp_global_funcs.c — bpf-to-bpf calls to global (non-static) functions.
 *
 * The kernel verifies a global function on its own, from the types of its
 * arguments as BTF describes them, so it refuses the object unless the loader
 * hands it the program's BTF and func_info ("missing btf func_info"). The
 * static sub-program count() is verified in the context of its caller.
 *
 * Branches:
 *   parse_l3(): frame shorter than Ethernet + IPv4 headers  -> -1
 *               not IPv4                                    -> -2
 *               IPv4                                        -> the IP protocol
 *   classify(): UDP longer than 100 bytes of frame -> 2 (drop)
 *               UDP up to 100 bytes, or TCP         -> 1 (pass, counted)
 *               anything else                       -> 0 (pass)
 *   xdp_global_funcs: parse_l3() < 0               -> XDP_PASS, stats[3]
 *                     classify() == 2              -> XDP_DROP, stats[2]
 *                     classify() == 1              -> XDP_PASS, stats[1]
 *                     classify() == 0              -> XDP_PASS, stats[0]
 *
 * Maps: gf_stats — ARRAY, 4 entries, key __u32, value __u64.
 * Helpers: bpf_map_lookup_elem.
 */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} gf_stats SEC(".maps");

/* Global: verified separately with an xdp_md context as its only argument. */
__noinline int parse_l3(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;

	if ((void *)(eth + 1) > data_end)
		return -1;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return -2;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		return -1;
	return ip->protocol;
}

/* Global, scalar arguments only. */
__noinline int classify(int proto, __u32 len)
{
	if (proto == IPPROTO_UDP)
		return len > 100 ? 2 : 1;
	if (proto == IPPROTO_TCP)
		return 1;
	return 0;
}

/* Static: verified as part of its caller. */
static __noinline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&gf_stats, &idx);

	if (c)
		*c += 1;
}

SEC("xdp")
int xdp_global_funcs(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;
	int proto = parse_l3(ctx);
	int class;

	if (proto < 0) {
		count(3);
		return XDP_PASS;
	}
	class = classify(proto, len);
	count(class);
	return class == 2 ? XDP_DROP : XDP_PASS;
}
