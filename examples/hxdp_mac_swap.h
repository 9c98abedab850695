/* hxdp_mac_swap.h — the MAC swap of the hXDP paper's XDP_TX and redirect
 * microbenchmarks (§5.2.2), shared by xdp_hxdp_tx.c and xdp_hxdp_redirect.c.
 *
 * Swaps the destination and source MAC addresses of a frame whose Ethernet
 * header the caller has bounds-checked. The addresses move as three 16-bit
 * words each: XDP frames start 2-byte aligned, and word moves keep the
 * programs as small as the paper's (a byte-wise memcpy is 50 instructions).
 */
#ifndef HXDP_MAC_SWAP_H
#define HXDP_MAC_SWAP_H

#include "xdp_common.h"

static __always_inline void swap_macs(void *data)
{
	__u16 *dst = data;
	__u16 *src = data + ETH_ALEN;
	__u16 d0 = dst[0], d1 = dst[1], d2 = dst[2];

	dst[0] = src[0];
	dst[1] = src[1];
	dst[2] = src[2];
	src[0] = d0;
	src[1] = d1;
	src[2] = d2;
}

#endif
