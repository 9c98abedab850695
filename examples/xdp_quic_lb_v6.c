/* xdp_quic_lb_v6.c — QUIC connection-ID load balancer, IPv6.
 *
 * Same policy as xdp_quic_lb_v4.c (see there and quic_lb.h), over IPv6: the
 * program first walks up to MAX_EXT_HDRS IPv6 extension headers (hop-by-hop
 * options 0, routing 43, destination options 60: length (hdrlen + 1) * 8;
 * fragment 44: 8 bytes) with a bounded loop to reach the UDP header. The
 * destination IPv6 address is replaced by the backend's and the UDP checksum
 * is fixed incrementally with bpf_csum_diff over the 16-byte addresses.
 *
 * Branches:
 *   not Ethernet+IPv6                                       -> XDP_PASS
 *   IPv6 / extension / UDP header truncated                 -> XDP_DROP
 *   non-first fragment (fragment offset != 0)               -> XDP_PASS
 *   more than MAX_EXT_HDRS extension headers, or upper
 *   layer not UDP (e.g. TCP, ICMPv6, no next header)        -> XDP_PASS
 *   dport != 443, version negotiation, fixed bit clear      -> XDP_PASS
 *   QUIC header/DCID truncated, DCID length > 20            -> XDP_DROP
 *   selected backend slot has address :: (unconfigured)     -> XDP_PASS
 *   backend selected                                        -> rewritten, XDP_TX
 *
 * Maps:
 *   qlb_backends_v6 — ARRAY, NUM_BACKENDS x struct backend_v6 {struct in6_addr addr; __u8 mac[6]; __u16 pad}
 *   qlb_sticky_v6   — LRU_HASH, key struct client_v6 {struct in6_addr addr; __be16 port; __u16 pad},
 *                      value __u32 backend index
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem, bpf_csum_diff.
 */
#include "xdp_common.h"
#include "quic_lb.h"

/* xdp_quic_lb_nfp_v6.c builds this program with QLB_NFP: other names, a HASH sticky table and
 * the checksum update in C (see there). */
#ifdef QLB_NFP
#define qlb_backends_v6 qlb_backends_nfp_v6
#define qlb_sticky_v6 qlb_sticky_nfp_v6
#define xdp_quic_lb_v6 xdp_quic_lb_nfp_v6
#define QLB_STICKY_TYPE BPF_MAP_TYPE_HASH
#else
#define QLB_STICKY_TYPE BPF_MAP_TYPE_LRU_HASH
#endif

#define MAX_EXT_HDRS 6

struct backend_v6 {
	struct in6_addr addr;
	__u8 mac[ETH_ALEN];
	__u16 pad;
};

struct client_v6 {
	struct in6_addr addr;
	__be16 port;
	__u16 pad;
};

struct ipv6_frag {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 identification;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NUM_BACKENDS);
	__type(key, __u32);
	__type(value, struct backend_v6);
} qlb_backends_v6 SEC(".maps");

struct {
	__uint(type, QLB_STICKY_TYPE);
	__uint(max_entries, 4096);
	__type(key, struct client_v6);
	__type(value, __u32);
} qlb_sticky_v6 SEC(".maps");

SEC("xdp")
int xdp_quic_lb_v6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6;
	struct udphdr *udp;
	struct quic_cid_info ci;
	struct backend_v6 *be;
	__u32 idx, off;
	__u8 nh;
	int rc, k;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IPV6))
		return XDP_PASS;
	ip6 = (void *)(eth + 1);
	if ((void *)(ip6 + 1) > data_end)
		return XDP_DROP;

	nh = ip6->nexthdr;
	off = sizeof(struct ipv6hdr);
	for (k = 0; k < MAX_EXT_HDRS; k++) {
		if (nh == NEXTHDR_HOP || nh == NEXTHDR_ROUTING || nh == NEXTHDR_DEST) {
			struct ipv6_opt_hdr *eh = (void *)ip6 + off;

			if ((void *)(eh + 1) > data_end)
				return XDP_DROP;
			nh = eh->nexthdr;
			off += (eh->hdrlen + 1) * 8;
		} else if (nh == NEXTHDR_FRAGMENT) {
			struct ipv6_frag *fh = (void *)ip6 + off;

			if ((void *)(fh + 1) > data_end)
				return XDP_DROP;
			if (fh->frag_off & bpf_htons(0xFFF8))
				return XDP_PASS;
			nh = fh->nexthdr;
			off += sizeof(*fh);
		} else {
			break;
		}
	}
	if (nh != IPPROTO_UDP)
		return XDP_PASS;

	udp = (void *)ip6 + off;
	if ((void *)(udp + 1) > data_end)
		return XDP_DROP;
	if (udp->dest != bpf_htons(QUIC_PORT))
		return XDP_PASS;

	rc = quic_parse((void *)(udp + 1), data_end, &ci);
	if (rc == Q_NOT_QUIC)
		return XDP_PASS;
	if (rc != Q_OK)
		return XDP_DROP;

	if (ci.long_hdr) {
		struct client_v6 ck;

		__builtin_memset(&ck, 0, sizeof(ck));
		__builtin_memcpy(&ck.addr, &ip6->saddr, sizeof(ck.addr));
		ck.port = udp->source;
		qlb_sticky_backend(&qlb_sticky_v6, &ck, &ci, &idx);
	} else {
		idx = ci.has_sid ? ci.server_id : ci.hash % NUM_BACKENDS;
	}

	be = bpf_map_lookup_elem(&qlb_backends_v6, &idx);
	if (!be)
		return XDP_DROP;
	if (!(be->addr.in6_u.u6_addr32[0] | be->addr.in6_u.u6_addr32[1] |
	      be->addr.in6_u.u6_addr32[2] | be->addr.in6_u.u6_addr32[3]))
		return XDP_PASS;

#ifdef QLB_NFP
	__u32 *old_addr = ip6->daddr.in6_u.u6_addr32;
	__u32 *new_addr = be->addr.in6_u.u6_addr32;

	qlb_udp_csum_replace(udp, old_addr, new_addr, 4);
#pragma clang loop unroll(full)
	for (int i = 0; i < 4; i++)
		old_addr[i] = new_addr[i];
#else
	struct in6_addr old_addr, new_addr;

	__builtin_memcpy(&old_addr, &ip6->daddr, sizeof(old_addr));
	__builtin_memcpy(&new_addr, &be->addr, sizeof(new_addr));
	qlb_udp_csum_replace(udp, &old_addr, &new_addr, 4);
	__builtin_memcpy(&ip6->daddr, &new_addr, sizeof(new_addr));
#endif

	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, be->mac, ETH_ALEN);
	return XDP_TX;
}
