/* tcp_mss.c — clamp the MSS option of IPv4 TCP SYNs.
 *
 * For untagged IPv4 TCP segments with the SYN flag, the options (up to 40
 * bytes, at most MAX_OPTS of them) are walked: EOL ends the walk, NOP is one
 * byte, any other option has a length byte (below 2 or running past the header
 * drops the segment). An MSS option (kind 2, length 4) above the clamp in
 * `mss_cfg[0]` (1400 when zero) is lowered to it and the TCP checksum updated
 * incrementally; the segment passes. Non-SYN segments and other traffic pass.
 *
 * Maps: mss_cfg (ARRAY 1 of u32). Helpers: map_lookup_elem.
 */
#include "corpus.h"

#define MAX_OPTS 10

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} mss_cfg SEC(".maps");

SEC("xdp")
int tcp_mss(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *tcp = (void *)(ip + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETHTYPE_IP))
		return XDP_PASS;
	if (ip->protocol != P_TCP || ip->ihl != 5)
		return XDP_PASS;
	if ((void *)(tcp + 1) > end)
		return XDP_DROP;
	if (!tcp->syn)
		return XDP_PASS;

	__u32 optlen = tcp->doff * 4;
	if (optlen < 20)
		return XDP_DROP;
	optlen -= 20;
	__u8 *opts = (void *)(tcp + 1);
	__u32 off = 0;
	__u32 zero = 0;
	__u32 *cfg = bpf_map_lookup_elem(&mss_cfg, &zero);
	__u16 clamp = cfg && *cfg ? *cfg : 1400;

	for (int i = 0; i < MAX_OPTS; i++) {
		if (off >= optlen)
			break;
		__u8 *o = opts + (off & 0x3f);
		if (o + 1 > (__u8 *)end)
			return XDP_DROP;
		__u8 kind = o[0];
		if (kind == 0)
			break;
		if (kind == 1) {
			off++;
			continue;
		}
		if (o + 2 > (__u8 *)end)
			return XDP_DROP;
		__u8 len = o[1];
		if (len < 2 || off + len > optlen)
			return XDP_DROP;
		if (kind == 2 && len == 4) {
			if (o + 4 > (__u8 *)end)
				return XDP_DROP;
			__u16 old = *(__u16 *)(o + 2);
			if (bpf_ntohs(old) > clamp) {
				__u16 new = bpf_htons(clamp);
				*(__u16 *)(o + 2) = new;
				tcp->check = csum_replace16(tcp->check, old, new);
			}
			break;
		}
		off += len;
	}
	return XDP_PASS;
}
