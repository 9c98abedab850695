/* xdp_mixed.c — an object holding XDP programs beside programs of other types,
 * as observability-minded projects ship them: one .o with the XDP data path,
 * a TC program for the egress side and tracing programs that watch the host.
 *
 * linerate runs, prices and analyses the XDP programs; it lists the others
 * with their type (from the section name) and refuses to run them by name.
 * The kernel runner loads only the XDP program asked for and the programs its
 * program array holds; the XDP program the verifier refuses
 * (mixed_unchecked) fails alone, never the others.
 *
 * Branches, mixed_entry:
 *   frame shorter than 14 bytes            -> XDP_DROP
 *   IPv4 (mixed_stages slot 0 holds
 *         mixed_ipv4)                     -> tail call into mixed_ipv4
 *   anything else                          -> mixed_counts[0]++, XDP_PASS
 * Branches, mixed_ipv4:
 *   IPv4 header truncated                  -> XDP_DROP
 *   TTL <= 1                               -> mixed_counts[1]++, XDP_DROP
 *   otherwise                              -> mixed_counts[2]++, XDP_PASS
 * mixed_unchecked: reads a byte of the packet without a bounds check; the
 *   verifier refuses it (the interpreter would run it).
 * mixed_tc_mark (tc), mixed_on_write (tp/syscalls/sys_enter_write),
 * mixed_on_test_run (fentry/bpf_prog_test_run_xdp): count into
 *   mixed_counts[3..5]; never run by linerate.
 *
 * Maps:
 *   mixed_stages — PROG_ARRAY, 2 slots, [0] = mixed_ipv4 (BTF .values)
 *   mixed_counts — ARRAY, 6 x __u64
 */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 6);
	__type(key, __u32);
	__type(value, __u64);
} mixed_counts SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&mixed_counts, &idx);

	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("xdp")
int mixed_ipv4(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);

	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	if (ip->ttl <= 1) {
		count(1);
		return XDP_DROP;
	}
	count(2);
	return XDP_PASS;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__uint(key_size, sizeof(__u32));
	__array(values, int(struct xdp_md *));
} mixed_stages SEC(".maps") = {
	.values = {
		[0] = (void *)&mixed_ipv4,
	},
};

SEC("xdp")
int mixed_entry(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		bpf_tail_call(ctx, &mixed_stages, 0);
	count(0);
	return XDP_PASS;
}

SEC("xdp")
int mixed_unchecked(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data;

	/* No comparison against data_end: the verifier refuses this access. */
	return data[12] == 0x08 ? XDP_PASS : XDP_DROP;
}

SEC("tc")
int mixed_tc_mark(struct __sk_buff *skb)
{
	skb->mark = 0x2a;
	count(3);
	return 0;
}

SEC("tp/syscalls/sys_enter_write")
int mixed_on_write(void *ctx)
{
	count(4);
	return 0;
}

SEC("fentry/bpf_prog_test_run_xdp")
int mixed_on_test_run(unsigned long long *ctx)
{
	count(5);
	return 0;
}
