// SPDX-License-Identifier: GPL-2.0
// kfunc calls and __kconfig externs: a payload checksum counted with the open-coded number
// iterator (bpf_iter_num_new / _next / _destroy, kernel functions every program type may call)
// and the running kernel's version read from LINUX_KERNEL_VERSION.
//
// The first byte after the Ethernet header says how many of the following bytes to add up
// (at most 32 are read). The program writes the sum, the iterator's error for a reversed range
// (-EINVAL) and LINUX_KERNEL_VERSION into the packet, then:
//   XDP_DROP  if the sum is odd,
//   XDP_TX    if it is even and not zero,
//   XDP_PASS  if it is zero (also for frames too short to hold the 40-byte header).
// Kernels older than 5.0 (never the case where iterators exist) abort.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#define MAX_BYTES 32

struct bpf_iter_num {
	__u64 opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern int CONFIG_LINERATE_NO_SUCH_OPTION __kconfig __weak;

struct result {
	__u8 count;
	__u8 pad[3];
	__u32 sum;
	__s32 reversed_error;
	__u32 kernel_version;
	__s32 missing_option;
	__u8 bytes[MAX_BYTES];
};

SEC("xdp")
int xdp_kfunc(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct result *r = data + sizeof(struct ethhdr);
	struct bpf_iter_num it;
	int *i;
	__u32 sum = 0;
	int n;

	if (LINUX_KERNEL_VERSION < KERNEL_VERSION(5, 0, 0))
		return XDP_ABORTED;
	if ((void *)(r + 1) > data_end)
		return XDP_PASS;
	n = r->count;
	if (n > MAX_BYTES)
		n = MAX_BYTES;

	bpf_iter_num_new(&it, 0, n);
	while ((i = bpf_iter_num_next(&it))) {
		int k = *i;
		__u8 *byte;

		if (k < 0 || k >= MAX_BYTES)
			break;
		byte = &r->bytes[k];
		if ((void *)(byte + 1) > data_end)
			break;
		sum += *byte;
	}
	bpf_iter_num_destroy(&it);

	r->reversed_error = bpf_iter_num_new(&it, 5, 2);
	bpf_iter_num_destroy(&it);

	r->sum = sum;
	r->kernel_version = LINUX_KERNEL_VERSION;
	r->missing_option = CONFIG_LINERATE_NO_SUCH_OPTION;
	if (sum & 1)
		return XDP_DROP;
	return sum ? XDP_TX : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
