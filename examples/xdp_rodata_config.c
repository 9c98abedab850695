/* xdp_rodata_config.c — port filter configured through global variables.
 *
 * Configuration lives in .rodata as `const volatile` globals that a loader can
 * set before loading (their object defaults are used otherwise): the blocked
 * destination port (default 23), whether UDP is filtered too (default yes),
 * and the action for blocked packets (default XDP_DROP). A mutable limit in
 * .data (max_frame_len, default 1514) drops oversized frames, and counters in
 * .bss count blocked and passed packets.
 *
 * Branches:
 *   frame longer than max_frame_len (.data)               -> XDP_DROP, oversize_count++
 *   frame shorter than 14 bytes, or not IPv4              -> XDP_PASS, passed_count++
 *   IPv4 header truncated / IHL < 5                       -> XDP_DROP, oversize_count unchanged
 *   not TCP/UDP, or UDP while filter_udp == 0             -> XDP_PASS, passed_count++
 *   L4 ports truncated                                    -> XDP_DROP
 *   dport == blocked_port                                 -> blocked_action, blocked_count++
 *   other ports                                           -> XDP_PASS, passed_count++
 *
 * Maps: none explicit; global data: .rodata (blocked_port, filter_udp,
 *       blocked_action), .data (max_frame_len), .bss (blocked_count,
 *       passed_count, oversize_count). No helpers.
 */
#include "xdp_common.h"

const volatile __u16 blocked_port = 23;
const volatile __u8 filter_udp = 1;
const volatile __u32 blocked_action = XDP_DROP;

__u32 max_frame_len = 1514;

__u64 blocked_count;
__u64 passed_count;
__u64 oversize_count;

SEC("xdp")
int xdp_rodata_config(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__be16 *ports;

	if (data_end - data > max_frame_len) {
		__sync_fetch_and_add(&oversize_count, 1);
		return XDP_DROP;
	}
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		goto pass;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl < 5)
		return XDP_DROP;
	if (ip->protocol != IPPROTO_TCP && !(ip->protocol == IPPROTO_UDP && filter_udp))
		goto pass;
	ports = (void *)ip + ip->ihl * 4;
	if ((void *)(ports + 2) > data_end)
		return XDP_DROP;
	if (bpf_ntohs(ports[1]) == blocked_port) {
		__sync_fetch_and_add(&blocked_count, 1);
		return blocked_action;
	}
pass:
	__sync_fetch_and_add(&passed_count, 1);
	return XDP_PASS;
}
