/*
 * vlan_acl_switch.p4 -- a VLAN-aware L2 switch with a per-VLAN ACL and port statistics.
 *
 * Parses up to two stacked 802.1Q tags into a header stack, maps (ingress port, outer VLAN) to a
 * forwarding VLAN, looks the destination MAC up in an exact-match table and drops frames the ACL
 * denies by priority class. Counts frames per ingress port in a register. Exercises header stacks,
 * serializable enums, casts, slices, `switch` on action_run and `.hit`.
 */
#include <xdp.p4>

typedef bit<48> mac_addr_t;

enum bit<16> ether_type_t {
    VLAN = 0x8100,
    QINQ = 0x88a8,
    IPV4 = 0x0800
}

header ethernet_t {
    mac_addr_t   dst_addr;
    mac_addr_t   src_addr;
    ether_type_t ether_type;
}

header vlan_t {
    bit<3>       pcp;
    bit<1>       dei;
    bit<12>      vid;
    ether_type_t ether_type;
}

struct headers_t {
    ethernet_t ethernet;
    vlan_t[2]  vlan;
}

struct metadata_t {
    bit<12> vid;
    bit<3>  pcp;
}

parser VlanParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ether_type_t.VLAN: parse_vlan;
            ether_type_t.QINQ: parse_vlan;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan.next);
        transition select(hdr.vlan.last.ether_type) {
            ether_type_t.VLAN: parse_vlan;
            default: accept;
        }
    }
}

control VlanIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    register<bit<32>>(64) port_frames;

    action set_vlan(bit<12> vid) {
        meta.vid = vid;
    }

    action forward(bit<32> port) {
        std.egress_port = port;
    }

    action flood() {
        std.egress_port = std.ingress_port;
    }

    action deny() {
        mark_to_drop(std);
    }

    table port_vlan {
        key = {
            std.ingress_port: exact;
            meta.vid: exact;
        }
        actions = {
            set_vlan;
        }
        size = 4096;
    }

    table mac_table {
        key = {
            meta.vid: exact;
            hdr.ethernet.dst_addr: exact;
        }
        actions = {
            forward;
            flood;
        }
        default_action = flood();
    }

    table acl {
        key = {
            meta.vid: ternary;
            meta.pcp: ternary;
        }
        actions = {
            deny;
        }
        const entries = {
            (12w0 &&& 0xf00, 7): deny();
        }
    }

    apply {
        bit<32> frames;
        bit<32> slot = std.ingress_port & 63;
        port_frames.read(frames, slot);
        port_frames.write(slot, frames + 1);

        if (hdr.vlan[0].isValid()) {
            meta.vid = hdr.vlan[0].vid;
            meta.pcp = hdr.vlan[0].pcp;
        } else {
            meta.vid = 1;
        }
        if (!port_vlan.apply().hit) {
            mark_to_drop(std);
            return;
        }
        if (acl.apply().hit) {
            return;
        }
        switch (mac_table.apply().action_run) {
            flood: {
                hdr.ethernet.dst_addr = (mac_addr_t) 0xffffffffffff;
            }
            forward: {
                // Keep the priority, rewrite the tag to the forwarding VLAN.
                hdr.vlan[0].vid = meta.vid;
                hdr.vlan[0].pcp = (bit<3>) ((bit<8>) meta.pcp >> 1)[2:0];
            }
        }
    }
}

control VlanDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr);
    }
}

XdpPipeline(VlanParser(), VlanIngress(), VlanDeparser()) main;
