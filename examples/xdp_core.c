/* xdp_core.c — CO-RE: field offsets, sizes, existence, bitfields and enum
 * values resolved against the running kernel's BTF.
 *
 * Built against vmlinux_core.h (no kernel UAPI headers): every packet and
 * context access is a CO-RE relocation, which linerate applies when it reads
 * the object, so the interpreter and the kernel run the same instructions.
 *
 * Branches:
 *   frame shorter than bpf_core_type_size(struct ethhdr)    -> XDP_DROP
 *   not IPv4                       -> bpf_core_enum_value(XDP_PASS), stats[0]
 *   shorter than Ethernet + bpf_core_type_size(struct iphdr) -> XDP_DROP
 *   ihl (BPF_CORE_READ_BITFIELD) below 5                     -> XDP_DROP, stats[1]
 *   bpf_core_field_exists(no_such_field) (never)             -> XDP_ABORTED
 *   UDP to port 9 (struct udphdr___old, flavor ignored)      -> XDP_DROP, stats[2]
 *   any other IPv4                                           -> XDP_PASS, stats[3]
 *
 * Maps: core_stats — ARRAY, 4 entries, key __u32, value __u64.
 */
#include "vmlinux_core.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} core_stats SEC(".maps");

static __always_inline int count(__u32 idx, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&core_stats, &idx);

	if (c)
		*c += 1;
	return verdict;
}

SEC("xdp")
int xdp_core(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr___old *udp;
	__u32 ihl;

	if (data + bpf_core_type_size(struct ethhdr) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(0x0800))
		return count(0, bpf_core_enum_value(enum xdp_action, XDP_PASS));
	ip = data + bpf_core_type_size(struct ethhdr);
	if ((void *)ip + bpf_core_type_size(struct iphdr) > data_end)
		return XDP_DROP;
	ihl = BPF_CORE_READ_BITFIELD(ip, ihl);
	if (ihl < 5)
		return count(1, XDP_DROP);
	if (bpf_core_field_exists(ip->no_such_field))
		return XDP_ABORTED;
	if (ip->protocol == 17) {
		udp = (void *)ip + ihl * 4;
		if ((void *)udp + bpf_core_type_size(struct udphdr___old) > data_end)
			return XDP_DROP;
		if (udp->dest == bpf_htons(9))
			return count(2, XDP_DROP);
	}
	return count(3, XDP_PASS);
}

char LICENSE[] SEC("license") = "GPL";
