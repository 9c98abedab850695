/* xdp_firewall.c — stateful 5-tuple firewall for an "inside" network.
 *
 * The inside network is 10.0.0.0/8. Connections may only be opened from the
 * inside: an outbound TCP SYN (SYN set, ACK clear) or any outbound UDP datagram
 * creates a connection entry; inbound packets pass only if their connection
 * exists. Connections are keyed by a direction-independent 5-tuple: the two
 * (address, port) endpoints are put in canonical order (numerically smaller
 * endpoint first, compared in host byte order), so both directions of a flow
 * map to the same key.
 *
 * Branches (verdict counter index in brackets):
 *   frame shorter than 14 bytes                          -> XDP_DROP [2]
 *   not IPv4                                             -> XDP_PASS [3]
 *   IPv4 header truncated / IHL < 5                      -> XDP_DROP [2]
 *   IPv4 fragment (MF set or offset != 0)                -> XDP_DROP [2]
 *   protocol other than TCP/UDP (e.g. ICMP)              -> XDP_PASS [3]
 *   TCP/UDP header truncated                             -> XDP_DROP [2]
 *   inside->inside or outside->outside                   -> XDP_PASS [3]
 *   outbound UDP / TCP SYN, no entry                     -> entry created, XDP_PASS [0]
 *   outbound UDP / TCP SYN, entry exists                 -> entry counted, XDP_PASS [1]
 *   outbound TCP non-SYN, no entry                       -> XDP_DROP [2]
 *   outbound TCP non-SYN, entry exists                   -> XDP_PASS [1]; FIN or RST deletes it
 *   inbound, no entry                                    -> XDP_DROP [2]
 *   inbound, entry exists                                -> XDP_PASS [1]; TCP RST deletes it
 *
 * Maps:
 *   fw_conns    — HASH, key struct fw_key (16 bytes), value struct fw_val {packets, bytes}
 *   fw_verdicts — ARRAY, 4 x __u64: 0 new, 1 established, 2 dropped, 3 not inspected
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem, bpf_map_delete_elem.
 * bpf-to-bpf calls: fw_make_key() is a static noinline sub-program, and
 * fw_direction() is a global function (verified on its own, lives in .text).
 */
#include "xdp_common.h"

#define INSIDE_NET 0x0a000000u /* 10.0.0.0 */
#define INSIDE_MASK 0xff000000u /* /8 */

struct fw_key {
	__be32 lo_addr;
	__be32 hi_addr;
	__be16 lo_port;
	__be16 hi_port;
	__u8 proto;
	__u8 pad[3];
};

struct fw_val {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct fw_key);
	__type(value, struct fw_val);
} fw_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} fw_verdicts SEC(".maps");

enum { V_NEW = 0, V_EST = 1, V_DROP = 2, V_OTHER = 3 };
enum { DIR_OUT = 0, DIR_IN = 1, DIR_INTERNAL = 2, DIR_TRANSIT = 3 };

/* Global function: verified independently of its caller. Host-order addresses. */
__attribute__((noinline)) int fw_direction(__u32 saddr, __u32 daddr)
{
	int s_in = (saddr & INSIDE_MASK) == INSIDE_NET;
	int d_in = (daddr & INSIDE_MASK) == INSIDE_NET;

	if (s_in && d_in)
		return DIR_INTERNAL;
	if (s_in)
		return DIR_OUT;
	if (d_in)
		return DIR_IN;
	return DIR_TRANSIT;
}

/* Static sub-program: fills the canonical key. ports = sport << 16 | dport
 * (host order). */
static __attribute__((noinline)) int fw_make_key(struct fw_key *k, __u32 saddr, __u32 daddr,
						 __u32 ports, __u32 proto)
{
	__u16 sport = ports >> 16, dport = ports & 0xffff;
	int swap = saddr > daddr || (saddr == daddr && sport > dport);

	k->lo_addr = bpf_htonl(swap ? daddr : saddr);
	k->hi_addr = bpf_htonl(swap ? saddr : daddr);
	k->lo_port = bpf_htons(swap ? dport : sport);
	k->hi_port = bpf_htons(swap ? sport : dport);
	k->proto = proto;
	k->pad[0] = k->pad[1] = k->pad[2] = 0;
	return swap;
}

static __always_inline int verdict(__u32 idx, int action)
{
	__u64 *c = bpf_map_lookup_elem(&fw_verdicts, &idx);

	if (c)
		__sync_fetch_and_add(c, 1);
	return action;
}

SEC("xdp")
int xdp_firewall(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct fw_key key;
	struct fw_val *val;
	__u32 saddr, daddr, ports;
	__u8 tcp_flags = 0;
	int dir;

	if ((void *)(eth + 1) > data_end)
		return verdict(V_DROP, XDP_DROP);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return verdict(V_OTHER, XDP_PASS);

	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl < 5)
		return verdict(V_DROP, XDP_DROP);
	if (ip->frag_off & bpf_htons(0x3fff))
		return verdict(V_DROP, XDP_DROP);
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return verdict(V_OTHER, XDP_PASS);

	void *l4 = (void *)ip + ip->ihl * 4;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > data_end)
			return verdict(V_DROP, XDP_DROP);
		ports = (__u32)bpf_ntohs(tcp->source) << 16 | bpf_ntohs(tcp->dest);
		tcp_flags = ((__u8 *)tcp)[13];
	} else {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > data_end)
			return verdict(V_DROP, XDP_DROP);
		ports = (__u32)bpf_ntohs(udp->source) << 16 | bpf_ntohs(udp->dest);
	}

	saddr = bpf_ntohl(ip->saddr);
	daddr = bpf_ntohl(ip->daddr);
	dir = fw_direction(saddr, daddr);
	if (dir == DIR_INTERNAL || dir == DIR_TRANSIT)
		return verdict(V_OTHER, XDP_PASS);

	fw_make_key(&key, saddr, daddr, ports, ip->protocol);
	val = bpf_map_lookup_elem(&fw_conns, &key);

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10
	if (dir == DIR_OUT) {
		int opens = key.proto == IPPROTO_UDP ||
			    (tcp_flags & (TCP_SYN | TCP_ACK)) == TCP_SYN;

		if (!val) {
			if (!opens)
				return verdict(V_DROP, XDP_DROP);
			struct fw_val nv = { .packets = 1, .bytes = len };

			bpf_map_update_elem(&fw_conns, &key, &nv, BPF_NOEXIST);
			return verdict(V_NEW, XDP_PASS);
		}
		val->packets += 1;
		val->bytes += len;
		if (!opens && (tcp_flags & (TCP_FIN | TCP_RST)))
			bpf_map_delete_elem(&fw_conns, &key);
		return verdict(V_EST, XDP_PASS);
	}

	/* inbound */
	if (!val)
		return verdict(V_DROP, XDP_DROP);
	val->packets += 1;
	val->bytes += len;
	if (key.proto == IPPROTO_TCP && (tcp_flags & TCP_RST))
		bpf_map_delete_elem(&fw_conns, &key);
	return verdict(V_EST, XDP_PASS);
}
