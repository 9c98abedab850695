/*
 * xdp.p4 -- linerate's P4-16 architecture for the Linux XDP hook.
 *
 * A program includes this file with `#include <xdp.p4>` (linerate resolves it to this file; it
 * plays the roles of both core.p4 and an architecture file) and instantiates
 *
 *     XdpPipeline(MyParser(), MyIngress(), MyDeparser()) main;
 *
 * The pipeline, once per packet:
 *   1. standard_metadata_t is initialised: ingress_port = the receiving interface's ifindex,
 *      egress_port = 0 (no port chosen), drop = false. User metadata M starts zeroed.
 *   2. The parser runs from state `start`. Reaching `reject` (an explicit transition, a failed
 *      verify(), or a packet too short for an extract) drops the packet: XDP_DROP. Reaching
 *      `accept` continues.
 *   3. The ingress control runs.
 *   4. The deparser runs: packet_out.emit() writes each valid header, in order, in front of the
 *      unparsed payload; headers made valid or invalid by the program grow or shrink the packet.
 *   5. The outcome becomes the XDP action, checked in this order:
 *        drop == true                        -> XDP_DROP
 *        egress_port == 0 (never set)        -> XDP_PASS      (to the kernel's network stack)
 *        egress_port == ingress_port         -> XDP_TX        (back out of the receiving port)
 *        egress_port == any other ifindex    -> XDP_REDIRECT  (bpf_redirect(egress_port, 0))
 *
 * Ports are Linux interface indices, which are never 0; that is why 0 means "not set".
 * Everything below is a declaration; linerate's front end knows the meaning of each extern.
 */

/* Errors the parser can signal (core). */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ChecksumError   /* xdp.p4: a failed verify_checksum */
}

/* Match kinds a table key may use (core). exact -> BPF hash map, lpm -> BPF LPM trie,
 * ternary -> value/mask entries searched in priority order. */
match_kind {
    exact,
    ternary,
    lpm
}

/* The packet as the parser reads it. extract copies the next sizeof(hdr) bytes into hdr and
 * makes it valid; with too few bytes left the parser goes to reject (PacketTooShort). */
extern packet_in {
    void extract<T>(out T hdr);
    void advance(in bit<32> sizeInBits);
}

/* The packet as the deparser writes it. emit writes hdr if it is valid (a struct of headers or a
 * header stack: each valid member in order) and does nothing otherwise. */
extern packet_out {
    void emit<T>(in T hdr);
}

/* In a parser: if check is false, go to reject with the given error. */
extern void verify(in bool check, in error toSignal);

/* Internet checksums (RFC 1071), modelled on v1model's externs of the same names with the
 * algorithm fixed to csum16. `data` is a list expression of fixed-width values,
 * `{ hdr.ipv4.version, hdr.ipv4.ihl, ... }`: its bits are the elements' bits concatenated in
 * order (most significant first, as on the wire), zero-padded at the end to a multiple of 16.
 * The checksum of data is the one's complement of the one's-complement sum of its 16-bit words.
 *
 * update_checksum (in a control): if condition, checksum = the checksum of data. Put the
 * header's checksum field in `checksum` and leave it out of `data`, as in v1model.
 *
 * verify_checksum (in the parser): if condition and the checksum of data differs from
 * `checksum`, the parser goes to reject with error.ChecksumError (the packet is dropped).
 * The comparison is v1model's (computed == given); where v1model only sets
 * standard_metadata.checksum_error and carries on, this architecture rejects. */
extern void update_checksum<T>(in bool condition, in T data, inout bit<16> checksum);
extern void verify_checksum<T>(in bool condition, in T data, in bit<16> checksum);

/* Per-packet metadata the architecture provides. */
struct standard_metadata_t {
    bit<32> ingress_port;   /* ifindex the packet arrived on (read only by convention) */
    bit<32> egress_port;    /* ifindex to send to; 0 = not set (XDP_PASS) */
    bool    drop;           /* true = XDP_DROP, whatever egress_port says */
}

/* Sets drop to true. */
extern void mark_to_drop(inout standard_metadata_t std);

/* An array of `size` packet and byte counters (a BPF per-CPU array map); count(i) adds one packet
 * and the packet's length to counter i. An index >= size is ignored. */
extern counter {
    counter(bit<32> size);
    void count(in bit<32> index);
}

/* An array of `size` values of type T (a BPF array map), zero initially. An index >= size
 * reads 0 and writes nothing. */
extern register<T> {
    register(bit<32> size);
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}

/* The three programmable blocks. H is the user's struct of headers, M the user's metadata. */
parser XdpParser<H, M>(packet_in packet, out H hdr, inout M meta,
                       inout standard_metadata_t std);
control XdpIngress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t std);
control XdpDeparser<H>(packet_out packet, in H hdr);

package XdpPipeline<H, M>(XdpParser<H, M> p, XdpIngress<H, M> ig, XdpDeparser<H> dp);
