/* mpls_pop.c — MPLS label-switching edge: pop a bounded label stack.
 *
 * Frames with EtherType 0x8847 carry up to four labels. The top label is looked
 * up in `lfib`: absent drops; action 1 pops the whole stack and forwards the
 * payload (IPv4 or IPv6 by its first nibble, anything else drops); action 2
 * swaps the top label for the entry's out-label and decrements the MPLS TTL
 * (TTL 1 or 0 drops) and sends it back out (XDP_TX). A stack without a
 * bottom-of-stack bit within four labels is dropped. Non-MPLS frames pass.
 *
 * Maps: lfib (HASH u32 label -> {action, out_label}). Helpers: map_lookup_elem,
 * xdp_adjust_head.
 */
#include "corpus.h"

struct lfib_entry {
	__u32 action;
	__u32 out_label;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct lfib_entry);
} lfib SEC(".maps");

#define MAX_LABELS 4

SEC("xdp")
int mpls_pop(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;

	if (data + 14 > end)
		return XDP_DROP;
	/* EtherType read byte by byte. */
	__u16 type = ((__u16)data[12] << 8) | data[13];
	if (type != ETHTYPE_MPLS)
		return XDP_PASS;

	__u8 *lse = data + 14;
	if (lse + 4 > end)
		return XDP_DROP;
	__u32 top = ((__u32)lse[0] << 12) | ((__u32)lse[1] << 4) | (lse[2] >> 4);
	struct lfib_entry *e = bpf_map_lookup_elem(&lfib, &top);
	if (!e)
		return XDP_DROP;

	if (e->action == 2) {
		__u8 ttl = lse[3];
		if (ttl <= 1)
			return XDP_DROP;
		__u32 out = e->out_label & 0xfffff;
		lse[0] = out >> 12;
		lse[1] = out >> 4;
		lse[2] = (__u8)(out << 4) | (lse[2] & 0x0f);
		lse[3] = ttl - 1;
		return XDP_TX;
	}
	if (e->action != 1)
		return XDP_DROP;

	int labels = 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < MAX_LABELS; i++) {
		__u8 *l = data + 14 + 4 * i;
		if (l + 4 > end)
			return XDP_DROP;
		if (l[2] & 1) {
			labels = i + 1;
			break;
		}
	}
	if (!labels)
		return XDP_DROP;

	__u8 *payload = data + 14 + 4 * labels;
	if (payload + 1 > end)
		return XDP_DROP;
	__u16 inner;
	switch (payload[0] >> 4) {
	case 4:
		inner = ETHTYPE_IP;
		break;
	case 6:
		inner = ETHTYPE_IP6;
		break;
	default:
		return XDP_DROP;
	}

	/* Move the MAC addresses next to the payload and write the new EtherType. */
	__u8 *dst = data + 4 * labels;
	if (dst + 14 > end)
		return XDP_DROP;
#pragma clang loop unroll(full)
	for (int i = 11; i >= 0; i--)
		dst[i] = data[i];
	dst[12] = inner >> 8;
	dst[13] = inner & 0xff;
	if (bpf_xdp_adjust_head(ctx, 4 * labels))
		return XDP_ABORTED;
	return XDP_PASS;
}
