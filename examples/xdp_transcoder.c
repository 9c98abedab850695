/* xdp_transcoder.c — G.711 A-law to mu-law payload transcoder for RTP.
 *
 * IPv4 (no options) UDP datagrams to port RTP_PORT carrying an RTP packet
 * (version 2, no CSRCs, no header extension) with payload type 8 (PCMA) are
 * converted in place to payload type 0 (PCMU): each of the at most 160
 * payload bytes (20 ms at 8 kHz) is replaced through a 256-entry A-law ->
 * mu-law table in .rodata, in a bounded byte-by-byte loop. The marker bit is
 * kept, the UDP checksum is set to 0 (allowed over IPv4), and per-SSRC
 * packet/byte counters are kept. The converted packet continues to the stack.
 *
 * Branches:
 *   not Ethernet+IPv4+UDP, IHL != 5, fragment, dport != RTP_PORT -> XDP_PASS
 *   UDP header or 12-byte RTP header truncated                   -> XDP_DROP
 *   RTP version != 2, CSRC count != 0 or extension bit set       -> XDP_PASS
 *   payload type 0 (already PCMU)                                -> XDP_PASS unchanged
 *   any other payload type                                       -> XDP_PASS unchanged
 *   PCMA with empty payload or payload > 160 bytes               -> XDP_PASS unchanged
 *   PCMA with 1..160 payload bytes                               -> transcoded, XDP_PASS
 *     (first packet of an SSRC inserts its counter, later ones increment it)
 *
 * Maps: rtp_streams — PERCPU_HASH, key __be32 SSRC, value struct rtp_stats
 *       {__u64 packets; __u64 bytes}; .rodata: alaw_to_ulaw[256].
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem.
 */
#include "xdp_common.h"

#define RTP_PORT 5004
#define MAX_PAYLOAD 160
#define PT_PCMU 0
#define PT_PCMA 8

/* xdp_transcoder_nfp.c builds this program with TRANSCODER_NFP: other names, a HASH of
 * counters bumped atomically, and the table in an ARRAY map (see there). */
#ifdef TRANSCODER_NFP
#define rtp_streams rtp_streams_nfp
#define xdp_transcoder xdp_transcoder_nfp
#define RTP_STREAMS_TYPE BPF_MAP_TYPE_HASH
#else
#define RTP_STREAMS_TYPE BPF_MAP_TYPE_PERCPU_HASH
#endif

struct rtphdr {
	__u8 vpxcc;
	__u8 mpt;
	__be16 seq;
	__be32 ts;
	__be32 ssrc;
};

struct rtp_stats {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, RTP_STREAMS_TYPE);
	__uint(max_entries, 1024);
	__type(key, __be32);
	__type(value, struct rtp_stats);
} rtp_streams SEC(".maps");

#ifdef TRANSCODER_NFP
/* ITU-T G.711 A-law code -> mu-law code, 8 codes per entry, filled by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u64);
} alaw_to_ulaw8 SEC(".maps");
#else
/* ITU-T G.711 A-law code -> mu-law code (via 16-bit linear). */
static const volatile __u8 alaw_to_ulaw[256] = {
	0x29, 0x2a, 0x27, 0x28, 0x2d, 0x2e, 0x2b, 0x2c, 0x21, 0x22, 0x1f, 0x20, 0x25, 0x26, 0x23, 0x24,
	0x39, 0x3a, 0x37, 0x38, 0x3d, 0x3e, 0x3b, 0x3c, 0x31, 0x32, 0x2f, 0x30, 0x35, 0x36, 0x33, 0x34,
	0x0a, 0x0b, 0x08, 0x09, 0x0e, 0x0f, 0x0c, 0x0d, 0x02, 0x03, 0x00, 0x01, 0x06, 0x07, 0x04, 0x05,
	0x1a, 0x1b, 0x18, 0x19, 0x1e, 0x1f, 0x1c, 0x1d, 0x12, 0x13, 0x10, 0x11, 0x16, 0x17, 0x14, 0x15,
	0x62, 0x63, 0x60, 0x61, 0x66, 0x67, 0x64, 0x65, 0x5d, 0x5d, 0x5c, 0x5c, 0x5f, 0x5f, 0x5e, 0x5e,
	0x74, 0x76, 0x70, 0x72, 0x7c, 0x7e, 0x78, 0x7a, 0x6a, 0x6b, 0x68, 0x69, 0x6e, 0x6f, 0x6c, 0x6d,
	0x48, 0x49, 0x46, 0x47, 0x4c, 0x4d, 0x4a, 0x4b, 0x40, 0x41, 0x3f, 0x3f, 0x44, 0x45, 0x42, 0x43,
	0x56, 0x57, 0x54, 0x55, 0x5a, 0x5b, 0x58, 0x59, 0x4f, 0x4f, 0x4e, 0x4e, 0x52, 0x53, 0x50, 0x51,
	0xa9, 0xaa, 0xa7, 0xa8, 0xad, 0xae, 0xab, 0xac, 0xa1, 0xa2, 0x9f, 0xa0, 0xa5, 0xa6, 0xa3, 0xa4,
	0xb9, 0xba, 0xb7, 0xb8, 0xbd, 0xbe, 0xbb, 0xbc, 0xb1, 0xb2, 0xaf, 0xb0, 0xb5, 0xb6, 0xb3, 0xb4,
	0x8a, 0x8b, 0x88, 0x89, 0x8e, 0x8f, 0x8c, 0x8d, 0x82, 0x83, 0x80, 0x81, 0x86, 0x87, 0x84, 0x85,
	0x9a, 0x9b, 0x98, 0x99, 0x9e, 0x9f, 0x9c, 0x9d, 0x92, 0x93, 0x90, 0x91, 0x96, 0x97, 0x94, 0x95,
	0xe2, 0xe3, 0xe0, 0xe1, 0xe6, 0xe7, 0xe4, 0xe5, 0xdd, 0xdd, 0xdc, 0xdc, 0xdf, 0xdf, 0xde, 0xde,
	0xf4, 0xf6, 0xf0, 0xf2, 0xfc, 0xfe, 0xf8, 0xfa, 0xea, 0xeb, 0xe8, 0xe9, 0xee, 0xef, 0xec, 0xed,
	0xc8, 0xc9, 0xc6, 0xc7, 0xcc, 0xcd, 0xca, 0xcb, 0xc0, 0xc1, 0xbf, 0xbf, 0xc4, 0xc5, 0xc2, 0xc3,
	0xd6, 0xd7, 0xd4, 0xd5, 0xda, 0xdb, 0xd8, 0xd9, 0xcf, 0xcf, 0xce, 0xce, 0xd2, 0xd3, 0xd0, 0xd1,
};
#endif

SEC("xdp")
int xdp_transcoder(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	struct rtphdr *rtp;
	__u8 *pl;
	__u32 plen, i;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_DROP;
	if (udp->dest != bpf_htons(RTP_PORT))
		return XDP_PASS;
	rtp = (void *)(udp + 1);
	if ((void *)(rtp + 1) > data_end)
		return XDP_DROP;
	/* V=2, P=any, X=0, CC=0 */
	if ((rtp->vpxcc & 0xC0) != 0x80 || (rtp->vpxcc & 0x1F) != 0)
		return XDP_PASS;
	if ((rtp->mpt & 0x7F) != PT_PCMA)
		return XDP_PASS;

	pl = (void *)(rtp + 1);
	plen = data_end - (void *)pl;
	if (plen == 0 || plen > MAX_PAYLOAD)
		return XDP_PASS;

#pragma clang loop unroll(disable)
	for (i = 0; i < MAX_PAYLOAD; i++) {
		if ((void *)(pl + i + 1) > data_end)
			break;
#ifdef TRANSCODER_NFP
		__u32 code = pl[i];
		__u32 slot = code >> 3;
		__u64 *mu8 = bpf_map_lookup_elem(&alaw_to_ulaw8, &slot);
		if (mu8)
			pl[i] = *mu8 >> ((code & 7) * 8);
#else
		pl[i] = alaw_to_ulaw[pl[i]];
#endif
	}

	rtp->mpt = (rtp->mpt & 0x80) | PT_PCMU;
	udp->check = 0;

	__be32 ssrc = rtp->ssrc;
	struct rtp_stats *st = bpf_map_lookup_elem(&rtp_streams, &ssrc);
#ifdef TRANSCODER_NFP
	if (!st) {
		struct rtp_stats zero = {};

		bpf_map_update_elem(&rtp_streams, &ssrc, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&rtp_streams, &ssrc);
		if (!st)
			return XDP_PASS;
	}
	__sync_fetch_and_add(&st->packets, 1);
	__sync_fetch_and_add(&st->bytes, (__u64)plen);
#else
	if (st) {
		st->packets += 1;
		st->bytes += plen;
	} else {
		struct rtp_stats init = { .packets = 1, .bytes = plen };

		bpf_map_update_elem(&rtp_streams, &ssrc, &init, BPF_NOEXIST);
	}
#endif
	return XDP_PASS;
}
