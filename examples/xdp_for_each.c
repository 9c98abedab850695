/* xdp_for_each.c — bpf_for_each_map_elem over an array of port rules.
 *
 * IPv4 TCP/UDP: bpf_for_each_map_elem(&port_rules, match_rule, &m, 0) visits
 * the rules in index order; match_rule skips empty slots (port 0) and rules of
 * another port or protocol, and on the first match counts a hit in the rule
 * (a write through the value pointer), remembers the rule's action and index
 * (read through the key pointer) and returns 1 to stop. The packet gets the
 * action (XDP_PASS without a match). The helper's result, the number of rules
 * visited, goes to fe_stats[0] and the matching index to fe_stats[1].
 *
 * ICMP: bpf_for_each_map_elem(&port_rules, count_rule, &c, ip->tos) visits every
 * rule (count_rule never stops) and counts the non-empty ones; a nonzero TOS
 * makes the flags nonzero, which the helper refuses with -EINVAL. The count
 * goes to fe_stats[2], the helper's result to fe_stats[3].
 *
 * Branches:
 *   frame shorter than an Ethernet + IPv4 header, not IPv4 -> XDP_PASS
 *   TCP/UDP ports truncated                               -> XDP_DROP
 *   TCP/UDP, a rule matches                               -> its action
 *   TCP/UDP, no rule matches                              -> XDP_PASS
 *   ICMP, TOS 0                                           -> XDP_TX
 *   ICMP, TOS nonzero (the helper returns -EINVAL)        -> XDP_ABORTED
 *   other protocols                                       -> XDP_PASS
 *
 * Maps:
 *   port_rules — ARRAY, 8 x struct rule {u16 port; u8 proto; u8 action; u32 hits}
 *   fe_stats   — ARRAY, 4 x __u64
 * Helpers: bpf_for_each_map_elem, bpf_map_lookup_elem.
 */
#include "xdp_common.h"

#define RULES 8

struct bpf_map;

struct rule {
	__u16 port; /* host order; 0: empty slot */
	__u8 proto;
	__u8 action;
	__u32 hits;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RULES);
	__type(key, __u32);
	__type(value, struct rule);
} port_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} fe_stats SEC(".maps");

struct match {
	__u32 port;
	__u32 proto;
	__u32 action;
	__u32 index;
};

static long match_rule(struct bpf_map *map, __u32 *key, struct rule *r, struct match *m)
{
	if (r->port == 0 || r->port != m->port || r->proto != m->proto)
		return 0;
	r->hits++;
	m->action = r->action;
	m->index = *key;
	return 1;
}

static long count_rule(struct bpf_map *map, __u32 *key, struct rule *r, __u64 *count)
{
	if (r->port != 0)
		*count += 1;
	return 0;
}

static __always_inline void store(__u32 key, __u64 value)
{
	__u64 *slot = bpf_map_lookup_elem(&fe_stats, &key);

	if (slot)
		*slot = value;
}

SEC("xdp")
int xdp_for_each(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct match m = {};
	__u64 count = 0;
	__u16 *ports;
	long ret;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return XDP_PASS;
	if (ip->protocol == IPPROTO_ICMP) {
		ret = bpf_for_each_map_elem(&port_rules, count_rule, &count, ip->tos);
		store(2, count);
		store(3, ret);
		return ret < 0 ? XDP_ABORTED : XDP_TX;
	}
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	ports = (void *)(ip + 1);
	if ((void *)(ports + 2) > data_end)
		return XDP_DROP;
	m.port = bpf_ntohs(ports[1]);
	m.proto = ip->protocol;
	m.action = XDP_PASS;
	m.index = ~0u;
	ret = bpf_for_each_map_elem(&port_rules, match_rule, &m, 0);
	store(0, ret);
	store(1, m.index);
	return m.action <= XDP_TX ? m.action : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
