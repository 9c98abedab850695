/*
 * flow_counter.p4 -- a stateful per-source counter with a limit (a simple rate limiter).
 *
 * Parses Ethernet and IPv4. Every IPv4 packet is counted in a register bucket chosen by the low
 * byte of its source address; once a bucket has seen as many packets as the limit for the
 * packet's protocol (a table: exact on the protocol, default 4), further packets of that bucket
 * are dropped. Allowed packets go out of port 2 with their TTL decremented; everything else
 * passes to the host. A counter keeps the packets dropped per bucket.
 * Paper parameters: alpha = 2, beta = 1 (IPv4, explicitly), gamma = 0.
 */
#include <xdp.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct metadata_t {
    bit<32> bucket;
    bit<32> limit;
}

parser CounterParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control CounterIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std) {
    register<bit<32>>(256) seen;
    counter(256) dropped;

    action set_limit(bit<32> limit) {
        meta.limit = limit;
    }

    table limits {
        key = {
            hdr.ipv4.protocol: exact;
        }
        actions = {
            set_limit;
        }
        size = 16;
        default_action = set_limit(4);
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            return;
        }
        limits.apply();
        meta.bucket = (bit<32>) hdr.ipv4.src_addr[7:0];
        bit<32> count;
        seen.read(count, meta.bucket);
        if (count >= meta.limit) {
            dropped.count(meta.bucket);
            mark_to_drop(std);
            return;
        }
        seen.write(meta.bucket, count + 1);
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        std.egress_port = 2;
    }
}

control CounterDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

XdpPipeline(CounterParser(), CounterIngress(), CounterDeparser()) main;
