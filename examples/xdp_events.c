/* xdp_events.c — records to user space: a ring buffer and a perf event array.
 *
 * Every frame is sampled to the perf event array `samples` with bpf_perf_event_output:
 * a 4-byte header (cookie 0xcafe, frame length) followed by up to 32 frame bytes
 * (BPF_F_CURRENT_CPU, the byte count in the upper 32 bits of flags). IPv4 UDP frames
 * also send a 16-byte `struct event` to the ring buffer `events`. The first byte of
 * the UDP payload picks a special case:
 *
 *   'B' (burst)      -> 9 records of 448 bytes to `events`: the 4 KiB ring takes 8
 *                       (456 bytes each with the header), the 9th fails with -EAGAIN
 *                       -> XDP_DROP
 *   'F' (bad flags)  -> bpf_ringbuf_output with flags 4: -EINVAL -> XDP_ABORTED
 *   'L' (long ctx)   -> perf sample asking for 4000 frame bytes: -EFAULT -> XDP_DROP
 *   'I' (index 1)    -> perf sample to slot 1 (no event open there): -ENOENT -> XDP_DROP
 *   'X' (index 9)    -> perf sample to slot 9, past the array: -E2BIG -> XDP_DROP
 *   'R' (reserve)    -> a copy of the event reserved with bpf_ringbuf_reserve, the sample
 *                       header written with bpf_ringbuf_output while it is reserved, then
 *                       the copy submitted: the reader gets event, copy, header -> XDP_PASS
 *   'D' (discard)    -> as 'R', the copy discarded: the reader gets event, header
 *   'W' (too wide)   -> bpf_ringbuf_reserve of 5000 bytes in the 4 KiB ring: NULL -> XDP_DROP
 *   'Q' (query)      -> bpf_ringbuf_query of available data, size, consumer and
 *                       producer positions into results[4..7] -> XDP_PASS
 *   anything else    -> XDP_PASS
 *
 * Non-UDP frames: the sample only -> XDP_PASS.
 *
 * Maps: events  — RINGBUF, 4096 bytes
 *       samples — PERF_EVENT_ARRAY, 4 slots
 *       results — ARRAY, 8 x __s64: [0] last ring output result, [1] last perf output
 *                 result, [2] ring records sent, [3] reservations, [4..7] ring query results.
 * Helpers: bpf_perf_event_output, bpf_ringbuf_output, bpf_ringbuf_reserve,
 *          bpf_ringbuf_submit, bpf_ringbuf_discard, bpf_ringbuf_query,
 *          bpf_map_lookup_elem.
 */
#include "xdp_common.h"

#define EINVAL 22

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(max_entries, 4);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __s64);
} results SEC(".maps");

struct event {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u16 len;
	__u8 first;
	__u8 ttl;
};

struct sample_hdr {
	__u16 cookie;
	__u16 len;
};

struct burst {
	__u8 bytes[448];
};

static __always_inline void set(__u32 idx, __s64 v)
{
	__s64 *slot = bpf_map_lookup_elem(&results, &idx);

	if (slot)
		*slot = v;
}

static __always_inline void add(__u32 idx, __s64 v)
{
	__s64 *slot = bpf_map_lookup_elem(&results, &idx);

	if (slot)
		*slot += v;
}

SEC("xdp")
int xdp_events(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	struct sample_hdr hdr = { .cookie = 0xcafe, .len = len };
	__u64 ctxlen = len < 32 ? len : 32;
	__u64 index = BPF_F_CURRENT_CPU;
	__u8 first = 0;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	__u8 *payload;
	long ret;

	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		goto sample;
	udp = (void *)(ip + 1);
	payload = (void *)(udp + 1);
	if ((void *)(payload + 1) > data_end)
		goto sample;
	first = *payload;

	struct event ev = {
		.saddr = ip->saddr,
		.daddr = ip->daddr,
		.sport = udp->source,
		.dport = udp->dest,
		.len = len,
		.first = first,
		.ttl = ip->ttl,
	};
	ret = bpf_ringbuf_output(&events, &ev, sizeof(ev), first == 'F' ? 4 : 0);
	set(0, ret);
	if (ret == 0)
		add(2, 1);
	if (first == 'F')
		return ret == -EINVAL ? XDP_ABORTED : XDP_PASS;
	if (first == 'B') {
		struct burst b;

		__builtin_memset(&b, first, sizeof(b));
		for (int i = 0; i < 9; i++) {
			b.bytes[0] = i;
			ret = bpf_ringbuf_output(&events, &b, sizeof(b), BPF_RB_NO_WAKEUP);
			set(0, ret);
			if (ret)
				return XDP_DROP;
			add(2, 1);
		}
	}
	if (first == 'R' || first == 'D') {
		struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

		if (!e)
			return XDP_DROP;
		*e = ev;
		e->first = first + 1;
		/* Written while `e` is reserved, read after it: records keep reservation order. */
		bpf_ringbuf_output(&events, &hdr, sizeof(hdr), 0);
		if (first == 'D')
			bpf_ringbuf_discard(e, 0);
		else
			bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
		add(3, 1);
	}
	if (first == 'W') {
		void *big = bpf_ringbuf_reserve(&events, 5000, 0);

		if (big) {
			bpf_ringbuf_discard(big, 0);
			return XDP_PASS;
		}
		return XDP_DROP;
	}
	if (first == 'Q') {
		set(4, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA));
		set(5, bpf_ringbuf_query(&events, BPF_RB_RING_SIZE));
		set(6, bpf_ringbuf_query(&events, BPF_RB_CONS_POS));
		set(7, bpf_ringbuf_query(&events, BPF_RB_PROD_POS));
	}
	if (first == 'L')
		ctxlen = 4000;
	if (first == 'I')
		index = 1;
	if (first == 'X')
		index = 9;

sample:
	ret = bpf_perf_event_output(ctx, &samples, index | (ctxlen << 32), &hdr, sizeof(hdr));
	set(1, ret);
	return ret ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
