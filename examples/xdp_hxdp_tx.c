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
#include "xdp_common.h"

SEC("xdp")
int xdp_hxdp_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + sizeof(struct ethhdr) > data_end)
		return XDP_DROP;

	/* The two addresses as three 16-bit words each: XDP frames start 2-byte aligned, and
	 * word moves keep the program as small as the paper's (a byte-wise memcpy is 50
	 * instructions). */
	__u16 *dst = data;
	__u16 *src = data + ETH_ALEN;
	__u16 d0 = dst[0], d1 = dst[1], d2 = dst[2];

	dst[0] = src[0];
	dst[1] = src[1];
	dst[2] = src[2];
	src[0] = d0;
	src[1] = d1;
	src[2] = d2;
	return XDP_TX;
}
