/* xdp_cms.c — count-min sketch heavy-hitter detector.
 *
 * Every IPv4 TCP/UDP packet increments one counter in each of ROWS rows of a
 * count-min sketch; row r uses its own hash of the 5-tuple (a multiply/xorshift
 * mix seeded with (r + 1) * 0x9E3779B1). The flow's estimate is the minimum of
 * its ROWS counters after the increment; flows whose estimate reaches
 * HEAVY_THRESHOLD are dropped as heavy hitters.
 *
 * ROWS is a compile-time parameter (-DROWS=N, default 5); the Makefile builds
 * xdp_cms_d2.o, xdp_cms_d5.o, xdp_cms_d10.o, xdp_cms_d20.o. COLS (-DCOLS=N, a
 * power of two, default 512) sizes the rows: xdp_cms_huge.o is ROWS = 4,
 * COLS = 2^23, a 2^25-counter (128 MiB) sketch. The row loop is a
 * real loop (unrolling disabled), so every build has a back edge.
 *
 * Branches:
 *   frame shorter than 14 bytes, or not IPv4          -> XDP_PASS (not counted)
 *   IPv4 header truncated / IHL < 5                   -> XDP_DROP
 *   protocol other than TCP/UDP                       -> XDP_PASS (not counted)
 *   TCP/UDP port pair truncated                       -> XDP_DROP
 *   counted, estimate <  HEAVY_THRESHOLD              -> XDP_PASS
 *   counted, estimate >= HEAVY_THRESHOLD              -> XDP_DROP
 *
 * Maps: cms — ARRAY of ROWS * COLS __u32 counters (row-major: index = r * COLS + col),
 *       key __u32. Helpers: bpf_map_lookup_elem. Atomics: fetch-and-add.
 */
#include "xdp_common.h"

#ifndef ROWS
#define ROWS 5
#endif
#ifndef COLS
#define COLS 512 /* power of two */
#endif
#define HEAVY_THRESHOLD 16

/* xdp_cms_nfp.c builds this program with CMS_NFP: count only, never read a counter (see
 * there). */
#ifdef CMS_NFP
#define xdp_cms xdp_cms_nfp
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ROWS * COLS);
	__type(key, __u32);
	__type(value, __u32);
} cms SEC(".maps");

static __always_inline __u32 mix32(__u32 h, __u32 v)
{
	h ^= v;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

SEC("xdp")
int xdp_cms(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
#ifdef CMS_NFP
	__u32 saddr, daddr, ports, proto;
#else
	__u32 saddr, daddr, ports, proto, est = 0xffffffffu;
#endif

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl < 5)
		return XDP_DROP;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	__u32 *l4 = (void *)ip + ip->ihl * 4;
	if ((void *)(l4 + 1) > data_end)
		return XDP_DROP;

	/* Hash inputs in host byte order. */
	saddr = bpf_ntohl(ip->saddr);
	daddr = bpf_ntohl(ip->daddr);
	ports = bpf_ntohl(*l4); /* sport << 16 | dport */
	proto = ip->protocol;

#pragma clang loop unroll(disable)
	for (__u32 r = 0; r < ROWS; r++) {
		__u32 h = (r + 1) * 0x9E3779B1u;

		h = mix32(h, saddr);
		h = mix32(h, daddr);
		h = mix32(h, ports);
		h = mix32(h, proto);

		__u32 idx = r * COLS + (h & (COLS - 1));
		__u32 *cnt = bpf_map_lookup_elem(&cms, &idx);
		if (!cnt)
			continue;
#ifdef CMS_NFP
		__sync_fetch_and_add(cnt, 1); /* result unused: non-fetching add; never read */
#else
		__u32 c = __sync_fetch_and_add(cnt, 1) + 1;
		if (c < est)
			est = c;
#endif
	}

#ifdef CMS_NFP
	return XDP_PASS;
#else
	return est >= HEAVY_THRESHOLD ? XDP_DROP : XDP_PASS;
#endif
}
