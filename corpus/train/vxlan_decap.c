/* vxlan_decap.c — VXLAN (RFC 7348) termination on UDP port 4789.
 *
 * An untagged IPv4/UDP packet to port 4789 with a 20-byte outer header is read
 * with bpf_xdp_load_bytes: the VXLAN header must have the I flag and zero
 * reserved bits, and its VNI must be in `vnis` (else drop). The outer 50 bytes
 * (Ethernet, IPv4, UDP, VXLAN) are removed so that the inner Ethernet frame
 * passes; the VNI's counters in `vnis` gain one packet and the inner bytes.
 * An inner frame shorter than an Ethernet header drops. Other traffic passes.
 *
 * Maps: vnis (HASH u32 VNI -> struct vni_stats). Helpers: xdp_load_bytes,
 * map_lookup_elem, xdp_adjust_head.
 */
#include "corpus.h"

#define VXLAN_PORT 4789
#define OUTER (14 + 20 + 8 + 8)

struct vni_stats {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, struct vni_stats);
} vnis SEC(".maps");

struct outer {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	__u8 flags;
	__u8 rsvd1[3];
	__u8 vni[3];
	__u8 rsvd2;
} __attribute__((packed));

SEC("xdp")
int vxlan_decap(struct xdp_md *ctx)
{
	struct outer o;

	if (bpf_xdp_load_bytes(ctx, 0, &o, sizeof(o.eth)))
		return XDP_DROP;
	if (o.eth.h_proto != bpf_htons(ETHTYPE_IP))
		return XDP_PASS;
	if (bpf_xdp_load_bytes(ctx, 0, &o, 34))
		return XDP_DROP;
	if (o.ip.protocol != P_UDP)
		return XDP_PASS;
	if (o.ip.ihl != 5)
		return XDP_PASS;
	if (bpf_xdp_load_bytes(ctx, 0, &o, sizeof(o)))
		return XDP_DROP;
	if (o.udp.dest != bpf_htons(VXLAN_PORT))
		return XDP_PASS;
	if (o.flags != 0x08 || o.rsvd1[0] | o.rsvd1[1] | o.rsvd1[2] | o.rsvd2)
		return XDP_DROP;

	__u32 vni = ((__u32)o.vni[0] << 16) | ((__u32)o.vni[1] << 8) | o.vni[2];
	struct vni_stats *s = bpf_map_lookup_elem(&vnis, &vni);
	if (!s)
		return XDP_DROP;

	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	if (data + OUTER + sizeof(struct ethhdr) > end)
		return XDP_DROP;
	__sync_fetch_and_add(&s->packets, 1);
	__sync_fetch_and_add(&s->bytes, (__u64)(end - data - OUTER));
	if (bpf_xdp_adjust_head(ctx, OUTER))
		return XDP_ABORTED;
	return XDP_PASS;
}
