/* xdp_legacy_text.c — IPv4 header checksum validator whose program has no SEC().
 *
 * The program function carries no section attribute, so clang places it in
 * .text, as very old loaders (and `ip link ... sec .text`) expected; libbpf >= 1.0
 * treats .text functions only as sub-programs and finds no program here.
 * Built with clang-14 -mcpu=v2.
 *
 * Branches:
 *   frame shorter than 14 bytes                     -> XDP_DROP
 *   not IPv4                                        -> XDP_PASS
 *   IPv4 header truncated or IHL != 5               -> XDP_DROP
 *   header checksum (bpf_csum_diff over the 20-byte
 *   header, folded) is not 0xffff, i.e. corrupt     -> XDP_DROP
 *   valid header checksum                           -> XDP_PASS
 *
 * Maps: none. Helpers: bpf_csum_diff (reading packet memory directly).
 */
#include "legacy.h"

int xdp_legacy_text(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__u32 sum;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != legacy_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl != 5)
		return XDP_DROP;

	sum = (__u32)bpf_csum_diff(0, 0, ip, sizeof(*ip), 0);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff ? XDP_PASS : XDP_DROP;
}

char _license[] SEC("license") = "GPL";
