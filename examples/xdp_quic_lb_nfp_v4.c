/* xdp_quic_lb_nfp_v4.c — QUIC connection-ID load balancer, IPv4, NFP-offloadable.
 *
 * The policy of xdp_quic_lb_v4.c (see there and quic_lb.h): UDP datagrams to
 * port 443 are parsed as QUIC and steered to one of NUM_BACKENDS backends —
 * short header: the server id in the DCID if valid, else FNV-1a(DCID) %
 * NUM_BACKENDS; long header: the client's (address, port) in a sticky table,
 * else FNV-1a(DCID) % NUM_BACKENDS, recorded. The destination address becomes
 * the backend's, the IPv4 and (if non-zero) UDP checksums are fixed
 * incrementally, the MACs are rewritten, and the packet leaves with XDP_TX.
 *
 * Differences from xdp_quic_lb_v4.c, because of what the kernel's NFP JIT offloads:
 *   - the sticky table is a plain HASH instead of an LRU_HASH: the NFP
 *     offloads only ARRAY and HASH maps (bpf_map_offload_map_alloc). A full
 *     table refuses new clients (the update fails and the packet still goes
 *     to the hashed backend) instead of evicting old ones;
 *   - the checksums are updated in C with RFC 1624 eqn. 3,
 *     HC' = ~(~HC + ~m + m'), over the two 16-bit halves of the address,
 *     instead of with bpf_csum_diff, a helper the NFP does not have.
 *
 * Branches:
 *   not Ethernet+IPv4, fragment, not UDP, dport != 443     -> XDP_PASS
 *   IPv4 header truncated / IHL < 5, UDP header truncated  -> XDP_DROP
 *   version negotiation, short header with fixed bit clear -> XDP_PASS
 *   QUIC header/DCID truncated, DCID length > 20           -> XDP_DROP
 *   selected backend slot has address 0 (unconfigured)     -> XDP_PASS
 *   backend selected                                       -> rewritten, XDP_TX
 *
 * Maps:
 *   qlb_backends_nfp_v4 — ARRAY, NUM_BACKENDS x struct backend_v4 {__be32 addr; __u8 mac[6]; __u16 pad}
 *   qlb_sticky_nfp_v4   — HASH, key struct client_v4 {__be32 addr; __be16 port; __u16 pad},
 *                          value __u32 backend index
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem.
 */
#define QLB_NFP
#include "xdp_quic_lb_v4.c"
