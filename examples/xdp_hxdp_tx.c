/* xdp_hxdp_tx.c — the hXDP paper's XDP_TX microbenchmark (§5.2.2).
 *
 * Parses the Ethernet header, swaps the destination and source MAC addresses
 * and sends the frame back out of the port it arrived on. Nothing past the
 * Ethernet header is read. The one bounds check drops the frame when it fails
 * (the form hXDP's bounds-check removal recognises), and the header is
 * accessed right after it.
 *
 * Branches:
 *   frame shorter than 14 bytes -> XDP_DROP
 *   any other frame             -> MACs swapped, XDP_TX
 *
 * Maps: none. Helpers: none.
 */
#include "hxdp_mac_swap.h"

SEC("xdp")
int xdp_hxdp_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + sizeof(struct ethhdr) > data_end)
		return XDP_DROP;

	swap_macs(data);
	return XDP_TX;
}
