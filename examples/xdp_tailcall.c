/* xdp_tailcall.c — tail-call pair: Ethernet dispatcher + IPv4 protocol counter.
 *
 * xdp_tailcall_entry parses the Ethernet header and tail-calls through the
 * program array tc_progs: IPv4 frames jump to slot 0, IPv6 frames to slot 1.
 * Slot 0 is filled declaratively in the object (libbpf's BTF-defined
 * `.values = { [0] = &xdp_tailcall_ipv4 }`); slot 1 is left empty, so for IPv6
 * the tail call falls through and the entry program continues.
 * xdp_tailcall_ipv4 counts IPv4 packets per IP protocol number and drops UDP.
 *
 * Branches, xdp_tailcall_entry:
 *   frame shorter than 14 bytes                 -> XDP_DROP
 *   IPv4                                        -> tail call into xdp_tailcall_ipv4
 *   IPv6 (slot 1 empty: tail call fails)        -> tc_counts[256]++ , XDP_PASS
 *   anything else                               -> XDP_PASS
 *   (if slot 0 were emptied, IPv4 would take the same fall-through path)
 * Branches, xdp_tailcall_ipv4:
 *   frame/IPv4 header truncated                 -> XDP_DROP
 *   UDP                                         -> tc_counts[17]++, XDP_DROP
 *   other protocols                             -> tc_counts[proto]++, XDP_PASS
 *
 * Maps:
 *   tc_progs  — PROG_ARRAY, 2 slots, initial contents [0] = xdp_tailcall_ipv4
 *   tc_counts — ARRAY, 257 x __u64 (index = IP protocol, 256 = failed tail calls)
 * Helpers: bpf_tail_call, bpf_map_lookup_elem.
 */
#include "xdp_common.h"

#define FALLTHROUGH_SLOT 256

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 257);
	__type(key, __u32);
	__type(value, __u64);
} tc_counts SEC(".maps");

static __always_inline void bump(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&tc_counts, &idx);

	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("xdp")
int xdp_tailcall_ipv4(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	bump(ip->protocol);
	return ip->protocol == IPPROTO_UDP ? XDP_DROP : XDP_PASS;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__uint(key_size, sizeof(__u32));
	__array(values, int(struct xdp_md *));
} tc_progs SEC(".maps") = {
	.values = {
		[0] = (void *)&xdp_tailcall_ipv4,
	},
};

SEC("xdp")
int xdp_tailcall_entry(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		bpf_tail_call(ctx, &tc_progs, 0);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		bpf_tail_call(ctx, &tc_progs, 1);
	} else {
		return XDP_PASS;
	}
	bump(FALLTHROUGH_SLOT);
	return XDP_PASS;
}
