/* quic_lb.h — QUIC connection-ID parsing shared by xdp_quic_lb_v4.c and
 * xdp_quic_lb_v6.c (always-inline, no sub-programs).
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

#endif
