/* xdp_hxdp_redirect.c — the hXDP paper's redirect microbenchmark (§5.2.2).
 *
 * Like xdp_hxdp_tx, but sends the frame out of another port, which takes a
 * helper call (bpf_redirect): the paper's point for what a helper costs the
 * core (15 Mpps against XDP_TX's 22.5). The port is ifindex 1 (loopback), so
 * that the kernel's test run accepts it.
 *
 * Branches:
 *   frame shorter than 14 bytes -> XDP_DROP
 *   any other frame             -> MACs swapped, bpf_redirect(1) = XDP_REDIRECT
 *
 * Maps: none. Helpers: bpf_redirect.
 */
#include "hxdp_mac_swap.h"

#define OUT_IFINDEX 1

SEC("xdp")
int xdp_hxdp_redirect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + sizeof(struct ethhdr) > data_end)
		return XDP_DROP;

	swap_macs(data);
	return bpf_redirect(OUT_IFINDEX, 0);
}
