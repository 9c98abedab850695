/* dscp_remark.c — DSCP remarking by protocol and destination port.
 *
 * Behind an optional 802.1Q tag, IPv4 and IPv6 TCP/UDP packets are looked up
 * in `dscp_rules` by (protocol, destination port), then by (protocol, port 0);
 * other protocols by (protocol, 0). A rule value of 0..63 rewrites the DSCP,
 * keeping the ECN bits (IPv4: header checksum updated incrementally; IPv6:
 * traffic class straddling bytes 0 and 1), the value 255 drops the packet,
 * and no rule leaves it alone. Everything that is not dropped passes. IPv6
 * extension headers are not walked (the next header is the protocol).
 *
 * Maps: dscp_rules (HASH struct rule_key -> u8). Helpers: map_lookup_elem.
 */
#include "corpus.h"

struct rule_key {
	__u8 proto;
	__u8 pad;
	__u16 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct rule_key);
	__type(value, __u8);
} dscp_rules SEC(".maps");

static __always_inline int rule_for(__u8 proto, __u8 *l4, __u8 *end)
{
	struct rule_key k = { .proto = proto };
	__u8 *v;

	if ((proto == P_TCP || proto == P_UDP) && l4 + 4 <= end) {
		k.port = (l4[2] << 8) | l4[3];
		v = bpf_map_lookup_elem(&dscp_rules, &k);
		if (v)
			return *v;
		k.port = 0;
	}
	v = bpf_map_lookup_elem(&dscp_rules, &k);
	return v ? *v : -1;
}

SEC("xdp")
int dscp_remark(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	__u8 *l3 = data + 14;

	if (l3 > end)
		return XDP_DROP;
	__u16 type = (data[12] << 8) | data[13];
	if (type == ETHTYPE_VLAN) {
		if (l3 + 4 > end)
			return XDP_DROP;
		type = (l3[2] << 8) | l3[3];
		l3 += 4;
	}

	if (type == ETHTYPE_IP) {
		struct iphdr *ip = (void *)l3;
		if ((void *)(ip + 1) > (void *)end)
			return XDP_DROP;
		int r = rule_for(ip->protocol, l3 + ip->ihl * 4, end);
		if (r == 255)
			return XDP_DROP;
		if (r < 0 || r > 63)
			return XDP_PASS;
		__u16 old = *(__u16 *)ip;
		ip->tos = (r << 2) | (ip->tos & 3);
		ip->check = csum_replace16(ip->check, old, *(__u16 *)ip);
		return XDP_PASS;
	}
	if (type == ETHTYPE_IP6) {
		if (l3 + 40 > end)
			return XDP_DROP;
		int r = rule_for(l3[6], l3 + 40, end);
		if (r == 255)
			return XDP_DROP;
		if (r < 0 || r > 63)
			return XDP_PASS;
		__u8 tc = (r << 2) | ((l3[1] >> 4) & 3);
		l3[0] = (l3[0] & 0xf0) | (tc >> 4);
		l3[1] = (l3[1] & 0x0f) | (tc << 4);
		return XDP_PASS;
	}
	return XDP_PASS;
}
