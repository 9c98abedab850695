/* nat44.c — static source NAT for IPv4 with incremental checksums.
 *
 * Outbound packets (untagged IPv4, 20-byte header, not a non-first fragment)
 * whose source address is in `snat` get it rewritten to the mapped public
 * address, and (for TCP and UDP) the source port to `base_port + (old port %
 * span)`; the IP checksum and the TCP/UDP checksum (pseudo-header and port)
 * are updated incrementally (RFC 1624), a zero UDP checksum is left zero, and
 * a result of zero becomes 0xffff as UDP requires. Inbound packets to a public
 * address in `dnat` get their destination rewritten back the same way (address
 * only). Translated packets go out again (XDP_TX); others pass; truncated
 * headers drop.
 *
 * Maps: snat (HASH be32 -> struct snat_entry), dnat (HASH be32 -> be32).
 * Helpers: map_lookup_elem.
 */
#include "corpus.h"

struct snat_entry {
	__be32 public_addr;
	__u16 base_port;
	__u16 span;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct snat_entry);
} snat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} dnat SEC(".maps");

/* Rewrites an address field and both checksums covering it. */
static __always_inline void rewrite_addr(struct iphdr *ip, __be32 *field, __be32 to,
					  __u16 *l4check, int udp)
{
	__be32 from = *field;

	*field = to;
	ip->check = csum_replace32(ip->check, from, to);
	if (l4check && !(udp && *l4check == 0)) {
		__u16 c = csum_replace32(*l4check, from, to);
		*l4check = (udp && c == 0) ? 0xffff : c;
	}
}

SEC("xdp")
int nat44(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETHTYPE_IP))
		return XDP_PASS;
	if ((void *)(ip + 1) > end)
		return XDP_DROP;
	if (ip->ihl != 5 || (ip->frag_off & bpf_htons(0x1fff)))
		return XDP_PASS;

	__u16 *l4check = 0;
	__be16 *sport = 0;
	int udp = ip->protocol == P_UDP;
	if (ip->protocol == P_TCP) {
		struct tcphdr *tcp = (void *)(ip + 1);
		if ((void *)(tcp + 1) > end)
			return XDP_DROP;
		l4check = &tcp->check;
		sport = &tcp->source;
	} else if (udp) {
		struct udphdr *u = (void *)(ip + 1);
		if ((void *)(u + 1) > end)
			return XDP_DROP;
		l4check = &u->check;
		sport = &u->source;
	}

	__u32 src = ip->saddr;
	struct snat_entry *s = bpf_map_lookup_elem(&snat, &src);
	if (s) {
		rewrite_addr(ip, &ip->saddr, s->public_addr, l4check, udp);
		if (sport && s->span) {
			__u16 old = *sport;
			__u16 new = bpf_htons(s->base_port + bpf_ntohs(old) % s->span);
			*sport = new;
			if (!(udp && *l4check == 0)) {
				__u16 c = csum_replace16(*l4check, old, new);
				*l4check = (udp && c == 0) ? 0xffff : c;
			}
		}
		return XDP_TX;
	}
	__u32 dst = ip->daddr;
	__u32 *back = bpf_map_lookup_elem(&dnat, &dst);
	if (back) {
		rewrite_addr(ip, &ip->daddr, *back, l4check, udp);
		return XDP_TX;
	}
	return XDP_PASS;
}
