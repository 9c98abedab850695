/* xdp_simple_firewall.c — the hXDP paper's simple firewall (§2.3, §5.2.1).
 *
 * A stateful firewall between an internal and an external port. It parses
 * Ethernet, IPv4 and the transport header (TCP or UDP) to extract the
 * 5-tuple. Frames from the internal port create (or refresh) the flow's entry
 * in a hash map and are forwarded; frames from the external port are
 * forwarded only if their flow has an entry, and dropped otherwise.
 *
 * The input port: the paper decides by ctx->ingress_ifindex, but linerate's
 * packet files cannot set it (BPF_PROG_TEST_RUN runs every frame on the
 * loopback device, ifindex 1), so the port is read from the frame instead:
 * a source MAC address with the locally administered bit set (bit 1 of its
 * first byte, e.g. 02:..) came from the internal port, a universally
 * administered one (e.g. 00:1b:21:..) from the external port.
 *
 * The key puts the two (address, port) endpoints in an absolute order, so
 * both directions of a flow map to the same entry: the endpoint whose address
 * is smaller comes first (addresses compared as the 32-bit words the program
 * loads, i.e. network-order bytes read little-endian; equal addresses are
 * ordered by port, compared the same way). Only the ordering has to be the
 * same in both directions, so no byte swaps are spent on it.
 *
 * Every bounds check drops the frame when it fails and is followed at once by
 * the accesses it guards (what hXDP's bounds-check removal needs), and the
 * key and value are zero-initialised structs on the stack (hXDP's zeroing
 * pass). Frames the firewall does not parse (not IPv4, IPv4 with options,
 * neither TCP nor UDP) are dropped.
 *
 * Branches:
 *   frame shorter than 14 bytes                      -> XDP_DROP
 *   EtherType not IPv4                               -> XDP_DROP
 *   IPv4 header truncated (< 20 bytes)               -> XDP_DROP
 *   first IPv4 byte not 0x45 (version 4, IHL 5)      -> XDP_DROP
 *   protocol neither TCP nor UDP                     -> XDP_DROP
 *   transport header truncated (< 8 bytes)           -> XDP_DROP
 *   internal port                                    -> entry created/updated, XDP_TX
 *   external port, flow has an entry                 -> XDP_TX
 *   external port, no entry                          -> XDP_DROP
 *
 * Maps:
 *   sfw_flows — HASH, key struct sfw_key (16 bytes), value struct sfw_flow (8 bytes)
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem.
 */
#include "xdp_common.h"

/* Bit 1 of a MAC address's first byte: set for locally administered addresses. */
#define MAC_LOCALLY_ADMINISTERED 0x02
#define SFW_FLOW_SEEN_INSIDE 1

struct sfw_key {
	__u32 lo_addr;
	__u32 hi_addr;
	__u16 lo_port;
	__u16 hi_port;
	__u8 proto;
	__u8 pad[3];
};

struct sfw_flow {
	__u32 state;
	__u32 reserved;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct sfw_key);
	__type(value, struct sfw_flow);
} sfw_flows SEC(".maps");

SEC("xdp")
int xdp_simple_firewall(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	struct ethhdr *eth = data;
	if (data + sizeof(struct ethhdr) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_DROP;
	int internal = eth->h_source[0] & MAC_LOCALLY_ADMINISTERED;

	struct iphdr *ip = data + sizeof(struct ethhdr);
	if (data + sizeof(struct ethhdr) + sizeof(struct iphdr) > data_end)
		return XDP_DROP;
	/* Version 4 with a 20-byte header: the transport header is at a fixed offset. */
	if (*(__u8 *)ip != 0x45)
		return XDP_DROP;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return XDP_DROP;
	__u32 saddr = ip->saddr;
	__u32 daddr = ip->daddr;

	/* TCP and UDP both start with the source and destination ports. */
	struct udphdr *l4 = data + sizeof(struct ethhdr) + sizeof(struct iphdr);
	if (data + sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr) > data_end)
		return XDP_DROP;
	__u16 sport = l4->source;
	__u16 dport = l4->dest;

	struct sfw_key key = {};
	key.proto = ip->protocol;
	if (saddr < daddr || (saddr == daddr && sport <= dport)) {
		key.lo_addr = saddr;
		key.hi_addr = daddr;
		key.lo_port = sport;
		key.hi_port = dport;
	} else {
		key.lo_addr = daddr;
		key.hi_addr = saddr;
		key.lo_port = dport;
		key.hi_port = sport;
	}

	if (internal) {
		struct sfw_flow flow = {};
		flow.state = SFW_FLOW_SEEN_INSIDE;
		bpf_map_update_elem(&sfw_flows, &key, &flow, BPF_ANY);
		return XDP_TX;
	}
	if (bpf_map_lookup_elem(&sfw_flows, &key))
		return XDP_TX;
	return XDP_DROP;
}
