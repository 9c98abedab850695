#!/usr/bin/env python3
"""Writes examples/p4/grid/: P4 programs covering paper 001's experiment grid (§V).

- Table I: cases A0-A1, B0-B3, C0-C7 (1 to 3 parsed headers, every combination of modified
  ones), each with explicit actions (assignments in the ingress control's apply) and with implicit
  ones (the same assignments in the forwarding table's action): case_<id>_<actions>.p4.
- Tables (§V-D): the B3 implicit pipeline with 0 to 10 tables added beyond the forwarding table:
  tables_<gamma>.p4.
- Operations (§V-A/B): the B3 explicit pipeline with 0 to 25 binary (xor) or arithmetic (add)
  operations on a header field: ops_<binary|arithmetic>_<n>.p4.

Every program parses Ethernet, then IPv4 if the EtherType says so, then UDP if the protocol says
so, as far as its case goes; forwards with one exact-match table on the ingress port, holding one
rule (paper 001, §IV: "a single table responsible for modifying the egress port while matching on
the ingress port based on a fixed rule"); and emits what it parsed. File names carry the parameters the programs have, which
crates/p4/tests/grid.rs checks against linerate's analysis.

Run from anywhere: python3 examples/p4/gen_grid.py
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "grid")

HEADERS = ["ethernet", "ipv4", "udp"]

# Table I: parsed headers and the modified ones, by case.
CASES = {
    "A0": (1, []), "A1": (1, ["ethernet"]),
    "B0": (2, []), "B1": (2, ["ethernet"]), "B2": (2, ["ipv4"]), "B3": (2, ["ethernet", "ipv4"]),
    "C0": (3, []), "C1": (3, ["ethernet"]), "C2": (3, ["ipv4"]), "C3": (3, ["udp"]),
    "C4": (3, ["ethernet", "ipv4"]), "C5": (3, ["ethernet", "udp"]), "C6": (3, ["ipv4", "udp"]),
    "C7": (3, ["ethernet", "ipv4", "udp"]),
}

# One field each modified header gets (to a constant: no operation).
MODIFY = {
    "ethernet": "hdr.ethernet.src_addr = 48w0x020000000001;",
    "ipv4": "hdr.ipv4.diffserv = 8w0x2e;",
    "udp": "hdr.udp.checksum = 16w0;",
}

PRELUDE = """#include <xdp.p4>

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
}
"""


def parser(parsed):
    states = ["""    state start {
        packet.extract(hdr.ethernet);
""" + ("""        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
""" if parsed > 1 else """        transition accept;
    }
""")]
    if parsed > 1:
        states.append("""    state parse_ipv4 {
        packet.extract(hdr.ipv4);
""" + ("""        transition select(hdr.ipv4.protocol) {
            17: parse_udp;
            default: accept;
        }
    }
""" if parsed > 2 else """        transition accept;
    }
"""))
    if parsed > 2:
        states.append("""    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
""")
    return ("parser GridParser(packet_in packet, out headers_t hdr, inout metadata_t meta,\n"
            "                  inout standard_metadata_t std) {\n" + "\n".join(states) + "}\n")


def ingress(modified, implicit, added_tables=0, ops=None):
    """The ingress control: the forwarding table, `added_tables` more, and the modifications
    (in the forwarding action if implicit, in apply otherwise); `ops` = (kind, n) adds n
    operations on the IPv4 TTL in apply."""
    mods = [MODIFY[h] for h in modified]
    forward_body = ["std.egress_port = port;"] + (mods if implicit else [])
    lines = ["control GridIngress(inout headers_t hdr, inout metadata_t meta,",
             "                    inout standard_metadata_t std) {",
             "    action drop() {",
             "        mark_to_drop(std);",
             "    }",
             "",
             "    action forward(bit<32> port) {"]
    lines += ["        " + m for m in forward_body]
    lines += ["    }",
              "",
              "    action nop() {",
              "    }",
              "",
              "    table forwarding {",
              "        key = {",
              "            std.ingress_port: exact;",
              "        }",
              "        actions = {",
              "            forward;",
              "            drop;",
              "        }",
              "        size = 1024;",
              "        default_action = drop();",
              "    }"]
    for t in range(added_tables):
        lines += ["",
                  f"    table extra_{t} {{",
                  "        key = {",
                  "            hdr.ethernet.src_addr: exact;",
                  "        }",
                  "        actions = {",
                  "            nop;",
                  "        }",
                  "        size = 64;",
                  "        default_action = nop();",
                  "    }"]
    apply = ["        forwarding.apply();"]
    apply += [f"        extra_{t}.apply();" for t in range(added_tables)]
    if not implicit:
        apply += ["        " + m for m in mods]
    if ops:
        kind, n = ops
        if n > 0:
            symbol = "^" if kind == "binary" else "+"
            terms = " ".join(f"{symbol} 8w{k + 1}" for k in range(n))
            apply += ["        if (hdr.ipv4.isValid()) {",
                      f"            hdr.ipv4.ttl = hdr.ipv4.ttl {terms};",
                      "        }"]
    lines += ["", "    apply {"] + apply + ["    }", "}"]
    return "\n".join(lines) + "\n"


def deparser(parsed):
    emits = "\n".join(f"        packet.emit(hdr.{h});" for h in HEADERS[:parsed])
    return ("control GridDeparser(packet_out packet, in headers_t hdr) {\n"
            "    apply {\n" + emits + "\n    }\n}\n")


def program(title, parsed, body):
    return ("/* " + title + "\n * Generated by gen_grid.py (paper 001's experiment grid); do not edit. */\n"
            + PRELUDE + "\n" + parser(parsed) + "\n" + body + "\n" + deparser(parsed)
            + "\nXdpPipeline(GridParser(), GridIngress(), GridDeparser()) main;\n")


def write(name, text):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


def main():
    os.makedirs(OUT, exist_ok=True)
    for case, (parsed, modified) in CASES.items():
        for actions in ("explicit", "implicit"):
            title = (f"Case {case} of Table I: {parsed} parsed, modified "
                     f"{', '.join(modified) or 'none'}, {actions} actions.")
            write(f"case_{case}_{actions}.p4",
                  program(title, parsed, ingress(modified, actions == "implicit")))
    for gamma in range(11):
        title = f"Case B3, implicit, with {gamma} tables beyond the forwarding table."
        write(f"tables_{gamma}.p4",
              program(title, 2, ingress(["ethernet", "ipv4"], True, added_tables=gamma)))
    for kind in ("binary", "arithmetic"):
        for n in range(0, 26, 5):
            title = f"Case B3, explicit, with {n} {kind} operations on the IPv4 TTL."
            write(f"ops_{kind}_{n}.p4",
                  program(title, 2, ingress(["ethernet", "ipv4"], False, ops=(kind, n))))


if __name__ == "__main__":
    main()
