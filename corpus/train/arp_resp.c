/* arp_resp.c — ARP responder for a table of owned addresses.
 *
 * An Ethernet/IPv4 ARP request (htype 1, ptype 0x0800, hlen 6, plen 4, op 1)
 * whose target address is in `arp_table` is turned into the reply in place:
 * op 2, sender = (table MAC, target IP), target = the requester, Ethernet
 * addresses set accordingly, and sent back (XDP_TX). Requests for other
 * addresses pass, malformed ARP drops, gratuitous ARP (sender IP == target IP)
 * is counted in `arp_stats[1]` and passes; replies are counted in
 * `arp_stats[0]`. Non-ARP frames pass.
 *
 * Maps: arp_table (HASH be32 -> 6-byte MAC padded to 8), arp_stats (ARRAY 2 of
 * u64). Helpers: map_lookup_elem.
 */
#include "corpus.h"

struct arp_eth {
	__be16 htype;
	__be16 ptype;
	__u8 hlen;
	__u8 plen;
	__be16 op;
	__u8 sha[ETH_ALEN];
	__u8 spa[4];
	__u8 tha[ETH_ALEN];
	__u8 tpa[4];
} __attribute__((packed));

struct mac_val {
	__u8 mac[ETH_ALEN];
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct mac_val);
} arp_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} arp_stats SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *c = bpf_map_lookup_elem(&arp_stats, &i);
	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("xdp")
int arp_resp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETHTYPE_ARP))
		return XDP_PASS;
	struct arp_eth *a = (void *)(eth + 1);
	if ((void *)(a + 1) > end)
		return XDP_DROP;
	if (a->htype != bpf_htons(1) || a->ptype != bpf_htons(ETHTYPE_IP) || a->hlen != 6 ||
	    a->plen != 4)
		return XDP_DROP;
	if (a->op != bpf_htons(1))
		return XDP_PASS;

	__u32 spa, tpa;
	__builtin_memcpy(&spa, a->spa, 4);
	__builtin_memcpy(&tpa, a->tpa, 4);
	if (spa == tpa) {
		count(1);
		return XDP_PASS;
	}
	struct mac_val *m = bpf_map_lookup_elem(&arp_table, &tpa);
	if (!m)
		return XDP_PASS;

	a->op = bpf_htons(2);
	__builtin_memcpy(a->tha, a->sha, ETH_ALEN);
	__builtin_memcpy(a->tpa, &spa, 4);
	__builtin_memcpy(a->sha, m->mac, ETH_ALEN);
	__builtin_memcpy(a->spa, &tpa, 4);
	__builtin_memcpy(eth->h_dest, a->tha, ETH_ALEN);
	__builtin_memcpy(eth->h_source, m->mac, ETH_ALEN);
	count(0);
	return XDP_TX;
}
