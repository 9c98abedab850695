/* xdp_map_in_map.c — per-service backend pools through map-in-map tables.
 *
 * A small layer-4 load balancer: every backend pool is an ARRAY map of four
 * backends (IPv4 address and a hit counter). Two outer maps pick the pool:
 *   svc_pools  — HASH_OF_MAPS keyed by the destination port (u32, host order)
 *   vip_pools  — ARRAY_OF_MAPS indexed by the low two bits of the destination
 *                address, the fallback for ports without a service pool.
 * Both declare the pool layout as their inner map template in BTF
 * (`__array(values, struct backend_pool)`) and are initialised statically:
 *   svc_pools[53] = pool_dns, vip_pools[0] = pool_web, vip_pools[1] = pool_dns.
 * A backend is chosen by the low two bits of the source port; its address
 * replaces the IPv4 destination (header checksum recomputed), its hit counter
 * is incremented, and the frame is sent back out (XDP_TX).
 *
 * Branches:
 *   not IPv4, or IPv4 with options, or neither UDP nor TCP  -> XDP_PASS
 *   IPv4 or transport header truncated                     -> XDP_DROP
 *   no pool for the port nor for the address               -> XDP_DROP
 *   backend slot holds address 0 (unused)                  -> XDP_DROP
 *   backend found                                          -> rewrite, XDP_TX
 *
 * Maps: svc_pools, vip_pools (outer); pool_web, pool_dns, pool_spare (inner,
 * ARRAY 4 x struct backend). pool_spare is placed by the maps file only.
 * Helpers: bpf_map_lookup_elem (on outer and inner maps).
 */
#include "xdp_common.h"

struct backend {
	__u32 addr; /* network byte order; 0 = unused slot */
	__u32 hits;
};

struct backend_pool {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct backend);
};

struct backend_pool pool_web SEC(".maps");
struct backend_pool pool_dns SEC(".maps");
struct backend_pool pool_spare SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 16);
	__type(key, __u32);
	__array(values, struct backend_pool);
} svc_pools SEC(".maps") = {
	.values = {
		[53] = &pool_dns,
	},
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct backend_pool);
} vip_pools SEC(".maps") = {
	.values = {
		[0] = &pool_web,
		[1] = &pool_dns,
	},
};

SEC("xdp")
int xdp_map_in_map(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u16 *ports;
	__u32 port, slot, vip;
	void *pool;
	struct backend *b;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	if (ip->ihl != 5)
		return XDP_PASS;
	if (ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	ports = (void *)(ip + 1);
	if ((void *)(ports + 2) > data_end)
		return XDP_DROP;

	port = bpf_ntohs(ports[1]);
	pool = bpf_map_lookup_elem(&svc_pools, &port);
	if (!pool) {
		vip = bpf_ntohl(ip->daddr) & 3;
		pool = bpf_map_lookup_elem(&vip_pools, &vip);
		if (!pool)
			return XDP_DROP;
	}
	slot = bpf_ntohs(ports[0]) & 3;
	b = bpf_map_lookup_elem(pool, &slot);
	if (!b || b->addr == 0)
		return XDP_DROP;
	__sync_fetch_and_add(&b->hits, 1);

	ip->daddr = b->addr;
	ip->check = 0;
	ip->check = ipv4_csum20(ip);
	return XDP_TX;
}
