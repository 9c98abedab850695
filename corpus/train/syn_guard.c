/* syn_guard.c — TCP flag sanity and SYN-cookie style handshake guard.
 *
 * IPv4 TCP only (everything else passes). Segments with impossible flag
 * combinations drop: no flags, SYN+FIN, SYN+RST, FIN without ACK, and the
 * "Christmas tree" FIN+PSH+URG; so do data offsets below 5. For destination
 * ports listed in `guarded`, a bare SYN is answered in place with a SYN-ACK
 * whose sequence number is a cookie of the connection's addresses and ports
 * (addresses, ports and MACs swapped, TCP checksum updated incrementally:
 * XDP_TX); a bare ACK passes only when its acknowledgement number is that
 * cookie + 1 and drops otherwise. Other segments pass.
 *
 * Maps: guarded (HASH be16 port -> u8), .rodata (cookie secret). Helpers:
 * map_lookup_elem.
 */
#include "corpus.h"

const volatile __u32 cookie_secret = 0x5eed1234;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32);
	__type(key, __u16);
	__type(value, __u8);
} guarded SEC(".maps");

#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_PSH 0x08
#define F_ACK 0x10
#define F_URG 0x20

static __always_inline __u32 rotl(__u32 x, int k)
{
	return (x << k) | (x >> (32 - k));
}

/* A small ARX mix of the 4-tuple and the secret. */
static __always_inline __u32 cookie(__u32 saddr, __u32 daddr, __u32 ports)
{
	__u32 a = saddr ^ cookie_secret, b = daddr, c = ports;

	a += b;
	c ^= a;
	c = rotl(c, 13);
	b += c;
	a ^= b;
	a = rotl(a, 7);
	c += a;
	b ^= c;
	b = rotl(b, 17);
	return a ^ b ^ c;
}

SEC("xdp")
int syn_guard(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETHTYPE_IP) || ip->protocol != P_TCP)
		return XDP_PASS;
	if (ip->ihl < 5)
		return XDP_DROP;
	__u8 *tcp = (void *)ip + ip->ihl * 4;
	if (tcp + 20 > (__u8 *)end)
		return XDP_DROP;

	__u8 doff = tcp[12] >> 4;
	__u8 flags = tcp[13] & 0x3f;
	if (doff < 5 || flags == 0)
		return XDP_DROP;
	if ((flags & (F_SYN | F_FIN)) == (F_SYN | F_FIN) ||
	    (flags & (F_SYN | F_RST)) == (F_SYN | F_RST))
		return XDP_DROP;
	if ((flags & (F_FIN | F_ACK)) == F_FIN)
		return XDP_DROP;
	if ((flags & (F_FIN | F_PSH | F_URG)) == (F_FIN | F_PSH | F_URG))
		return XDP_DROP;

	__u16 dport = *(__u16 *)(tcp + 2);
	if (!bpf_map_lookup_elem(&guarded, &dport))
		return XDP_PASS;

	__u32 ports = *(__u32 *)tcp;
	if (flags == F_SYN) {
		__u32 c = cookie(ip->saddr, ip->daddr, ports);
		__u32 *seqp = (__u32 *)(tcp + 4), *ackp = (__u32 *)(tcp + 8);
		__u32 old_seq = *seqp, old_ack = *ackp;
		__u32 new_ack = bpf_htonl(bpf_ntohl(old_seq) + 1), new_seq = bpf_htonl(c);
		__u16 *check = (__u16 *)(tcp + 16);
		__u16 *fw = (__u16 *)(tcp + 12);
		__u16 old_fw = *fw;
		__u16 sum = *check;

		*seqp = new_seq;
		*ackp = new_ack;
		tcp[13] = F_SYN | F_ACK;
		sum = csum_replace32(sum, old_seq, new_seq);
		sum = csum_replace32(sum, old_ack, new_ack);
		*check = csum_replace16(sum, old_fw, *fw);
		*(__u32 *)tcp = (ports >> 16) | (ports << 16);

		__be32 t = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = t;
		__u8 mac[ETH_ALEN];
		__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
		__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
		__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
		return XDP_TX;
	}
	if (flags == F_ACK) {
		__u32 ack = bpf_ntohl(*(__u32 *)(tcp + 8));
		/* The cookie was computed on the SYN's tuple: the ACK comes from the same side. */
		if (ack - 1 == cookie(ip->saddr, ip->daddr, ports))
			return XDP_PASS;
		return XDP_DROP;
	}
	return XDP_PASS;
}
