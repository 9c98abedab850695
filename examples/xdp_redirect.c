/* xdp_redirect.c — port-based steering with devmap, cpumap and bpf_redirect.
 *
 * IPv4 TCP/UDP packets whose destination port has an entry in redir_ports are
 * redirected with bpf_redirect_map into the DEVMAP slot named by that entry
 * (an empty slot makes the helper return the fallback action XDP_DROP). ICMP
 * is steered through a CPUMAP to CPU (IP id & 1) (fallback XDP_PASS when that
 * CPU has no entry). Frames with EtherType 0x88B6 (local experimental) are redirected
 * with plain bpf_redirect to ifindex 1 (loopback). Everything else passes.
 * In BPF_PROG_TEST_RUN a redirect only shows up as the return value
 * XDP_REDIRECT (4); the packet is not modified.
 *
 * Branches:
 *   frame shorter than 14 bytes                        -> XDP_DROP
 *   EtherType 0x88B6                                   -> bpf_redirect(1) = XDP_REDIRECT
 *   not IPv4                                           -> XDP_PASS
 *   IPv4 header truncated / IHL < 5                    -> XDP_DROP
 *   ICMP, redir_cpus[id & 1] set                       -> XDP_REDIRECT
 *   ICMP, redir_cpus[id & 1] empty                     -> XDP_PASS (fallback)
 *   other non-TCP/UDP                                  -> XDP_PASS
 *   TCP/UDP ports truncated                            -> XDP_DROP
 *   dport not in redir_ports                           -> XDP_PASS
 *   dport in redir_ports, devmap slot set              -> XDP_REDIRECT
 *   dport in redir_ports, devmap slot empty            -> XDP_DROP (fallback)
 *
 * Maps:
 *   redir_ports — HASH, key __u16 port (host order), value __u32 devmap slot
 *   redir_devs  — DEVMAP, 8 x __u32 ifindex
 *   redir_cpus  — CPUMAP, 2 x __u32 queue size (key = CPU number)
 * Helpers: bpf_map_lookup_elem, bpf_redirect_map, bpf_redirect.
 */
#include "xdp_common.h"

#define ETH_P_EXPERIMENTAL2 0x88B6
#define LOOPBACK_IFINDEX 1

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u32);
} redir_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} redir_devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} redir_cpus SEC(".maps");

SEC("xdp")
int xdp_redirect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__be16 *ports;
	__u16 dport;
	__u32 *slot;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_EXPERIMENTAL2))
		return bpf_redirect(LOOPBACK_IFINDEX, 0);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl < 5)
		return XDP_DROP;
	if (ip->protocol == IPPROTO_ICMP)
		return bpf_redirect_map(&redir_cpus, bpf_ntohs(ip->id) & 1, XDP_PASS);
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	ports = (void *)ip + ip->ihl * 4;
	if ((void *)(ports + 2) > data_end)
		return XDP_DROP;
	dport = bpf_ntohs(ports[1]);
	slot = bpf_map_lookup_elem(&redir_ports, &dport);
	if (!slot)
		return XDP_PASS;
	return bpf_redirect_map(&redir_devs, *slot, XDP_DROP);
}
