/* udp_csum.c — verify the checksum of short IPv4 UDP datagrams.
 *
 * Untagged IPv4 UDP datagrams (20-byte header, not fragmented) whose UDP
 * length is at most MAX_UDP bytes and matches the IP total length have their
 * checksum verified over the pseudo-header, the UDP header and the payload,
 * read byte by byte in a bounded loop (an odd last byte is padded with zero).
 * A wrong checksum drops; a zero checksum (none sent) passes unchecked, as do
 * longer datagrams. A UDP length below 8 or inconsistent with the IP length
 * drops. Other traffic passes.
 *
 * Maps: none. Helpers: none.
 */
#include "corpus.h"

#define MAX_UDP 96

SEC("xdp")
int udp_csum(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	__u8 *ip = data + 14;
	__u8 *udp = ip + 20;

	if (udp + 8 > end)
		return XDP_PASS;
	if (data[12] != 0x08 || data[13] != 0x00 || ip[0] != 0x45 || ip[9] != P_UDP)
		return XDP_PASS;
	if ((ip[6] & 0x3f) || ip[7])
		return XDP_PASS;
	__u32 ulen = (udp[4] << 8) | udp[5];
	__u32 tot = (ip[2] << 8) | ip[3];
	if (ulen < 8 || ulen + 20 != tot)
		return XDP_DROP;
	if (udp[6] == 0 && udp[7] == 0)
		return XDP_PASS;
	if (ulen > MAX_UDP)
		return XDP_PASS;

	/* Pseudo-header: addresses, protocol, UDP length. */
	__u32 sum = P_UDP + ulen;
	for (int i = 12; i < 20; i += 2)
		sum += (ip[i] << 8) | ip[i + 1];

	for (__u32 i = 0; i < MAX_UDP; i++) {
		if (i >= ulen)
			break;
		__u8 *b = udp + i;
		if (b + 1 > end)
			return XDP_DROP;
		sum += (i & 1) ? b[0] : (__u32)b[0] << 8;
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	if (sum != 0xffff)
		return XDP_DROP;
	return XDP_PASS;
}
