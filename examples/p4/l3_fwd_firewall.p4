/*
 * l3_fwd_firewall.p4 -- IPv4 forwarding plus a UDP firewall (paper 001, Sec. V-E
 * "L3_forwarding + Firewall").
 *
 * As l3_fwd.p4 (TTL decrement and IPv4 checksum update on forwarding), and also parses UDP and
 * checks every IPv4 packet against a 5-tuple ACL before forwarding: the ACL matches source and
 * destination addresses ternary, the protocol exactly and both ports ternary, and its only action
 * drops. Paper parameters: alpha = 3 (Ethernet, IPv4, UDP),
 * beta = 2 (Ethernet, IPv4), gamma = 1 (the ACL beyond the forwarding table); implicit actions.
 * Each ACL hit also counts in a per-rule counter.
 */
#include <xdp.p4>

typedef bit<48> mac_addr_t;
typedef bit<32> ip4_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IPPROTO_UDP = 17;

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

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
}

struct metadata_t {
    bit<16> l4_src_port;
    bit<16> l4_dst_port;
}

parser FwParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
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
        verify(hdr.ipv4.version == 4, error.HeaderTooShort);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IPPROTO_UDP): parse_udp;
            (_, _, _): accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        meta.l4_src_port = hdr.udp.src_port;
        meta.l4_dst_port = hdr.udp.dst_port;
        transition accept;
    }
}

control FwIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    counter(64) acl_hits;

    action drop() {
        mark_to_drop(std);
    }

    action deny(bit<32> rule) {
        acl_hits.count(rule);
        mark_to_drop(std);
    }

    action allow() {
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

    table acl {
        key = {
            hdr.ipv4.src_addr: ternary;
            hdr.ipv4.dst_addr: ternary;
            hdr.ipv4.protocol: exact;
            meta.l4_src_port:  ternary;
            meta.l4_dst_port:  ternary;
        }
        actions = {
            deny;
            allow;
        }
        size = 256;
        default_action = allow();
        const entries = {
            (_, _, IPPROTO_UDP, _, 16w53 &&& 0xffff): deny(0);
            (0x0a000000 &&& 0xff000000, _, IPPROTO_UDP, _, _): deny(1);
        }
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
        if (!hdr.ipv4.isValid()) {
            return;
        }
        if (hdr.ipv4.ttl <= 1) {
            drop();
            return;
        }
        switch (acl.apply().action_run) {
            deny: {
                return;
            }
            default: {
                ipv4_lpm.apply();
            }
        }
    }
}

control FwDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
    }
}

XdpPipeline(FwParser(), FwIngress(), FwDeparser()) main;
