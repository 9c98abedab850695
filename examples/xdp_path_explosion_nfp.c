/* xdp_path_explosion_nfp.c — many paths, most of them infeasible and slow;
 * NFP-offloadable.
 *
 * The program of xdp_path_explosion.c (see there): frames with EtherType
 * 0x88B5 carry STAGES (48) feature bytes after the Ethernet header, followed
 * by room for the result. Stage i reads v = f[i] and
 *
 *     if (v > 0x7f) {                  // feasible both ways
 *         acc = acc * 31 + v;          // cheap
 *         OPAQUE(v);
 *         if (v < 0x40)                // contradicts v > 0x7f: NEVER taken
 *             slow_path(i, acc);       // hash update + lookup + delete
 *     } else {
 *         acc ^= v << (i % 25);        // cheap
 *     }
 *
 * OPAQUE() is an empty inline-asm barrier hiding v's range from clang, so the
 * contradictory test survives into the object: 3^48 syntactic paths, of which
 * only the 2^48 that never enter slow_path are feasible, and every infeasible
 * path is slower than any feasible one.
 *
 * Differences from xdp_path_explosion.c, because of what the kernel's NFP JIT offloads:
 *   - slow_path calls no bpf_trace_printk (the NFP has no such helper); it
 *     still calls three map helpers and reads the looked-up value (kept alive
 *     by OPAQUE), so the infeasible arms stay the slowest;
 *   - acc is 32 bits wide (initial value 0x9E3779B9, shift i % 25 so that
 *     the 7-bit v is not shifted out) and the result is written as 4
 *     big-endian bytes: the NFP multiplies only operands that fit in 32 bits
 *     (nfp_bpf_check_alu refuses a 64-bit acc * 31).
 *
 * Branches:
 *   frame shorter than 14 bytes                     -> XDP_DROP
 *   EtherType != 0x88B5                             -> XDP_PASS
 *   shorter than 14 + 48 + 4 bytes                  -> XDP_DROP
 *   otherwise: the 48 stages, result acc written big-endian at offset 62..65,
 *              then XDP_TX if acc is odd, XDP_DROP if even
 *
 * Maps: pe_scratch_nfp — HASH, key struct pe_key {__u32 stage; __u32 pad; __u64 acc},
 *       value __u64 (touched only on the infeasible slow paths).
 * Helpers: bpf_map_update_elem, bpf_map_lookup_elem, bpf_map_delete_elem
 *          (all on infeasible paths only).
 */
#define PE_NFP
#include "xdp_path_explosion.c"
