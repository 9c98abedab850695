/* xdp_hxdp_drop.c — the hXDP paper's XDP_DROP microbenchmark (§5.2.2).
 *
 * Drops every frame as soon as it is received, without reading it: the
 * smallest possible XDP program (two instructions, r0 = XDP_DROP; exit). It
 * measures the fixed per-packet cost of a platform; on hXDP it is the program
 * that profits most from the early-exit of a returned action.
 *
 * Branches:
 *   every frame -> XDP_DROP
 *
 * Maps: none. Helpers: none.
 */
#include "xdp_common.h"

SEC("xdp")
int xdp_hxdp_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}
