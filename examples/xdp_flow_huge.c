/* xdp_flow_huge.c — per-flow accounting in a 10-million-entry hash map.
 *
 * Every IPv4 TCP/UDP packet is accounted to its flow (the 5-tuple as it
 * appears on the wire) in `flows`, a hash map sized for ten million flows and
 * created without preallocation (BPF_F_NO_PREALLOC), as large flow tables are.
 * A known flow's packet and byte counters grow; an unknown flow is inserted
 * (BPF_NOEXIST) and counted in flow_stats[0], or, when the table refuses it
 * (full), in flow_stats[1]. A flow whose entry carries a non-zero `blocked`
 * (seeded from user space) is dropped.
 *
 * Branches:
 *   not IPv4                                      -> XDP_PASS (not counted)
 *   IPv4 header truncated / IHL < 5               -> XDP_DROP
 *   protocol other than TCP/UDP                   -> XDP_PASS (not counted)
 *   TCP/UDP port pair truncated                   -> XDP_DROP
 *   known flow, blocked                           -> XDP_DROP (counted)
 *   known flow, not blocked                       -> XDP_PASS (counted)
 *   new flow, inserted                            -> XDP_PASS, flow_stats[0] += 1
 *   new flow, table full                          -> XDP_PASS, flow_stats[1] += 1
 *
 * Maps:
 *   flows      — HASH, 10,000,000 entries, BPF_F_NO_PREALLOC;
 *                key struct flow_key (16 bytes), value struct flow_val (24 bytes)
 *   flow_stats — ARRAY, 2 x __u64: flows inserted, insertions refused
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem. Atomics: fetch-and-add.
 */
#include "xdp_common.h"

#define FLOWS 10000000

struct flow_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct flow_val {
	__u64 packets;
	__u64 bytes;
	__u32 blocked;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FLOWS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct flow_key);
	__type(value, struct flow_val);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} flow_stats SEC(".maps");

static __always_inline void count(__u32 index)
{
	__u64 *n = bpf_map_lookup_elem(&flow_stats, &index);

	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("xdp")
int xdp_flow_huge(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct flow_key key = {};
	struct flow_val *val;
	__u64 len = data_end - data;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl < 5)
		return XDP_DROP;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	__be16 *ports = (void *)ip + ip->ihl * 4;
	if ((void *)(ports + 2) > data_end)
		return XDP_DROP;

	key.saddr = ip->saddr;
	key.daddr = ip->daddr;
	key.sport = ports[0];
	key.dport = ports[1];
	key.proto = ip->protocol;

	val = bpf_map_lookup_elem(&flows, &key);
	if (val) {
		__sync_fetch_and_add(&val->packets, 1);
		__sync_fetch_and_add(&val->bytes, len);
		return val->blocked ? XDP_DROP : XDP_PASS;
	}
	struct flow_val fresh = { .packets = 1, .bytes = len };
	if (bpf_map_update_elem(&flows, &key, &fresh, BPF_NOEXIST) == 0)
		count(0);
	else
		count(1);
	return XDP_PASS;
}
