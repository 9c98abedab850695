/* xdp_cms_nfp.c — count-only count-min sketch, NFP-offloadable.
 *
 * The sketch of xdp_cms.c (see there) without the heavy-hitter decision:
 * every IPv4 TCP/UDP packet increments one counter in each of ROWS rows of a
 * count-min sketch (row r hashes the 5-tuple with a multiply/xorshift mix
 * seeded with (r + 1) * 0x9E3779B1) and is passed. The counters are never
 * read by the program; estimates are left to whoever reads the map (user
 * space). This is the Count-Min of paper 000 (Table 1), which "counts the
 * number of UDP and TCP flows, using a varying number of hash functions".
 *
 * Differences from xdp_cms.c, because of what the kernel's NFP JIT offloads:
 *   - the increment is a non-fetching atomic add: __sync_fetch_and_add with
 *     its result unused, which clang emits as `lock *(u32 *)(rX + 0) += rY`
 *     (BPF_ATOMIC BPF_ADD without BPF_FETCH). The NFP JIT has no fetching
 *     atomics (nfp_bpf_check_atomic / mem_atomic4 accept only plain add);
 *   - count-only: no estimate and no drop. Reading the counter back (the
 *     only way to get an estimate without a fetching atomic) is refused by
 *     the kernel's NFP verifier: nfp_bpf_map_mark_used_one rejects a program
 *     that both reads and atomically adds the same 32-bit word of a map value
 *     ("map value use type conflict"), since the NFP keeps atomic counters in
 *     its own byte order; paper 000 §3: BPF/XDP on NFP "does not support
 *     reading and writing from the same DRAM location". So counted packets
 *     return XDP_PASS whatever the counters hold, and no instruction loads
 *     from a map value.
 *
 * ROWS is a compile-time parameter (-DROWS=N, default 5); the Makefile builds
 * xdp_cms_nfp_d2.o, _d5.o, _d10.o and _d20.o. The row loop is a real loop
 * (unrolling disabled), so every build has a back edge.
 *
 * Branches:
 *   frame shorter than 14 bytes, or not IPv4          -> XDP_PASS (not counted)
 *   IPv4 header truncated / IHL < 5                   -> XDP_DROP
 *   protocol other than TCP/UDP                       -> XDP_PASS (not counted)
 *   TCP/UDP port pair truncated                       -> XDP_DROP
 *   counted (one add per row)                         -> XDP_PASS
 *
 * Maps: cms — ARRAY of ROWS * COLS __u32 counters (row-major: index = r * COLS + col),
 *       key __u32, only atomically added to. Helpers: bpf_map_lookup_elem.
 *       Atomics: add (non-fetching).
 */
#define CMS_NFP
#include "xdp_cms.c"
