/* ipv6_ext.c — IPv6 extension-header walk and upper-layer port filter.
 *
 * Untagged IPv6 packets have up to MAX_EXT extension headers walked
 * (hop-by-hop, routing, fragment, destination options, in any order). A
 * routing header of type 0 (deprecated, RFC 5095) drops, a non-first fragment
 * passes without port inspection, more than MAX_EXT headers or a truncated one
 * drops. The upper layer found must be TCP or UDP to a port whose bit is set in
 * the 64-bit `v6_ports[port / 64]` bitmap row to pass; other TCP/UDP ports
 * drop, ICMPv6 passes, anything else drops. Non-IPv6 traffic passes.
 *
 * Maps: v6_ports (ARRAY 1024 of u64 bitmaps). Helpers: map_lookup_elem.
 */
#include "corpus.h"

#define MAX_EXT 6

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} v6_ports SEC(".maps");

SEC("xdp")
int ipv6_ext(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;

	if (data + 14 > end)
		return XDP_DROP;
	if (data[12] != 0x86 || data[13] != 0xdd)
		return XDP_PASS;
	struct ipv6hdr *ip6 = (void *)(data + 14);
	if ((void *)(ip6 + 1) > (void *)end)
		return XDP_DROP;

	__u8 nh = ip6->nexthdr;
	__u8 *p = (void *)(ip6 + 1);
#pragma clang loop unroll(full)
	for (int i = 0; i < MAX_EXT; i++) {
		if (nh != 0 && nh != 43 && nh != 44 && nh != 60)
			break;
		if (p + 8 > end)
			return XDP_DROP;
		__u8 next = p[0];
		if (nh == 44) {
			/* Fragment offset in the upper 13 bits of bytes 2..3. */
			if (((p[2] << 8) | (p[3] & 0xf8)) != 0)
				return XDP_PASS;
			p += 8;
		} else {
			if (nh == 43 && p[2] == 0)
				return XDP_DROP;
			p += (p[1] + 1) * 8;
		}
		nh = next;
	}
	if (nh == 0 || nh == 43 || nh == 44 || nh == 60)
		return XDP_DROP;

	if (nh == P_ICMP6)
		return XDP_PASS;
	if (nh != P_TCP && nh != P_UDP)
		return XDP_DROP;
	if (p + 4 > end)
		return XDP_DROP;
	__u32 port = (p[2] << 8) | p[3];
	__u32 row = port >> 6;
	__u64 *bits = bpf_map_lookup_elem(&v6_ports, &row);
	if (bits && (*bits >> (port & 63)) & 1)
		return XDP_PASS;
	return XDP_DROP;
}
