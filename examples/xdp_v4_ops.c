/* xdp_v4_ops.c — exercises the BPF ISA v4 instructions (build: clang -mcpu=v4).
 *
 * For IPv4 (no options) UDP datagrams to port 9000 with at least 152 payload
 * bytes, the program reads signed operands from the payload with
 * sign-extending loads, combines them with signed division/modulo (64- and
 * 32-bit), sign-extending register moves, unconditional byte swaps, 32-bit
 * arithmetic and atomic read-modify-write operations on a map value, and
 * writes every result back into the payload (bytes 16..147), so that all of
 * them are visible in the output packet (and the atomics also in the map).
 *
 * Payload layout (offsets from the UDP payload start):
 *   in:  [0] s8 a, [2] s16 b (native order), [4] s32 c, [8] s64 d
 *   out: [16] d / (a|1)          s64 sdiv      [24] d % b (b != 0) s64 smod
 *        [32] c / (b|1)          s32 sdiv      [36] c % (a|1)      s32 smod
 *        [40] (s64)(s8)(d + 3)   movsx 8->64   [48] (s32)(s16)(c + b) movsx 16->32
 *        [52] bswap16(b)         [54] pad 0    [56] bswap32(c)
 *        [60] pad 0              [64] bswap64(d)
 *        [72] 32-bit mix of a, c, d (mul, xor, shifts, udiv, umod)
 *        [76] pad 0
 *        [80] old value of fetch_add     [88] old value of xchg
 *        [96] old value of cmpxchg       [104] old value of fetch_or
 *        [112] old value of fetch_and    [120] old value of fetch_xor
 *        [128] old value of 32-bit xchg  [132] old value of 32-bit fetch_add
 *        [136] 32-bit cmpxchg old value  [140] (s64)(s32)(d ^ c) movsx 32->64
 *
 * Branches:
 *   not Ethernet+IPv4+UDP, IHL != 5, dport != 9000        -> XDP_PASS
 *   UDP header truncated or payload < 152 bytes           -> XDP_DROP
 *   v4_state[0] missing (cannot happen for an ARRAY)      -> XDP_ABORTED
 *   b == 0                                                -> d % b written as 0
 *   otherwise                                             -> results written, XDP_TX
 *
 * Maps: v4_state — ARRAY, 1 x struct v4_state (seven __u64 + four __u32 cells).
 * Helpers: bpf_map_lookup_elem. Atomics: add (no fetch, 64 and 32 bit),
 * fetch_add, xchg, cmpxchg, fetch_or, fetch_and, fetch_xor, xchg32,
 * fetch_add32, cmpxchg32.
 */
#include "xdp_common.h"

#define V4_PORT 9000
#define MIN_PAYLOAD 152

struct v4_state {
	__u64 add;
	__u64 fetch_add;
	__u64 xchg;
	__u64 cmpxchg;
	__u64 or_;
	__u64 and_;
	__u64 xor_;
	__u32 add32;
	__u32 xchg32;
	__u32 cmpxchg32;
	__u32 fetch_add32;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct v4_state);
} v4_state SEC(".maps");

SEC("xdp")
int xdp_v4_ops(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	__u8 *p;
	__u32 zero = 0;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_DROP;
	if (udp->dest != bpf_htons(V4_PORT))
		return XDP_PASS;
	p = (void *)(udp + 1);
	if ((void *)(p + MIN_PAYLOAD) > data_end)
		return XDP_DROP;

	/* Sign-extending loads (ldsx). */
	__s64 a = *(volatile __s8 *)(p + 0);
	__s64 b = *(volatile __s16 *)(p + 2);
	__s64 c = *(volatile __s32 *)(p + 4);
	__s64 d = *(volatile __s64 *)(p + 8);

	/* Signed division and modulo, 64 and 32 bit. */
	__s64 q64 = d / (a | 1);
	__s64 r64 = b ? d % b : 0;
	__s32 q32 = (__s32)c / ((__s32)b | 1);
	__s32 r32 = (__s32)c % ((__s32)a | 1);

	/* Sign-extending register moves (movsx). */
	__s64 e = (__s8)(d + 3);
	__s32 f = (__s16)((__s32)c + (__s32)b);
	__s64 g = (__s32)(d ^ c);

	/* 32-bit arithmetic. */
	__u32 x = (__u32)c * 2654435761u + (__u32)a;
	x ^= x >> 13;
	x = (x << 5) | (x >> 27);
	x -= (__u32)d;
	x += x / ((__u32)(b & 0xff) + 1);
	x ^= x % 1000003u;

	*(__s64 *)(p + 16) = q64;
	*(__s64 *)(p + 24) = r64;
	*(__s32 *)(p + 32) = q32;
	*(__s32 *)(p + 36) = r32;
	*(__s64 *)(p + 40) = e;
	*(__s32 *)(p + 48) = f;
	*(__u16 *)(p + 52) = __builtin_bswap16((__u16)b);
	*(__u16 *)(p + 54) = 0;
	*(__u32 *)(p + 56) = __builtin_bswap32((__u32)c);
	*(__u32 *)(p + 60) = 0;
	*(__u64 *)(p + 64) = __builtin_bswap64((__u64)d);
	*(__u32 *)(p + 72) = x;
	*(__u32 *)(p + 76) = 0;

	struct v4_state *st = bpf_map_lookup_elem(&v4_state, &zero);
	if (!st)
		return XDP_ABORTED;

	__sync_fetch_and_add(&st->add, d);                               /* atomic add  */
	__sync_fetch_and_add(&st->add32, (__u32)c);                      /* add32       */
	*(__u64 *)(p + 80) = __sync_fetch_and_add(&st->fetch_add, c);    /* fetch_add   */
	*(__u64 *)(p + 88) = __atomic_exchange_n(&st->xchg, (__u64)d, __ATOMIC_SEQ_CST);
	*(__u64 *)(p + 96) = __sync_val_compare_and_swap(&st->cmpxchg, (__u64)a, (__u64)q64);
	*(__u64 *)(p + 104) = __sync_fetch_and_or(&st->or_, (__u64)b);
	*(__u64 *)(p + 112) = __sync_fetch_and_and(&st->and_, (__u64)d);
	*(__u64 *)(p + 120) = __sync_fetch_and_xor(&st->xor_, (__u64)c);
	*(__u32 *)(p + 128) = __atomic_exchange_n(&st->xchg32, x, __ATOMIC_SEQ_CST);
	*(__u32 *)(p + 132) = __sync_fetch_and_add(&st->fetch_add32, 1);
	*(__u32 *)(p + 136) = __sync_val_compare_and_swap(&st->cmpxchg32, (__u32)b, x);
	*(__s64 *)(p + 140) = g;
	return XDP_TX;
}
