/* xdp_path_explosion.c — many paths, most of them infeasible and slow.
 *
 * Frames with EtherType 0x88B5 (IEEE local experimental) carry a vector of
 * STAGES (48) feature bytes right after the Ethernet header, followed by 8
 * bytes where the program writes its result. Each stage i reads byte v = f[i]
 * and branches:
 *
 *     if (v > 0x7f) {                  // feasible both ways
 *         acc = acc * 31 + v;          // cheap
 *         OPAQUE(v);
 *         if (v < 0x40)                // contradicts v > 0x7f: NEVER taken
 *             slow_path(i, acc);       // hash update + lookup + delete + printk
 *     } else {
 *         acc ^= (__u64)v << (i % 57); // cheap
 *     }
 *
 * OPAQUE() is an empty inline-asm barrier: it emits no instruction, but hides
 * the known range of v from clang so the contradictory test survives into the
 * object. A syntactic path picks one of three arms per stage, so the CFG has
 * 3^48 (~8e22) entry-to-exit paths through the stages; only the 2^48 (~2.8e14)
 * paths that never enter slow_path are feasible (fraction (2/3)^48 ~ 4e-9), and
 * every infeasible path is slower than any feasible one because slow_path calls
 * three map helpers and bpf_trace_printk. A sound worst-case bound must prove
 * the slow arms dead; a path-insensitive bound charges 48 slow paths.
 * The kernel verifier does not prove them dead either: clang compiles
 * `v > 0x7f` as a sign test on a shifted copy of v (w2 <<= 24; w2 s>>= 24;
 * if w2 s> -1), so the register tested later (v & 0xff) keeps the range
 * [0, 255] and the verifier walks every slow arm (it still loads quickly
 * because its state pruning merges the stages' join points).
 *
 * Branches:
 *   frame shorter than 14 bytes                     -> XDP_DROP
 *   EtherType != 0x88B5                             -> XDP_PASS
 *   shorter than 14 + 48 + 8 bytes                  -> XDP_DROP
 *   otherwise: the 48 stages, result acc written big-endian at offset 62, then
 *              XDP_TX if acc is odd, XDP_DROP if even
 *
 * Maps: pe_scratch — HASH, key struct pe_key {__u32 stage; __u32 pad; __u64 acc},
 *       value __u64 (touched only on the infeasible slow paths).
 * Helpers: bpf_map_update_elem, bpf_map_lookup_elem, bpf_map_delete_elem,
 *          bpf_trace_printk (all on infeasible paths only).
 */
#include "xdp_common.h"

#define ETH_P_EXPERIMENTAL 0x88B5
#define STAGES 48

#define OPAQUE(x) asm volatile("" : "+r"(x))

/* xdp_path_explosion_nfp.c builds this program with PE_NFP: another name, no printk, and a
 * 32-bit accumulator (see there). */
#ifdef PE_NFP
#define pe_scratch pe_scratch_nfp
#define xdp_path_explosion xdp_path_explosion_nfp
typedef __u32 pe_acc_t;
#define PE_ACC_INIT 0x9E3779B9u
#define PE_SHIFT_MOD 25
#else
typedef __u64 pe_acc_t;
#define PE_ACC_INIT 0x9E3779B97F4A7C15ull
#define PE_SHIFT_MOD 57
#endif

struct pe_key {
	__u32 stage;
	__u32 pad;
	__u64 acc;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct pe_key);
	__type(value, __u64);
} pe_scratch SEC(".maps");

static __always_inline void slow_path(__u32 stage, pe_acc_t acc)
{
	struct pe_key k = { .stage = stage, .pad = 0, .acc = acc };
	__u64 one = 1, *v;

	bpf_map_update_elem(&pe_scratch, &k, &one, BPF_ANY);
	v = bpf_map_lookup_elem(&pe_scratch, &k);
#ifdef PE_NFP
	if (v) {
		__u64 seen = *v;

		OPAQUE(seen);
	}
#else
	if (v)
		bpf_printk("path_explosion: impossible stage %u value %llu", stage, *v);
#endif
	bpf_map_delete_elem(&pe_scratch, &k);
}

#define STAGE(i)                                          \
	do {                                              \
		__u8 v = f[i];                            \
		if (v > 0x7f) {                           \
			acc = acc * 31 + v;               \
			OPAQUE(v);                        \
			if (v < 0x40)                     \
				slow_path(i, acc);        \
		} else {                                  \
			acc ^= (pe_acc_t)v << ((i) % PE_SHIFT_MOD); \
		}                                         \
	} while (0)

#define STAGE8(b)                                                         \
	STAGE(b + 0); STAGE(b + 1); STAGE(b + 2); STAGE(b + 3);           \
	STAGE(b + 4); STAGE(b + 5); STAGE(b + 6); STAGE(b + 7)

SEC("xdp")
int xdp_path_explosion(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 *f;
	pe_acc_t acc = PE_ACC_INIT;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_EXPERIMENTAL))
		return XDP_PASS;
	f = (void *)(eth + 1);
	if ((void *)(f + STAGES + sizeof(acc)) > data_end)
		return XDP_DROP;

	STAGE8(0);
	STAGE8(8);
	STAGE8(16);
	STAGE8(24);
	STAGE8(32);
	STAGE8(40);

#ifdef PE_NFP
	__be32 be = bpf_htonl(acc);
#else
	__u64 be = __builtin_bswap64(acc);
#endif
	__builtin_memcpy(f + STAGES, &be, sizeof(be));
	return (acc & 1) ? XDP_TX : XDP_DROP;
}
