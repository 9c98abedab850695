/* legacy.h — pre-libbpf-1.0 conventions, declared by hand the way old samples
 * did it: SEC() macro, struct bpf_map_def for SEC("maps") definitions, and
 * helpers as function pointers initialised with their helper ids. No libbpf
 * headers are used. Built with clang-14 -mcpu=v1/v2.
 */
#ifndef LINERATE_LEGACY_H
#define LINERATE_LEGACY_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>

#define SEC(name) __attribute__((section(name), used))

struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};

static void *(*bpf_map_lookup_elem)(void *map, const void *key) =
	(void *)BPF_FUNC_map_lookup_elem;
static long long (*bpf_csum_diff)(void *from, __u32 from_size, void *to, __u32 to_size,
				  __u32 seed) = (void *)BPF_FUNC_csum_diff;
static long (*bpf_xdp_adjust_head)(struct xdp_md *ctx, int delta) =
	(void *)BPF_FUNC_xdp_adjust_head;

/* Little-endian host assumed, as the old samples did. */
#define legacy_htons(x) ((__u16)__builtin_bswap16(x))

#endif
