/* xdp_dns_nfp.c — authoritative DNS A-record responder, NFP-offloadable.
 *
 * The responder of xdp_dns.c (see there): Ethernet / IPv4 (no options) / UDP
 * to port 53 / a DNS query with exactly one question and no other records;
 * the question name (wire format, up to MAX_NAME bytes including the root
 * label) is copied into a zero-padded 64-byte key, its label structure is
 * checked, and on a hit in dns_a_records for QTYPE A / QCLASS IN the query is
 * turned into a response in place (answer RR: name pointer 0xC00C, TYPE A,
 * CLASS IN, TTL 300, RDLENGTH 4, address; MACs, IPs and ports swapped,
 * QR/AA/RA set, RD copied, ANCOUNT 1, lengths fixed, IP checksum recomputed,
 * TTL 64, UDP checksum 0) and sent back with XDP_TX.
 *
 * Differences from xdp_dns.c, because of what the kernel's NFP JIT offloads:
 *   - no bpf_printk on the bad-label branch (the NFP has no trace_printk);
 *   - the name is copied into the key four bytes at a time by a loop whose
 *     stack offsets the verifier knows exactly in every iteration (all equal
 *     modulo 4), instead of byte stores at a packet-dependent offset: the NFP
 *     verifier refuses stack accesses at a variable offset ("variable ptr
 *     stack access", nfp_bpf_check_stack_access). The word holding the root
 *     label is masked after it; a word that crosses the packet end means the
 *     name, QTYPE or QCLASS is truncated (the four bytes after the root label
 *     must be present anyway), so the verdicts are those of a byte copy;
 *   - the label walk reads the name from the packet, not from the stack copy
 *     (same bytes up to the root label; a walk that passes the root label is
 *     refused either way);
 *   - the response must fit in the received frame: on the NFP,
 *     bpf_xdp_adjust_tail can only shrink a packet (jit.c adjust_tail returns
 *     -EINVAL unless the new length is smaller), so a query whose answer would
 *     grow the frame is left to the host (XDP_PASS), a frame with exactly the
 *     room needed is answered without calling the helper, and longer frames
 *     are trimmed.
 *
 * Branches:
 *   not Ethernet+IPv4, IHL != 5, fragment, not UDP, dport != 53 -> XDP_PASS
 *   UDP or DNS header truncated                                 -> XDP_PASS
 *   response, opcode != QUERY, QDCOUNT != 1, AN/NS/ARCOUNT != 0  -> XDP_PASS
 *   name runs past the packet end, or longer than MAX_NAME      -> XDP_PASS
 *   name contains a compression pointer / bad label             -> XDP_PASS
 *   QTYPE/QCLASS missing or not A/IN                            -> XDP_PASS
 *   name not in dns_a_records                                   -> XDP_PASS
 *   hit, frame too short for the answer (would have to grow)    -> XDP_PASS
 *   hit, frame exactly long enough                              -> answer built, XDP_TX
 *   hit, longer frame: bpf_xdp_adjust_tail shrinks it           -> answer built, XDP_TX
 *   bpf_xdp_adjust_tail fails                                   -> XDP_PASS
 *
 * Maps: dns_a_records — HASH, key struct dns_name {char name[64]} (wire-format
 *       name, zero padded), value __be32 IPv4 address.
 * Helpers: bpf_map_lookup_elem, bpf_xdp_adjust_tail (shrink only).
 */
#define DNS_NFP
#include "xdp_dns.c"
