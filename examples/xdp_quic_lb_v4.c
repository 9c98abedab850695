/* xdp_quic_lb_v4.c — QUIC connection-ID load balancer, IPv4.
 *
 * UDP datagrams to port 443 are parsed as QUIC (see quic_lb.h) and steered to
 * one of NUM_BACKENDS backends:
 *   - short header: the server id embedded in the DCID if it has a valid one,
 *     otherwise FNV-1a(DCID) % NUM_BACKENDS;
 *   - long header (handshake): the client's (address, port) is looked up in an
 *     LRU "sticky" table so that every handshake packet of a client reaches the
 *     same backend even when the client changes its DCID; on a miss the backend
 *     is FNV-1a(DCID) % NUM_BACKENDS and the choice is recorded.
 * The destination IPv4 address is rewritten to the backend's, the IPv4 header
 * checksum and (if non-zero) the UDP checksum are fixed incrementally with
 * bpf_csum_diff, the source MAC becomes the old destination MAC, the
 * destination MAC the backend's, and the packet leaves with XDP_TX.
 *
 * Branches:
 *   not Ethernet+IPv4, fragment, not UDP, dport != 443     -> XDP_PASS
 *   IPv4 header truncated / IHL < 5, UDP header truncated  -> XDP_DROP
 *   version negotiation, short header with fixed bit clear -> XDP_PASS
 *   QUIC header/DCID truncated, DCID length > 20           -> XDP_DROP
 *   selected backend slot has address 0 (unconfigured)     -> XDP_PASS
 *   backend selected                                       -> rewritten, XDP_TX
 *
 * Maps:
 *   qlb_backends_v4 — ARRAY, NUM_BACKENDS x struct backend_v4 {__be32 addr; __u8 mac[6]; __u16 pad}
 *   qlb_sticky_v4   — LRU_HASH, key struct client_v4 {__be32 addr; __be16 port; __u16 pad},
 *                      value __u32 backend index
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem, bpf_csum_diff.
 */
#include "xdp_common.h"
#include "quic_lb.h"

/* xdp_quic_lb_nfp_v4.c builds this program with QLB_NFP: other names, a HASH sticky table and
 * the checksum update in C (see there). */
#ifdef QLB_NFP
#define qlb_backends_v4 qlb_backends_nfp_v4
#define qlb_sticky_v4 qlb_sticky_nfp_v4
#define xdp_quic_lb_v4 xdp_quic_lb_nfp_v4
#define QLB_STICKY_TYPE BPF_MAP_TYPE_HASH
#else
#define QLB_STICKY_TYPE BPF_MAP_TYPE_LRU_HASH
#endif

struct backend_v4 {
	__be32 addr;
	__u8 mac[ETH_ALEN];
	__u16 pad;
};

struct client_v4 {
	__be32 addr;
	__be16 port;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NUM_BACKENDS);
	__type(key, __u32);
	__type(value, struct backend_v4);
} qlb_backends_v4 SEC(".maps");

struct {
	__uint(type, QLB_STICKY_TYPE);
	__uint(max_entries, 4096);
	__type(key, struct client_v4);
	__type(value, __u32);
} qlb_sticky_v4 SEC(".maps");

SEC("xdp")
int xdp_quic_lb_v4(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	struct quic_cid_info ci;
	struct backend_v4 *be;
	__u32 idx;
	int rc;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl < 5)
		return XDP_DROP;
	if ((ip->frag_off & bpf_htons(0x3fff)) || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	udp = (void *)ip + ip->ihl * 4;
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
		struct client_v4 ck = { .addr = ip->saddr, .port = udp->source, .pad = 0 };

		qlb_sticky_backend(&qlb_sticky_v4, &ck, &ci, &idx);
	} else {
		idx = ci.has_sid ? ci.server_id : ci.hash % NUM_BACKENDS;
	}

	be = bpf_map_lookup_elem(&qlb_backends_v4, &idx);
	if (!be)
		return XDP_DROP;
	if (be->addr == 0)
		return XDP_PASS;

	__be32 old_addr = ip->daddr, new_addr = be->addr;

	ip->check = qlb_csum_replace(ip->check, &old_addr, &new_addr, 1);
	qlb_udp_csum_replace(udp, &old_addr, &new_addr, 1);
	ip->daddr = new_addr;

	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, be->mac, ETH_ALEN);
	return XDP_TX;
}
