/*
 * l3_fwd.p4 -- IPv4 forwarding (paper 001, Sec. V-E "L3_forwarding").
 *
 * Parses Ethernet and IPv4, looks the destination address up in an LPM table and, on a hit,
 * sets the egress port and both MAC addresses, decrements the TTL and recomputes the IPv4 header
 * checksum, all inside the table's action (implicit actions in the paper's terms). Paper parameters: alpha = 2 parsed headers,
 * beta = 2 modified headers (Ethernet, IPv4), gamma = 0 tables beyond the forwarding table.
 * A miss, a non-IPv4 frame or an expired TTL goes to the kernel (XDP_PASS) or is dropped.
 */
#include <xdp.p4>

typedef bit<48> mac_addr_t;
typedef bit<32> ip4_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_t {
    bit<4>     version;
    bit<4>     ihl;
    bit<8>     diffserv;
    bit<16>    total_len;
    bit<16>    identification;
    bit<3>     flags;
    bit<13>    frag_offset;
    bit<8>     ttl;
    bit<8>     protocol;
    bit<16>    hdr_checksum;
    ip4_addr_t src_addr;
    ip4_addr_t dst_addr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct metadata_t {
}

parser L3Parser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t std) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control L3Ingress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    action drop() {
        mark_to_drop(std);
    }

    action ipv4_forward(mac_addr_t src_mac, mac_addr_t dst_mac, bit<32> port) {
        std.egress_port = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        // A router rewrites the header checksum after changing the TTL.
        update_checksum(true,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum);
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dst_addr: lpm;
        }
        actions = {
            ipv4_forward;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            ipv4_lpm.apply();
        }
    }
}

control L3Deparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

XdpPipeline(L3Parser(), L3Ingress(), L3Deparser()) main;
