/* xdp_dns.c — authoritative DNS responder for A records, answering in XDP.
 *
 * Parses Ethernet / IPv4 (no options) / UDP to port 53 / a DNS query with
 * exactly one question and no other records, copies the question name (wire
 * format, up to MAX_NAME bytes including the terminating root label) into a
 * zero-padded fixed-size key with a bounded loop, checks its label structure
 * with a second bounded loop, and looks it up in a hash map of A records. On a
 * hit for QTYPE A / QCLASS IN the query is turned into a response in place:
 * the packet is resized with bpf_xdp_adjust_tail to end right after one answer
 * RR (name pointer 0xC00C, TYPE A, CLASS IN, TTL 300, RDLENGTH 4, address),
 * MACs, IPs and ports are swapped, QR/AA/RA are set (RD copied), ANCOUNT = 1,
 * IP total length and UDP length are fixed, the IP checksum is recomputed, TTL
 * set to 64, the UDP checksum set to 0 (allowed over IPv4), and XDP_TX.
 *
 * Branches:
 *   not Ethernet+IPv4, IHL != 5, fragment, not UDP, dport != 53 -> XDP_PASS
 *   UDP or DNS header truncated                                 -> XDP_PASS
 *   response, opcode != QUERY, QDCOUNT != 1, AN/NS/ARCOUNT != 0  -> XDP_PASS
 *   name runs past the packet end, or longer than MAX_NAME      -> XDP_PASS
 *   name contains a compression pointer / bad label             -> XDP_PASS (bpf_printk)
 *   QTYPE/QCLASS missing or not A/IN                            -> XDP_PASS
 *   name not in dns_a_records                                   -> XDP_PASS
 *   bpf_xdp_adjust_tail fails                                   -> XDP_PASS
 *   hit                                                         -> answer built, XDP_TX
 *
 * Maps: dns_a_records — HASH, key struct dns_name {char name[64]} (wire-format
 *       name, zero padded), value __be32 IPv4 address.
 * Helpers: bpf_map_lookup_elem, bpf_xdp_adjust_tail, bpf_trace_printk.
 */
#include "xdp_common.h"

/* xdp_dns_nfp.c builds this program with DNS_NFP: no bpf_printk, the name copied into a key of
 * words, the label walk over the packet, and an answer that must fit in the received frame (see
 * there). */
#ifdef DNS_NFP
#define xdp_dns xdp_dns_nfp
#endif

#define DNS_PORT 53
#define MAX_NAME 64
#define MAX_LABELS 32
#define ANSWER_TTL 300
#define ANSWER_LEN 16 /* ptr(2) type(2) class(2) ttl(4) rdlen(2) rdata(4) */

struct dns_name {
#ifdef DNS_NFP
	__u32 w[MAX_NAME / 4];
#else
	char name[MAX_NAME];
#endif
};

struct dnshdr {
	__be16 id;
	__be16 flags;
	__be16 qdcount;
	__be16 ancount;
	__be16 nscount;
	__be16 arcount;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct dns_name);
	__type(value, __be32);
} dns_a_records SEC(".maps");

#define HDRS_LEN (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))

SEC("xdp")
int xdp_dns(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	struct dnshdr *dns;
	struct dns_name key = {};
#ifdef DNS_NFP
	__u32 w, qlen = 0, pos;
#else
	__u32 i, qlen, pos;
#endif
	__be32 addr, *rec;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	if (ip->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end || udp->dest != bpf_htons(DNS_PORT))
		return XDP_PASS;
	dns = (void *)(udp + 1);
	if ((void *)(dns + 1) > data_end)
		return XDP_PASS;
	/* QR must be 0 and OPCODE 0 (standard query). */
	if (dns->flags & bpf_htons(0xF800))
		return XDP_PASS;
	if (dns->qdcount != bpf_htons(1) || dns->ancount || dns->nscount || dns->arcount)
		return XDP_PASS;

	__u8 *q = (void *)(dns + 1);
#ifdef DNS_NFP
	/* Copy the wire-format name a word at a time, up to and including the
	 * first zero byte (bytes in memory order: the low byte comes first). */
	__u32 *qw = (void *)q;
	for (w = 0; w < MAX_NAME / 4; w++) {
		if ((void *)(qw + w + 1) > data_end)
			return XDP_PASS;
		__u32 v = qw[w];

		if (!(v & 0xff)) {
			key.w[w] = 0;
			qlen = 4 * w + 1;
			break;
		}
		if (!(v & 0xff00)) {
			key.w[w] = v & 0xff;
			qlen = 4 * w + 2;
			break;
		}
		if (!(v & 0xff0000)) {
			key.w[w] = v & 0xffff;
			qlen = 4 * w + 3;
			break;
		}
		key.w[w] = v;
		if (!(v & 0xff000000)) {
			qlen = 4 * w + 4;
			break;
		}
	}
	if (!qlen)
		return XDP_PASS; /* longer than MAX_NAME */

	/* Walk the labels: each length byte must be a plain label length
	 * (< 64) and the walk must land exactly on the root label. */
	pos = 0;
	for (int l = 0; l < MAX_LABELS; l++) {
		if (pos >= qlen)
			return XDP_PASS; /* jumped over the root label */
		if ((void *)(q + pos + 1) > data_end)
			return XDP_PASS;
		__u8 len = q[pos];
		if (len == 0)
			break;
		if (len & 0xC0)
			return XDP_PASS; /* compression pointer or reserved label type */
		pos += len + 1;
	}
	if (pos != qlen - 1)
		return XDP_PASS;
#else
	/* Copy the wire-format name up to and including the first zero byte. */
	for (i = 0; i < MAX_NAME; i++) {
		if ((void *)(q + i + 1) > data_end)
			return XDP_PASS;
		__u8 b = q[i];
		key.name[i] = b;
		if (b == 0)
			break;
	}
	if (i >= MAX_NAME)
		return XDP_PASS;
	qlen = i + 1;

	/* Walk the labels in the copy: each length byte must be a plain label
	 * length (< 64) and the walk must land exactly on the root label. */
	pos = 0;
	for (int l = 0; l < MAX_LABELS; l++) {
		if (pos >= MAX_NAME)
			return XDP_PASS;
		__u8 len = key.name[pos];
		if (len == 0)
			break;
		if (len & 0xC0) {
			bpf_printk("xdp_dns: label byte 0x%x at %u", len, pos);
			return XDP_PASS;
		}
		pos += len + 1;
	}
	if (pos != qlen - 1)
		return XDP_PASS;
#endif

	__be16 *qtail = (void *)(q + qlen);
	if ((void *)(qtail + 2) > data_end)
		return XDP_PASS;
	if (qtail[0] != bpf_htons(1) || qtail[1] != bpf_htons(1))
		return XDP_PASS;

	rec = bpf_map_lookup_elem(&dns_a_records, &key);
	if (!rec)
		return XDP_PASS;
	addr = *rec;

	/* Resize: the response ends right after the answer RR. */
	__u32 ans_off = HDRS_LEN + sizeof(struct dnshdr) + qlen + 4;
	__u32 new_len = ans_off + ANSWER_LEN;
#ifdef DNS_NFP
	/* It must fit in the frame: the NFP's adjust_tail only shrinks. */
	__u32 old_len = data_end - data;
	if (new_len > old_len)
		return XDP_PASS; /* would have to grow: the NFP cannot */
	if (new_len < old_len) {
		if (bpf_xdp_adjust_tail(ctx, -(int)(old_len - new_len)))
			return XDP_PASS;
	}
#else
	int delta = (int)new_len - (int)(data_end - data);
	if (bpf_xdp_adjust_tail(ctx, delta))
		return XDP_PASS;
#endif

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + HDRS_LEN + sizeof(struct dnshdr) > data_end)
		return XDP_PASS;
	eth = data;
	ip = (void *)(eth + 1);
	udp = (void *)(ip + 1);
	dns = (void *)(udp + 1);

	if (ans_off > 256)
		return XDP_PASS;
	__u8 *ans = data + ans_off;
	if ((void *)(ans + ANSWER_LEN) > data_end)
		return XDP_PASS;
	ans[0] = 0xC0; /* pointer to the question name at offset 12 */
	ans[1] = 0x0C;
	ans[2] = 0;
	ans[3] = 1; /* TYPE A */
	ans[4] = 0;
	ans[5] = 1; /* CLASS IN */
	ans[6] = 0;
	ans[7] = 0;
	ans[8] = ANSWER_TTL >> 8;
	ans[9] = ANSWER_TTL & 0xff;
	ans[10] = 0;
	ans[11] = 4; /* RDLENGTH */
	__builtin_memcpy(ans + 12, &addr, 4);

	/* DNS header: QR=1, AA=1, RD copied, RA=1, RCODE=0, one answer. */
	dns->flags = bpf_htons(0x8400 | (bpf_ntohs(dns->flags) & 0x0100) | 0x0080);
	dns->ancount = bpf_htons(1);

	/* UDP: swap ports, new length, no checksum. */
	__be16 port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	udp->len = bpf_htons(new_len - sizeof(struct ethhdr) - sizeof(struct iphdr));
	udp->check = 0;

	/* IPv4: swap addresses, new length, TTL, checksum. */
	__be32 a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	ip->tot_len = bpf_htons(new_len - sizeof(struct ethhdr));
	ip->ttl = 64;
	ip->check = 0;
	ip->check = ipv4_csum20(ip);

	/* Ethernet: swap MACs. */
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	return XDP_TX;
}
