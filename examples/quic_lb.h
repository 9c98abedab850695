/* quic_lb.h — what xdp_quic_lb_v4.c and xdp_quic_lb_v6.c share: QUIC
 * connection-ID parsing, the sticky backend of a long-header client, and the
 * checksum update of the rewritten destination address (always-inline, no
 * sub-programs).
 *
 * Long header (first byte bit 7 set): version (4 bytes, 0 = version
 * negotiation, not balanced), DCID length byte (<= 20), DCID. Short header
 * (bit 7 clear, fixed bit 6 set): DCID of SHORT_CID_LEN bytes right after the
 * first byte. A CID may carry a server id QUIC-LB style: the top three bits of
 * its first octet are a config id (7 = unroutable) and its second octet is the
 * server id, valid when < NUM_BACKENDS.
 */
#ifndef LINERATE_QUIC_LB_H
#define LINERATE_QUIC_LB_H

#define QUIC_PORT 443
#define SHORT_CID_LEN 8
#define MAX_CID_LEN 20
#define NUM_BACKENDS 4
#define QUIC_UNROUTABLE_CONFIG 7

enum { Q_OK = 0, Q_NOT_QUIC = 1, Q_MALFORMED = 2 };

struct quic_cid_info {
	__u32 hash;      /* FNV-1a over the DCID bytes */
	__u32 server_id; /* valid if has_sid */
	__u32 has_sid;
	__u32 long_hdr;
};

static __always_inline int quic_parse(__u8 *q, void *data_end, struct quic_cid_info *ci)
{
	__u8 *cid;
	__u32 cidlen, h = 2166136261u;

	if ((void *)(q + 1) > data_end)
		return Q_MALFORMED;
	if (q[0] & 0x80) {
		if ((void *)(q + 6) > data_end)
			return Q_MALFORMED;
		if (q[1] == 0 && q[2] == 0 && q[3] == 0 && q[4] == 0)
			return Q_NOT_QUIC; /* version negotiation */
		cidlen = q[5];
		if (cidlen > MAX_CID_LEN)
			return Q_MALFORMED;
		cid = q + 6;
		ci->long_hdr = 1;
	} else {
		if (!(q[0] & 0x40))
			return Q_NOT_QUIC; /* fixed bit clear */
		cidlen = SHORT_CID_LEN;
		cid = q + 1;
		ci->long_hdr = 0;
	}

	for (__u32 k = 0; k < MAX_CID_LEN; k++) {
		if (k >= cidlen)
			break;
		if ((void *)(cid + k + 1) > data_end)
			return Q_MALFORMED;
		h = (h ^ cid[k]) * 16777619u;
	}
	ci->hash = h;

	ci->has_sid = 0;
	ci->server_id = 0;
	if (cidlen >= 2 && (void *)(cid + 2) <= data_end &&
	    (cid[0] >> 5) != QUIC_UNROUTABLE_CONFIG && cid[1] < NUM_BACKENDS) {
		ci->has_sid = 1;
		ci->server_id = cid[1];
	}
	return Q_OK;
}

/* Sets *idx to the backend of a long-header packet from `client` (a key of
 * `sticky_table`): the one recorded for the client, else the DCID hash's,
 * recorded for it. (Short headers are not sticky: they go by their DCID.) */
static __always_inline void qlb_sticky_backend(void *sticky_table, void *client,
					       const struct quic_cid_info *ci, __u32 *idx)
{
	__u32 *sticky = bpf_map_lookup_elem(sticky_table, client);

	if (sticky) {
		*idx = *sticky;
	} else {
		*idx = ci->hash % NUM_BACKENDS;
		bpf_map_update_elem(sticky_table, client, idx, BPF_ANY);
	}
}

/* The checksum field `check` (as stored) after the `words` 32-bit words at
 * `from` were replaced by those at `to`: an incremental update (RFC 1624).
 * With QLB_NFP it is computed in C, HC' = ~(~HC + ~m + m') over the 16-bit
 * halves of each word (byte order does not matter as long as checksum and
 * words are read alike), because the NFP has no bpf_csum_diff. */
static __always_inline __u16 qlb_csum_replace(__u16 check, void *from, void *to, int words)
{
#ifdef QLB_NFP
	__u32 *f = from, *t = to;
	__u32 sum = (__u16)~check;

#pragma clang loop unroll(full)
	for (int i = 0; i < words; i++) {
		__u32 m = f[i], m_new = t[i];

		sum += (~m & 0xffff) + (~m >> 16) + (m_new & 0xffff) + (m_new >> 16);
	}
	return csum_fold32(sum);
#else
	__s64 s = bpf_csum_diff(from, 4 * words, to, 4 * words, (__u16)~check);

	return csum_fold32((__u32)s);
#endif
}

/* The same for the UDP checksum: a datagram without one (0) keeps none, and
 * a computed 0 is sent as 0xffff. */
static __always_inline void qlb_udp_csum_replace(struct udphdr *udp, void *from, void *to,
						 int words)
{
	if (udp->check) {
		__u16 c = qlb_csum_replace(udp->check, from, to, words);

		udp->check = c ? c : 0xffff;
	}
}

#endif
