/*
 * ipip_tunnel.p4 -- an IPv4-in-IPv4 (IP protocol 4, RFC 2003) tunnel endpoint.
 *
 * Encapsulates: a plain IPv4 packet whose destination is in `tunnel_map` (exact) gets a new outer
 * IPv4 header in front of its own (`encap(outer src, outer dst, port)`: version 4, ihl 5, TTL 64,
 * protocol 4, total length = the inner one + 20, header checksum computed) and goes out of the
 * given port. Decapsulates: an IP-in-IP packet addressed to one of our endpoints
 * (`tunnel_endpoints`, exact on the outer destination) loses the outer header and is forwarded by
 * its inner destination (`inner_routes`, lpm; a miss hands the decapsulated packet to the
 * kernel). Everything else passes to the kernel untouched. The parser verifies the first IPv4
 * header's checksum (a bad one drops the packet).
 *
 * Headers: `ipv4` is the outermost IPv4 header, `inner` the one an IP-in-IP packet carries after
 * it. Encapsulating copies `ipv4` into `inner` (a whole-header assignment, which makes `inner`
 * valid) and rewrites `ipv4` as the new outer header; decapsulating makes `ipv4` invalid. The
 * deparser emits Ethernet, ipv4, inner, each if valid, so the packet grows or shrinks by 20
 * bytes (bpf_xdp_adjust_head in the compiled program). Two IPv4 instances rather than three keep
 * the compiled program's state within the 512-byte BPF stack.
 *
 * Paper parameters: alpha = 3 (Ethernet, IPv4, inner IPv4), beta = 2 (ipv4 rewritten or made
 * invalid, inner filled), gamma = 2 (three tables, less the forwarding one); implicit actions
 * (every header change is in a table's action).
 */
#include <xdp.p4>

typedef bit<48> mac_addr_t;
typedef bit<32> ip4_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  PROTO_IPIP = 4;

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
    ipv4_t     inner;
}

struct metadata_t {
}

parser TunnelParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
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
        verify_checksum(true,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum);
        transition select(hdr.ipv4.protocol) {
            PROTO_IPIP: parse_inner;
            default: accept;
        }
    }

    state parse_inner {
        packet.extract(hdr.inner);
        transition accept;
    }
}

control TunnelIngress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    action encap(ip4_addr_t src, ip4_addr_t dst, bit<32> port) {
        hdr.inner = hdr.ipv4;
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.total_len = hdr.inner.total_len + 20;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = 0;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.protocol = PROTO_IPIP;
        hdr.ipv4.src_addr = src;
        hdr.ipv4.dst_addr = dst;
        update_checksum(true,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum);
        std.egress_port = port;
    }

    action decap() {
        hdr.ipv4.setInvalid();
    }

    action forward(bit<32> port) {
        std.egress_port = port;
    }

    table tunnel_map {
        key = {
            hdr.ipv4.dst_addr: exact;
        }
        actions = {
            encap;
        }
        size = 256;
    }

    table tunnel_endpoints {
        key = {
            hdr.ipv4.dst_addr: exact;
        }
        actions = {
            decap;
        }
        size = 16;
    }

    table inner_routes {
        key = {
            hdr.inner.dst_addr: lpm;
        }
        actions = {
            forward;
        }
        size = 1024;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            if (hdr.inner.isValid()) {
                if (tunnel_endpoints.apply().hit) {
                    inner_routes.apply();
                }
            } else {
                tunnel_map.apply();
            }
        }
    }
}

control TunnelDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.inner);
    }
}

XdpPipeline(TunnelParser(), TunnelIngress(), TunnelDeparser()) main;
