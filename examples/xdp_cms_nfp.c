/* xdp_cms_nfp.c — count-only count-min sketch, NFP-offloadable.
 *
 * The sketch of xdp_cms.c (see there) without the heavy-hitter decision:
 * every IPv4 TCP/UDP packet increments one counter in each of ROWS rows of a
 * count-min sketch (row r hashes the 5-tuple with a multiply/xorshift mix
 * seeded with (r + 1) * 0x9E3779B1) and is passed. The counters are never
 * read by the program; estimates are left to whoever reads the map (user
 * space). This is the Count-Min of paper 000 (Table 1), which "counts the
 * number of UDP and TCP flows, using a varying number of hash functions".
 *
 * Differences from xdp_cms.c, because of what the kernel's NFP JIT offloads:
 *   - the increment is a non-fetching atomic add: __sync_fetch_and_add with
 *     its result unused, which clang emits as `lock *(u32 *)(rX + 0) += rY`
 *     (BPF_ATOMIC BPF_ADD without BPF_FETCH). The NFP JIT has no fetching
 *     atomics (nfp_bpf_check_atomic / mem_atomic4 accept only plain add);
 *   - count-only: no estimate and no drop. Reading the counter back (the
 *     only way to get an estimate without a fetching atomic) is refused by
 *     the kernel's NFP verifier: nfp_bpf_map_mark_used_one rejects a program
 *     that both reads and atomically adds the same 32-bit word of a map value
 *     ("map value use type conflict"), since the NFP keeps atomic counters in
 *     its own byte order; paper 000 §3: BPF/XDP on NFP "does not support
 *     reading and writing from the same DRAM location". So counted packets
 *     return XDP_PASS whatever the counters hold, and no instruction loads
 *     from a map value.
 *
 * ROWS is a compile-time parameter (-DROWS=N, default 5); the Makefile builds
 * xdp_cms_nfp_d2.o, _d5.o, _d10.o and _d20.o. The row loop is a real loop
 * (unrolling disabled), so every build has a back edge.
 *
 * Branches:
 *   frame shorter than 14 bytes, or not IPv4          -> XDP_PASS (not counted)
 *   IPv4 header truncated / IHL < 5                   -> XDP_DROP
 *   protocol other than TCP/UDP                       -> XDP_PASS (not counted)
 *   TCP/UDP port pair truncated                       -> XDP_DROP
 *   counted (one add per row)                         -> XDP_PASS
 *
 * Maps: cms — ARRAY of ROWS * COLS __u32 counters (row-major: index = r * COLS + col),
 *       key __u32, only atomically added to. Helpers: bpf_map_lookup_elem.
 *       Atomics: add (non-fetching).
 */
#include "xdp_common.h"

#ifndef ROWS
#define ROWS 5
#endif
#define COLS 512 /* power of two */

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
int xdp_cms_nfp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__u32 saddr, daddr, ports, proto;

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
		__sync_fetch_and_add(cnt, 1); /* result unused: non-fetching add; never read */
	}

	return XDP_PASS;
}
