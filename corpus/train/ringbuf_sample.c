/* ringbuf_sample.c — 1-in-N flow sampling to a ring buffer.
 *
 * Every untagged IPv4 packet advances the counter `sample_seen[0]`; every N-th
 * (N = `sample_cfg[0]`, sampling off when 0) emits a record of its addresses,
 * ports (TCP/UDP, else zero), protocol and frame length into the ring buffer
 * `samples` (bpf_ringbuf_reserve / submit); a failed reservation counts in
 * `sample_seen[1]`. Packets whose record would name an IP header shorter than
 * 20 bytes are discarded from the ring (bpf_ringbuf_discard) instead. Every
 * frame passes.
 *
 * Maps: samples (RINGBUF 4096), sample_cfg (ARRAY 1 of u32), sample_seen
 * (ARRAY 2 of u64). Helpers: map_lookup_elem, ringbuf_reserve, ringbuf_submit,
 * ringbuf_discard.
 */
#include "corpus.h"

struct sample {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 ihl;
	__u16 len;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sample_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} sample_seen SEC(".maps");

SEC("xdp")
int ringbuf_sample(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	__u32 zero = 0, one = 1;

	if (data + 34 > end || data[12] != 0x08 || data[13] != 0)
		return XDP_PASS;
	__u32 *n = bpf_map_lookup_elem(&sample_cfg, &zero);
	__u64 *seen = bpf_map_lookup_elem(&sample_seen, &zero);
	if (!n || !seen || *n == 0)
		return XDP_PASS;
	__u64 count = __sync_fetch_and_add(seen, 1) + 1;
	if (count % *n)
		return XDP_PASS;

	struct sample *r = bpf_ringbuf_reserve(&samples, sizeof(*r), 0);
	if (!r) {
		__u64 *lost = bpf_map_lookup_elem(&sample_seen, &one);
		if (lost)
			__sync_fetch_and_add(lost, 1);
		return XDP_PASS;
	}
	__u8 *ip = data + 14;
	__u8 ihl = (ip[0] & 0x0f) * 4;
	if (ihl < 20) {
		bpf_ringbuf_discard(r, 0);
		return XDP_PASS;
	}
	r->saddr = *(__be32 *)(ip + 12);
	r->daddr = *(__be32 *)(ip + 16);
	r->proto = ip[9];
	r->ihl = ihl;
	r->len = end - data;
	r->sport = 0;
	r->dport = 0;
	__u8 *l4 = ip + ihl;
	if ((r->proto == P_TCP || r->proto == P_UDP) && l4 + 4 <= end) {
		r->sport = *(__be16 *)l4;
		r->dport = *(__be16 *)(l4 + 2);
	}
	bpf_ringbuf_submit(r, 0);
	return XDP_PASS;
}
