/* xdp_for_each_hash.c — bpf_for_each_map_elem over hash maps, where the visit
 * order is the kernel's: bucket by bucket (jhash of the key), newest element
 * first within a bucket, a replaced key becoming the newest of its bucket
 * except in per-CPU maps, which rewrite values in place.
 *
 * IPv4 UDP to port 7000 + op; the first 4 payload bytes are an argument.
 * Every walk records the keys it visits, in order, in fh_order (up to 32) and
 * writes through the value pointer; the helper's result goes to fh_stats[0]
 * and the sum of the values seen to fh_stats[1].
 *   op 0: walk fh_flows (HASH, 8-byte keys {saddr, sport})
 *   op 1: insert or replace the packet's flow in fh_flows, then walk
 *   op 2: walk fh_flows deleting every element whose value is odd
 *   op 3: walk fh_flows, stopping at the first flow whose address is the argument
 *   op 4: replace the source MAC's entry in fh_macs (LRU_HASH, 6-byte keys), walk it
 *   op 5: insert or rewrite the argument's entry in fh_cpu (PERCPU_HASH), walk it
 *   op 6: walk fh_flows with flags 1: the helper returns -EINVAL
 *
 * Branches:
 *   not IPv4 UDP, ports truncated, port not 7000..7006  -> XDP_PASS
 *   payload shorter than 4 bytes                         -> XDP_DROP
 *   the helper refused its arguments                     -> XDP_ABORTED
 *   otherwise                                            -> XDP_TX
 *
 * Maps: fh_flows HASH 64 x u64, fh_macs LRU_HASH 16 x u32, fh_cpu PERCPU_HASH
 * 8 x u64, fh_order ARRAY 32 x u32, fh_stats ARRAY 2 x u64.
 * Helpers: bpf_for_each_map_elem, bpf_map_lookup/update/delete_elem.
 */
#include "xdp_common.h"

struct bpf_map;

struct flow {
	__u32 saddr;
	__u16 sport;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct flow);
	__type(value, __u64);
} fh_flows SEC(".maps");

struct mac {
	__u8 addr[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16);
	__type(key, struct mac);
	__type(value, __u32);
} fh_macs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} fh_cpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u32);
} fh_order SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} fh_stats SEC(".maps");

struct walk {
	__u32 visited;
	__u32 stop_at;
	__u32 delete_odd;
	__u32 pad;
	__u64 sum;
};

static __always_inline void record(struct walk *w, __u32 what)
{
	__u32 i = w->visited++;
	__u32 *slot = bpf_map_lookup_elem(&fh_order, &i);

	if (slot)
		*slot = what;
}

static long visit_flow(struct bpf_map *map, struct flow *key, __u64 *value, struct walk *w)
{
	record(w, key->saddr ^ ((__u32)key->sport << 16));
	w->sum += *value;
	if (w->delete_odd && (*value & 1)) {
		bpf_map_delete_elem(map, key);
		return 0;
	}
	*value += 0x100;
	return w->stop_at && key->saddr == w->stop_at;
}

static long visit_mac(struct bpf_map *map, struct mac *key, __u32 *value, struct walk *w)
{
	record(w, key->addr[2] | key->addr[3] << 8 | key->addr[4] << 16 | key->addr[5] << 24);
	w->sum += *value;
	*value += 1;
	return 0;
}

static long visit_cpu(struct bpf_map *map, __u32 *key, __u64 *value, struct walk *w)
{
	record(w, *key);
	w->sum += *value;
	*value *= 2;
	return 0;
}

static __always_inline void store(__u32 key, __u64 value)
{
	__u64 *slot = bpf_map_lookup_elem(&fh_stats, &key);

	if (slot)
		*slot = value;
}

SEC("xdp")
int xdp_for_each_hash(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u32 *payload = (void *)(udp + 1);
	struct walk w = {};
	struct flow flow = {};
	struct mac mac;
	__u32 op, arg, one = 1;
	__u64 start = 1;
	long ret;

	if ((void *)(udp + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	op = bpf_ntohs(udp->dest) - 7000;
	if (op > 6)
		return XDP_PASS;
	if ((void *)(payload + 1) > data_end)
		return XDP_DROP;
	arg = *payload;
	flow.saddr = ip->saddr;
	flow.sport = udp->source;
	switch (op) {
	case 1:
		bpf_map_update_elem(&fh_flows, &flow, &start, BPF_ANY);
		ret = bpf_for_each_map_elem(&fh_flows, visit_flow, &w, 0);
		break;
	case 2:
		w.delete_odd = 1;
		ret = bpf_for_each_map_elem(&fh_flows, visit_flow, &w, 0);
		break;
	case 3:
		w.stop_at = arg;
		ret = bpf_for_each_map_elem(&fh_flows, visit_flow, &w, 0);
		break;
	case 4:
		__builtin_memcpy(mac.addr, eth->h_source, 6);
		bpf_map_update_elem(&fh_macs, &mac, &one, BPF_ANY);
		ret = bpf_for_each_map_elem(&fh_macs, visit_mac, &w, 0);
		break;
	case 5:
		start = arg;
		bpf_map_update_elem(&fh_cpu, &arg, &start, BPF_ANY);
		ret = bpf_for_each_map_elem(&fh_cpu, visit_cpu, &w, 0);
		break;
	case 6:
		ret = bpf_for_each_map_elem(&fh_flows, visit_flow, &w, 1);
		break;
	default:
		ret = bpf_for_each_map_elem(&fh_flows, visit_flow, &w, 0);
	}
	store(0, ret);
	store(1, w.sum);
	return ret < 0 ? XDP_ABORTED : XDP_TX;
}

char _license[] SEC("license") = "GPL";
