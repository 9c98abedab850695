/* xdp_jumbo.c — a jumbo-frame trailer checker, multi-buffer aware (section xdp.frags).
 *
 * Frames of EtherType 0x88B5 (local experimental) end in a 4-byte trailer, the magic
 * "JMBO". A frame longer than 3,520 bytes reaches the program as a multi-buffer packet:
 * data..data_end covers only the first 3,520 bytes, the rest sits in page fragments
 * that only the packet helpers reach. The program
 *   - counts the frame as single- or multi-buffer (bpf_xdp_get_buff_len against
 *     data_end - data),
 *   - reads the trailer at len - 4 with bpf_xdp_load_bytes (in a fragment, or across
 *     the end of the linear part, for long frames),
 *   - reads the priority byte at offset 4000, past the linear part, when the frame has it,
 *   - increments the big-endian hop counter at offsets 3516..3523, a field straddling the
 *     end of the linear part, with load_bytes and store_bytes,
 *   - replaces the trailer with an 8-byte one ("JMB2", original length): adjust_tail(-4)
 *     (taking the bytes off the last fragment, dropping fragments it empties, and off the
 *     linear part once none is left), adjust_tail(+8) (growth is limited to the last
 *     fragment's page, or to the frame's tailroom without fragments), store_bytes,
 *   - and returns an action that depends on the frame's length.
 *
 * Branches:
 *   Ethernet header truncated                       -> XDP_DROP
 *   not EtherType 0x88B5                            -> XDP_PASS
 *   shorter than header + 2 trailers (22 bytes)     -> XDP_DROP
 *   trailer is not "JMBO"                           -> XDP_DROP
 *   frame reaches offset 4000, priority byte 0xff   -> XDP_DROP
 *   frame reaches offset 3524: hop counter at 3516 incremented
 *   no room to grow the tail by 8 after trimming 4  -> XDP_PASS (trailer removed, counted)
 *   longer than 9,000 bytes                         -> XDP_DROP (new trailer written)
 *   otherwise                                       -> XDP_TX (new trailer written)
 *
 * Maps:
 *   jumbo_stats — ARRAY of 4 x __u64: [0] single-buffer frames, [1] multi-buffer frames,
 *                 [2] frames without room for the new trailer, [3] bytes of checked frames
 * Helpers: bpf_xdp_get_buff_len, bpf_xdp_load_bytes, bpf_xdp_store_bytes,
 *          bpf_xdp_adjust_tail, bpf_map_lookup_elem.
 */
#include "xdp_common.h"

#define ETH_P_JUMBO 0x88B5
#define JUMBO_MAGIC 0x4a4d424f /* "JMBO" */
#define JUMBO_STAMP 0x4a4d4232 /* "JMB2" */
#define PRIO_OFFSET 4000
#define HOPS_OFFSET 3516
#define JUMBO_MTU 9000

enum { STAT_SINGLE, STAT_MULTI, STAT_NO_ROOM, STAT_BYTES, STAT_COUNT };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} jumbo_stats SEC(".maps");

static __always_inline void stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&jumbo_stats, &which);

	if (v)
		*v += n;
}

SEC("xdp.frags")
int xdp_jumbo(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 len, linear, trailer[2];
	__u64 hops;
	__u8 prio;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_JUMBO))
		return XDP_PASS;

	len = bpf_xdp_get_buff_len(ctx);
	linear = data_end - data;
	stat_add(len > linear ? STAT_MULTI : STAT_SINGLE, 1);
	if (len < sizeof(*eth) + 8)
		return XDP_DROP;

	if (bpf_xdp_load_bytes(ctx, len - 4, trailer, 4))
		return XDP_ABORTED;
	if (trailer[0] != bpf_htonl(JUMBO_MAGIC))
		return XDP_DROP;
	stat_add(STAT_BYTES, len);

	if (len > PRIO_OFFSET + 4) {
		if (bpf_xdp_load_bytes(ctx, PRIO_OFFSET, &prio, 1))
			return XDP_ABORTED;
		if (prio == 0xff)
			return XDP_DROP;
	}

	if (len >= HOPS_OFFSET + 8 + 4) {
		if (bpf_xdp_load_bytes(ctx, HOPS_OFFSET, &hops, 8))
			return XDP_ABORTED;
		hops = bpf_cpu_to_be64(bpf_be64_to_cpu(hops) + 1);
		if (bpf_xdp_store_bytes(ctx, HOPS_OFFSET, &hops, 8))
			return XDP_ABORTED;
	}

	if (bpf_xdp_adjust_tail(ctx, -4))
		return XDP_ABORTED;
	if (bpf_xdp_adjust_tail(ctx, 8)) {
		stat_add(STAT_NO_ROOM, 1);
		return XDP_PASS;
	}
	trailer[0] = bpf_htonl(JUMBO_STAMP);
	trailer[1] = bpf_htonl(len);
	if (bpf_xdp_store_bytes(ctx, len - 4, trailer, 8))
		return XDP_ABORTED;
	return len > JUMBO_MTU ? XDP_DROP : XDP_TX;
}

char _license[] SEC("license") = "GPL";
