/* xdp_transcoder_nfp.c — G.711 A-law to mu-law payload transcoder for RTP,
 * NFP-offloadable.
 *
 * The transcoder of xdp_transcoder.c (see there): IPv4 (no options) UDP
 * datagrams to port RTP_PORT carrying RTP version 2 without CSRCs or header
 * extension and with payload type 8 (PCMA) are converted in place to payload
 * type 0 (PCMU), byte by byte (at most 160 payload bytes) in a bounded loop;
 * the marker bit is kept, the UDP checksum set to 0, and per-SSRC
 * packet/byte counters are kept. The converted packet continues to the stack.
 *
 * Differences from xdp_transcoder.c, because of what the kernel's NFP JIT offloads:
 *   - the 256-entry A-law -> mu-law table lives in an ARRAY map seeded by
 *     the loader (xdp_transcoder_nfp.maps.json) instead of in .rodata: the
 *     NFP has no global data (offloaded maps have no map_direct_value_addr).
 *     The map has 32 entries of 8 codes each (entry a >> 3, byte a & 7 of
 *     the little-endian __u64), read whole at offset 0 and shifted, rather
 *     than one 256-byte value indexed by the code, because the NFP verifier
 *     refuses map value accesses at a variable offset ("map value offset is
 *     variable", nfp_bpf_map_mark_used). So every payload byte costs a map
 *     lookup. (8 codes per entry rather than 1 keeps the map small enough
 *     for the JSON of `linerate run --json`, which lists every entry after
 *     every packet, to stay below the kernel's 128 KiB argument limit in
 *     scripts/run-examples.sh.);
 *   - rtp_streams is a HASH instead of a PERCPU_HASH (the NFP offloads only
 *     ARRAY and HASH maps), and its counters are bumped with non-fetching
 *     atomic adds instead of plain read-modify-write stores (the NFP cannot
 *     store to map values). A new SSRC gets a zeroed entry (BPF_NOEXIST),
 *     looked up again and then counted like a known one: the NFP verifier
 *     wants atomic counters inserted by the program to start at zero
 *     (nfp_bpf_map_update_value_ok).
 *
 * Branches:
 *   not Ethernet+IPv4+UDP, IHL != 5, fragment, dport != RTP_PORT -> XDP_PASS
 *   UDP header or 12-byte RTP header truncated                   -> XDP_DROP
 *   RTP version != 2, CSRC count != 0 or extension bit set       -> XDP_PASS
 *   payload type 0 (already PCMU)                                -> XDP_PASS unchanged
 *   any other payload type                                       -> XDP_PASS unchanged
 *   PCMA with empty payload or payload > 160 bytes               -> XDP_PASS unchanged
 *   PCMA with 1..160 payload bytes                               -> transcoded, XDP_PASS
 *     (a table lookup failing — impossible for an ARRAY — leaves its byte unchanged;
 *      the first packet of an SSRC inserts a zeroed counter, then every packet adds to it;
 *      if the counter cannot be inserted the packet is still passed, uncounted)
 *
 * Maps: alaw_to_ulaw8 — ARRAY, 32 x __u64 (key A-law code >> 3, value: the mu-law
 *       codes of A-law codes 8k..8k+7 in bytes 0..7);
 *       rtp_streams_nfp — HASH, key __be32 SSRC, value struct rtp_stats
 *       {__u64 packets; __u64 bytes}.
 * Helpers: bpf_map_lookup_elem, bpf_map_update_elem. Atomics: add (non-fetching, 64-bit).
 */
#define TRANSCODER_NFP
#include "xdp_transcoder.c"
