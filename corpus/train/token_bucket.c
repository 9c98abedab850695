/* token_bucket.c — per-source byte rate limiter with a token bucket.
 *
 * Time is the packet clock `tb_clock[0]`, incremented by every packet (so the
 * limiter is deterministic). Each IPv4 source address owns a bucket in
 * `buckets`; a new source starts with a full bucket of BURST bytes. A bucket
 * gains RATE bytes per tick since its last packet, up to BURST; a packet
 * costing more bytes than the bucket holds is dropped (and counted in the
 * bucket's `dropped`), otherwise its length is taken out and it passes. A new
 * source's packet longer than BURST drops without creating a bucket.
 * Sources in `tb_exempt` bypass the limiter; non-IPv4 traffic passes.
 *
 * Maps: tb_clock (ARRAY 1 of u64), buckets (HASH be32 -> struct bucket),
 * tb_exempt (HASH be32 -> u32). Helpers: map_lookup_elem, map_update_elem.
 */
#include "corpus.h"

#define RATE 64
#define BURST 1500

struct bucket {
	__u64 tokens;
	__u64 last;
	__u64 dropped;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tb_clock SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct bucket);
} buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u32);
} tb_exempt SEC(".maps");

SEC("xdp")
int token_bucket(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u32 zero = 0;

	__u64 *clock = bpf_map_lookup_elem(&tb_clock, &zero);
	if (!clock)
		return XDP_ABORTED;
	__u64 now = __sync_fetch_and_add(clock, 1) + 1;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETHTYPE_IP))
		return XDP_PASS;
	__u32 src = ip->saddr;
	if (bpf_map_lookup_elem(&tb_exempt, &src))
		return XDP_PASS;

	__u64 cost = (__u64)(end - data);
	struct bucket *b = bpf_map_lookup_elem(&buckets, &src);
	if (!b) {
		if (cost > BURST)
			return XDP_DROP;
		struct bucket fresh = { .tokens = BURST - cost, .last = now };
		bpf_map_update_elem(&buckets, &src, &fresh, BPF_NOEXIST);
		return XDP_PASS;
	}
	__u64 elapsed = now - b->last;
	__u64 tokens = b->tokens;
	if (elapsed > BURST / RATE)
		tokens = BURST;
	else
		tokens += elapsed * RATE;
	if (tokens > BURST)
		tokens = BURST;
	b->last = now;
	if (tokens < cost) {
		b->tokens = tokens;
		b->dropped++;
		return XDP_DROP;
	}
	b->tokens = tokens - cost;
	return XDP_PASS;
}
