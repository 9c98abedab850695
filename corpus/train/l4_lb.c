/* l4_lb.c — L4 load balancer with a consistent-hash lookup table.
 *
 * Untagged IPv4 TCP/UDP packets (20-byte header) to a virtual service
 * (address, port, protocol) in `services` are hashed on their 5-tuple; the hash
 * selects a slot of the service's RING-slot region of `ring`, whose value is a
 * backend index into `backends`. The destination address becomes the
 * backend's, the destination MAC the backend's MAC, the source MAC ours
 * (the old destination), checksums are updated incrementally, and the packet
 * is transmitted (XDP_TX). An empty slot (backend 0) or an unknown backend
 * drops. Traffic to other destinations passes; truncated headers drop.
 * The hash is a separate BPF function.
 *
 * Maps: services (HASH struct vip -> u32 ring offset), ring (ARRAY 256 of u32),
 * backends (ARRAY 16 of struct backend). Helpers: map_lookup_elem.
 */
#include "corpus.h"

#define RING 64

struct vip {
	__be32 addr;
	__be16 port;
	__u8 proto;
	__u8 pad;
};

struct backend {
	__be32 addr;
	__u8 mac[ETH_ALEN];
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32);
	__type(key, struct vip);
	__type(value, __u32);
} services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4 * RING);
	__type(key, __u32);
	__type(value, __u32);
} ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct backend);
} backends SEC(".maps");

static __noinline __u32 flow_hash(__u32 saddr, __u32 daddr, __u32 ports, __u32 proto)
{
	__u32 h = 2166136261u;

	h = (h ^ saddr) * 16777619u;
	h = (h ^ daddr) * 16777619u;
	h = (h ^ ports) * 16777619u;
	h = (h ^ proto) * 16777619u;
	return h ^ (h >> 15);
}

SEC("xdp")
int l4_lb(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETHTYPE_IP) || ip->ihl != 5)
		return XDP_PASS;
	if (ip->protocol != P_TCP && ip->protocol != P_UDP)
		return XDP_PASS;
	__be16 *ports = (void *)(ip + 1);
	if ((void *)(ports + 2) > end)
		return XDP_DROP;

	struct vip key = { .addr = ip->daddr, .port = ports[1], .proto = ip->protocol };
	__u32 *base = bpf_map_lookup_elem(&services, &key);
	if (!base)
		return XDP_PASS;

	__u32 h = flow_hash(ip->saddr, ip->daddr, *(__u32 *)ports, ip->protocol);
	__u32 slot = (*base & 3) * RING + h % RING;
	__u32 *idx = bpf_map_lookup_elem(&ring, &slot);
	if (!idx || *idx == 0)
		return XDP_DROP;
	__u32 bi = *idx;
	struct backend *b = bpf_map_lookup_elem(&backends, &bi);
	if (!b || !b->addr)
		return XDP_DROP;

	__u16 *l4check = 0;
	if (ip->protocol == P_TCP) {
		struct tcphdr *tcp = (void *)(ip + 1);
		if ((void *)(tcp + 1) > end)
			return XDP_DROP;
		l4check = &tcp->check;
	} else {
		struct udphdr *udp = (void *)(ip + 1);
		if ((void *)(udp + 1) > end)
			return XDP_DROP;
		if (udp->check)
			l4check = &udp->check;
	}
	__be32 old = ip->daddr;
	ip->daddr = b->addr;
	ip->check = csum_replace32(ip->check, old, b->addr);
	if (l4check)
		*l4check = csum_replace32(*l4check, old, b->addr);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, b->mac, ETH_ALEN);
	return XDP_TX;
}
