/* xdp_queue.c — queue and stack maps, a DEVMAP_HASH redirect and bpf_check_mtu.
 *
 * IPv4 UDP frames carry a command: the UDP destination port picks the operation, the
 * first 4 payload bytes are its argument `arg` (host order as read) and the UDP source
 * port is the devmap key. Every result goes to `results` ([0] helper result, [1] value
 * read, [2] mtu written by bpf_check_mtu).
 *
 *   dport 1  push arg to `fifo` (flags 0)         -> XDP_PASS, -E2BIG when full -> XDP_DROP
 *   dport 2  push arg to `fifo` with BPF_EXIST    -> XDP_PASS (a full queue drops its oldest)
 *   dport 3  pop `fifo` into results[1]           -> XDP_PASS, -ENOENT when empty -> XDP_DROP
 *   dport 4  peek `fifo` into results[1]          -> as pop, without removing
 *   dport 5..8  the same on `lifo` (a stack)
 *   dport 9  push with BPF_NOEXIST: -EINVAL       -> XDP_ABORTED
 *   dport 10 bpf_redirect_map(&ports, sport, XDP_PASS) after reading the entry with
 *            bpf_map_lookup_elem into results[1] -> XDP_REDIRECT where `ports` has sport
 *            (seeded: 7 -> ifindex 1), else XDP_PASS
 *   dport 11 bpf_check_mtu(ctx, 0, &mtu = 0, len_diff = arg, 0): the frame's own length
 *            plus arg against the loopback MTU -> XDP_PASS on success, XDP_DROP when
 *            fragmentation would be needed
 *   dport 12 bpf_check_mtu(ctx, 1, &mtu = arg, 0, 0): arg as the L3 length
 *   dport 13 bpf_check_mtu(ctx, 999, ...): no such device, -ENODEV -> XDP_DROP
 *   dport 14 bpf_check_mtu(ctx, 0, ..., flags 1): -EINVAL -> XDP_DROP
 *   dport 15 bpf_map_update_elem(&counts, 0, {frames = arg, bytes = 2 arg}, BPF_F_LOCK)
 *            -> XDP_PASS, XDP_DROP when refused
 *   dport 16 the same on `locked` (HASH) at key arg, flags BPF_F_LOCK | BPF_EXIST
 *   dport 17 the same on `locked` at key arg, flags BPF_F_LOCK (insert or rewrite)
 *   dport 18 the same on `results` (no lock in its values): -EINVAL -> XDP_DROP
 *   other frames -> XDP_PASS
 *
 * Every IPv4 UDP frame with an argument is counted in `counts` (frames, bytes) under its
 * bpf_spin_lock.
 *
 * Maps: fifo    — QUEUE, 4 x __u32 (seeded full: 0x11111111 .. 0x44444444)
 *       lifo    — STACK, 4 x __u32
 *       ports   — DEVMAP_HASH, 8 entries, key __u32, value __u32 ifindex
 *       results — ARRAY, 4 x __s64
 *       counts  — ARRAY, 1 x { bpf_spin_lock; __u32 frames; __u64 bytes }
 *       locked  — HASH, 8 x the same, key __u32 (seeded with nonzero lock bytes, which
 *                 neither engine stores)
 * Helpers: bpf_map_push_elem, bpf_map_pop_elem, bpf_map_peek_elem, bpf_redirect_map,
 *          bpf_map_lookup_elem, bpf_check_mtu, bpf_spin_lock, bpf_spin_unlock.
 */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 4);
	__uint(value_size, sizeof(__u32));
} fifo SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__uint(max_entries, 4);
	__uint(value_size, sizeof(__u32));
} lifo SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __s64);
} results SEC(".maps");

/* A value with a spin lock: the kernel needs the map's BTF to find the lock. */
struct locked_count {
	struct bpf_spin_lock lock;
	__u32 frames;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct locked_count);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct locked_count);
} locked SEC(".maps");

static __always_inline void set(__u32 idx, __s64 v)
{
	__s64 *slot = bpf_map_lookup_elem(&results, &idx);

	if (slot)
		*slot = v;
}

SEC("xdp")
int xdp_queue(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp;
	__u32 *argp, arg, value = 0, mtu = 0, key;
	void *map;
	long ret;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	udp = (void *)(ip + 1);
	argp = (void *)(udp + 1);
	if ((void *)(argp + 1) > data_end)
		return XDP_PASS;
	arg = *argp;
	key = bpf_ntohs(udp->source);

	__u32 zero = 0;
	struct locked_count *c = bpf_map_lookup_elem(&counts, &zero);

	if (c) {
		bpf_spin_lock(&c->lock);
		c->frames += 1;
		c->bytes += data_end - data;
		bpf_spin_unlock(&c->lock);
	}

	switch (bpf_ntohs(udp->dest)) {
	case 1: case 2: case 5: case 6:
		map = bpf_ntohs(udp->dest) < 5 ? (void *)&fifo : (void *)&lifo;
		ret = bpf_map_push_elem(map, &arg, bpf_ntohs(udp->dest) & 1 ? 0 : BPF_EXIST);
		set(0, ret);
		return ret ? XDP_DROP : XDP_PASS;
	case 3: case 7:
		map = bpf_ntohs(udp->dest) < 5 ? (void *)&fifo : (void *)&lifo;
		ret = bpf_map_pop_elem(map, &value);
		set(0, ret);
		set(1, value);
		return ret ? XDP_DROP : XDP_PASS;
	case 4: case 8:
		map = bpf_ntohs(udp->dest) < 5 ? (void *)&fifo : (void *)&lifo;
		ret = bpf_map_peek_elem(map, &value);
		set(0, ret);
		set(1, value);
		return ret ? XDP_DROP : XDP_PASS;
	case 9:
		ret = bpf_map_push_elem(&fifo, &arg, BPF_NOEXIST);
		set(0, ret);
		return ret ? XDP_ABORTED : XDP_PASS;
	case 10: {
		__u32 *ifindex = bpf_map_lookup_elem(&ports, &key);

		set(1, ifindex ? *ifindex : -1);
		return bpf_redirect_map(&ports, key, XDP_PASS);
	}
	case 11:
		ret = bpf_check_mtu(ctx, 0, &mtu, (__s32)arg, 0);
		break;
	case 12:
		mtu = arg;
		ret = bpf_check_mtu(ctx, 1, &mtu, 0, 0);
		break;
	case 13:
		ret = bpf_check_mtu(ctx, 999, &mtu, 0, 0);
		break;
	case 14:
		ret = bpf_check_mtu(ctx, 0, &mtu, 0, 1);
		break;
	case 15: case 16: case 17: case 18: {
		struct locked_count update = { .frames = arg, .bytes = 2 * (__u64)arg };
		__u16 op = bpf_ntohs(udp->dest);

		if (op == 15)
			ret = bpf_map_update_elem(&counts, &zero, &update, BPF_F_LOCK);
		else if (op == 18)
			ret = bpf_map_update_elem(&results, &zero, &update.bytes, BPF_F_LOCK);
		else
			ret = bpf_map_update_elem(&locked, &arg, &update,
						  op == 16 ? BPF_F_LOCK | BPF_EXIST : BPF_F_LOCK);
		set(0, ret);
		return ret ? XDP_DROP : XDP_PASS;
	}
	default:
		return XDP_PASS;
	}
	set(0, ret);
	set(2, mtu);
	return ret ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
