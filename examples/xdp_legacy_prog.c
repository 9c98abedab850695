/* xdp_legacy_prog.c — 802.1Q tag stripper in the old SEC("prog") convention.
 *
 * The program lives in SEC("prog") (the generic section name early loaders
 * used) and the object carries a SEC("version") kernel-version word. A frame
 * with one 802.1Q tag has its MAC addresses moved 4 bytes towards the payload
 * and the packet start advanced by 4 bytes with bpf_xdp_adjust_head(ctx, 4),
 * which removes the tag. Built with clang-14 -mcpu=v1.
 *
 * Branches:
 *   frame shorter than 14 bytes                      -> XDP_DROP
 *   EtherType not 0x8100                             -> XDP_PASS unchanged
 *   tagged but shorter than 18 bytes                 -> XDP_DROP
 *   tagged                                           -> tag removed, XDP_PASS
 *   bpf_xdp_adjust_head fails                        -> XDP_ABORTED
 *
 * Maps: none. Helpers: bpf_xdp_adjust_head.
 */
#include "legacy.h"

SEC("prog")
int xdp_legacy_prog(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 macs[2 * ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != legacy_htons(0x8100))
		return XDP_PASS;
	if (data + sizeof(*eth) + 4 > data_end)
		return XDP_DROP;

	__builtin_memcpy(macs, data, sizeof(macs));
	__builtin_memcpy(data + 4, macs, sizeof(macs));
	if (bpf_xdp_adjust_head(ctx, 4))
		return XDP_ABORTED;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
unsigned int _version SEC("version") = 0x00061200;
