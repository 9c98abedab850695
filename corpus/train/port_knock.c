/* port_knock.c — port-knocking state machine guarding a TCP service.
 *
 * Each IPv4 source's progress is kept in `knock_state` (LRU hash). UDP
 * datagrams to the knock ports K1, K2, K3 in that order advance the state
 * 0 -> 1 -> 2 -> 3 (open); a UDP datagram to any other port of the knock range
 * 7000..7999, or a knock out of order, resets the source to 0. TCP segments to
 * the guarded port 22 pass only from sources in state 3, and drop otherwise;
 * a TCP RST from an open source closes it (state 0). All other traffic passes.
 * The transition function is a separate BPF function.
 *
 * Maps: knock_state (LRU_HASH be32 -> u32). Helpers: map_lookup_elem,
 * map_update_elem.
 */
#include "corpus.h"

#define K1 7001
#define K2 7523
#define K3 7342
#define GUARDED 22

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} knock_state SEC(".maps");

static __noinline __u32 advance(__u32 state, __u32 port)
{
	switch (state) {
	case 0:
		return port == K1 ? 1 : 0;
	case 1:
		return port == K2 ? 2 : port == K1 ? 1 : 0;
	case 2:
		return port == K3 ? 3 : port == K1 ? 1 : 0;
	default:
		return state;
	}
}

SEC("xdp")
int port_knock(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETHTYPE_IP))
		return XDP_PASS;
	if (ip->ihl != 5)
		return XDP_PASS;
	__u32 src = ip->saddr;
	__u32 *st = bpf_map_lookup_elem(&knock_state, &src);
	__u32 state = st ? *st : 0;

	if (ip->protocol == P_UDP) {
		struct udphdr *udp = (void *)(ip + 1);
		if ((void *)(udp + 1) > end)
			return XDP_DROP;
		__u32 port = bpf_ntohs(udp->dest);
		if (port < 7000 || port > 7999)
			return XDP_PASS;
		__u32 next = state == 3 ? 3 : advance(state, port);
		if (next != state || !st)
			bpf_map_update_elem(&knock_state, &src, &next, BPF_ANY);
		return XDP_DROP;
	}
	if (ip->protocol == P_TCP) {
		struct tcphdr *tcp = (void *)(ip + 1);
		if ((void *)(tcp + 1) > end)
			return XDP_DROP;
		if (tcp->dest != bpf_htons(GUARDED))
			return XDP_PASS;
		if (state != 3)
			return XDP_DROP;
		if (tcp->rst && st)
			*st = 0;
		return XDP_PASS;
	}
	return XDP_PASS;
}
