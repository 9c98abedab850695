/* xdp_reflector.c — MAC-swap reflector.
 *
 * Every frame with a complete Ethernet header is sent back out of the port it
 * arrived on (XDP_TX) with source and destination MAC addresses swapped.
 * For untagged IPv4 frames with a complete 20..60 byte header the IPv4 source
 * and destination addresses are swapped as well (the header checksum is
 * unchanged by a swap), and for IPv4 UDP/TCP with a complete L4 port pair the
 * ports are swapped too (L4 checksums are also swap-invariant).
 *
 * Branches:
 *   frame shorter than 14 bytes                      -> XDP_DROP
 *   non-IPv4 frame                                   -> MACs swapped, XDP_TX
 *   IPv4, header truncated or IHL < 5                -> MACs swapped, XDP_TX
 *   IPv4 other protocol, or UDP/TCP ports truncated  -> MACs+IPs swapped, XDP_TX
 *   IPv4 UDP/TCP                                     -> MACs+IPs+ports swapped, XDP_TX
 *
 * Maps: none. Helpers: none.
 */
#include "xdp_common.h"

SEC("xdp")
int xdp_reflector(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;

	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);

	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_TX;

	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl < 5)
		return XDP_TX;

	__be32 a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;

	if (ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP)
		return XDP_TX;

	/* Ports are the first four bytes of both UDP and TCP headers. */
	__be16 *ports = (void *)ip + ip->ihl * 4;
	if ((void *)(ports + 2) > data_end)
		return XDP_TX;
	__be16 p = ports[0];
	ports[0] = ports[1];
	ports[1] = p;
	return XDP_TX;
}
