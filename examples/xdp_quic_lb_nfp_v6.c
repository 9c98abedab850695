/* xdp_quic_lb_nfp_v6.c — QUIC connection-ID load balancer, IPv6, NFP-offloadable.
 *
 * The policy of xdp_quic_lb_v6.c (see there, xdp_quic_lb_v4.c and quic_lb.h),
 * over IPv6 with up to MAX_EXT_HDRS extension headers walked by a bounded
 * loop. The destination IPv6 address is replaced by the backend's and the UDP
 * checksum (if non-zero) is fixed incrementally.
 *
 * Differences from xdp_quic_lb_v6.c, because of what the kernel's NFP JIT offloads:
 *   - the sticky table is a plain HASH instead of an LRU_HASH (the NFP
 *     offloads only ARRAY and HASH maps); a full table refuses new clients
 *     instead of evicting old ones;
 *   - the UDP checksum is updated in C with RFC 1624 eqn. 3,
 *     HC' = ~(~HC + ~m + m'), over the sixteen 16-bit words of the old and new
 *     address, instead of with bpf_csum_diff (no such helper on the NFP).
 *
 * Branches:
 *   not Ethernet+IPv6                                       -> XDP_PASS
 *   IPv6 / extension / UDP header truncated                 -> XDP_DROP
 *   non-first fragment (fragment offset != 0)               -> XDP_PASS
 *   more than MAX_EXT_HDRS extension headers, or upper
 *   layer not UDP (e.g. TCP, ICMPv6, no next header)        -> XDP_PASS
 *   dport != 443, version negotiation, fixed bit clear      -> XDP_PASS
 *   QUIC header/DCID truncated, DCID length > 20           -> XDP_DROP
 *   selected backend slot has address :: (unconfigured)     -> XDP_PASS
 *   backend selected                                        -> rewritten, XDP_TX
 *
 * Maps:
 *   qlb_backends_nfp_v6 — ARRAY, NUM_BACKENDS x struct backend_v6 {struct in6_addr addr; __u8 mac[6]; __u16 pad}
 *   qlb_sticky_nfp_v6   — HASH, key struct client_v6 {struct in6_addr addr; __be16 port; __u16 pad},
 *                          value __u32 backend index
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem.
 */
#define QLB_NFP
#include "xdp_quic_lb_v6.c"
