/* xdp_bpf_loop.c — bpf_loop: IPv6 extension headers walked by a callback, and
 * a packet-controlled loop that exercises the helper's count, early stop and
 * refusals.
 *
 * IPv6: bpf_loop(MAX_EXT, skip_ext, &walk, 0) calls skip_ext once per header;
 * the callback context (struct ext_walk, on the caller's stack) carries the
 * XDP context, the offset and type of the next header. Hop-by-hop, routing and
 * destination options headers are skipped by their length, fragment headers by
 * 8 bytes; any other header stops the walk (the callback returns 1).
 *
 * IPv4 UDP to port 9: the payload holds nr_loops, flags and limit (u32, little
 * endian); bpf_loop(nr_loops, add_index, &sum, flags) adds each index to an
 * accumulator and stops once it exceeds limit. The helper's return value (the
 * number of calls, -EINVAL for nonzero flags, -E2BIG above 1 << 23 loops) and
 * the accumulator are stored in loop_stats[0] and loop_stats[1].
 *
 * Branches:
 *   frame shorter than an Ethernet header / IPv6 header     -> XDP_DROP
 *   IPv6, a header runs past the packet                     -> XDP_DROP
 *   IPv6, more than MAX_EXT extension headers               -> XDP_DROP
 *   IPv6, ICMPv6 after the extension headers                -> XDP_TX
 *   IPv6, anything else after them                          -> XDP_PASS
 *   IPv4 UDP to port 9 with 12 payload bytes, bpf_loop >= 0  -> XDP_TX
 *   ... bpf_loop refused (negative errno)                    -> XDP_ABORTED
 *   anything else                                           -> XDP_PASS
 *
 * Maps:
 *   ext_count  — ARRAY, 1 x __u64: extension headers skipped, over all packets
 *   loop_stats — ARRAY, 2 x __u64: last bpf_loop result and accumulator
 * Helpers: bpf_loop, bpf_map_lookup_elem.
 */
#include "xdp_common.h"

#define MAX_EXT 6
#define NEXTHDR_ICMP6 58
#define DISCARD_PORT 9

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ext_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} loop_stats SEC(".maps");

struct ext_walk {
	struct xdp_md *xdp;
	__u32 off;     /* offset of the next header from data */
	__u32 nexthdr; /* its type */
	__u32 skipped; /* extension headers skipped */
	__u32 state;   /* 0 walking, 1 reached the upper layer, 2 truncated */
};

struct opt_hdr {
	__u8 nexthdr;
	__u8 hdrlen;
};

static long skip_ext(__u32 index, void *arg)
{
	struct ext_walk *w = arg;
	void *data = (void *)(long)w->xdp->data;
	void *data_end = (void *)(long)w->xdp->data_end;
	__u32 off = w->off;
	struct opt_hdr *h;

	if (w->nexthdr != NEXTHDR_HOP && w->nexthdr != NEXTHDR_ROUTING &&
	    w->nexthdr != NEXTHDR_DEST && w->nexthdr != NEXTHDR_FRAGMENT) {
		w->state = 1;
		return 1;
	}
	if (off > 1024) {
		w->state = 2;
		return 1;
	}
	h = data + off;
	if ((void *)(h + 1) > data_end) {
		w->state = 2;
		return 1;
	}
	w->off = off + (w->nexthdr == NEXTHDR_FRAGMENT ? 8 : (h->hdrlen + 1) * 8);
	w->nexthdr = h->nexthdr;
	w->skipped++;
	return 0;
}

struct loop_sum {
	__u64 acc;
	__u64 limit;
};

static long add_index(__u32 index, void *arg)
{
	struct loop_sum *s = arg;

	s->acc += index;
	return s->acc > s->limit ? 1 : 0;
}

static __always_inline void store(void *map, __u32 key, __u64 value)
{
	__u64 *slot = bpf_map_lookup_elem(map, &key);

	if (slot)
		*slot = value;
}

static __always_inline int ipv6(struct xdp_md *ctx, void *data, void *data_end)
{
	struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);
	struct ext_walk w = {};
	__u32 zero = 0;
	__u64 *count;

	if ((void *)(ip6 + 1) > data_end)
		return XDP_DROP;
	w.xdp = ctx;
	w.off = sizeof(struct ethhdr) + sizeof(*ip6);
	w.nexthdr = ip6->nexthdr;
	bpf_loop(MAX_EXT, skip_ext, &w, 0);
	count = bpf_map_lookup_elem(&ext_count, &zero);
	if (count)
		*count += w.skipped;
	if (w.state == 2 || w.state == 0)
		return XDP_DROP;
	return w.nexthdr == NEXTHDR_ICMP6 ? XDP_TX : XDP_PASS;
}

SEC("xdp")
int xdp_bpf_loop(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	__u32 *args;
	struct loop_sum sum = {};
	long ret;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return ipv6(ctx, data, data_end);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end || udp->dest != bpf_htons(DISCARD_PORT))
		return XDP_PASS;
	args = (void *)(udp + 1);
	if ((void *)(args + 3) > data_end)
		return XDP_PASS;
	sum.limit = args[2];
	ret = bpf_loop(args[0], add_index, &sum, args[1]);
	store(&loop_stats, 0, ret);
	store(&loop_stats, 1, sum.acc);
	return ret < 0 ? XDP_ABORTED : XDP_TX;
}

char _license[] SEC("license") = "GPL";
