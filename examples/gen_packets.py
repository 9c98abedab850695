#!/usr/bin/env python3
"""Generate the test inputs of the linerate example programs.

For every example object NAME.o this writes

  NAME.packets    one packet per line in hex; '#' lines are comments. The
                  header names the program to run; the comment before each
                  packet says which branch it takes and the return code it is
                  expected to produce ("# expect XDP_TX: ...").
  NAME.maps.json  (only where hit paths need map contents) initial map
                  contents: {"<map>": [{"key": hex, "value": hex}, ...]}, keys
                  and values as the raw little-endian bytes the map stores.
                  For per-CPU maps the value is one CPU's value (to be
                  replicated for every possible CPU).

Expectations assume every packet runs against freshly loaded maps holding
exactly the contents of NAME.maps.json (map updates made by one packet are not
seen by the next) and the object's default global data.

Only the standard library is used. Run: python3 gen_packets.py [outdir]
"""
import json
import os
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))

XDP = {0: "XDP_ABORTED", 1: "XDP_DROP", 2: "XDP_PASS", 3: "XDP_TX", 4: "XDP_REDIRECT"}
ABORTED, DROP, PASS, TX, REDIRECT = "XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT"

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF

# ---------------------------------------------------------------- builders


def mac(s):
    return bytes.fromhex(s.replace(":", ""))


def ip4(s):
    return bytes(int(x) for x in s.split("."))


def ip4_int(s):
    return struct.unpack("!I", ip4(s))[0]


def ip6(s):
    # minimal RFC 4291 text parser (supports one '::')
    if "::" in s:
        head, tail = s.split("::")
        h = [x for x in head.split(":") if x]
        t = [x for x in tail.split(":") if x]
        groups = h + ["0"] * (8 - len(h) - len(t)) + t
    else:
        groups = s.split(":")
    return b"".join(struct.pack("!H", int(g, 16)) for g in groups)


MAC_CLIENT = mac("02:00:00:00:00:01")
MAC_SELF = mac("02:00:00:00:00:02")
MAC_OTHER = mac("02:00:00:00:00:03")

ETH_IP, ETH_IP6, ETH_ARP, ETH_VLAN, ETH_QINQ = 0x0800, 0x86DD, 0x0806, 0x8100, 0x88A8


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def eth(etype, payload=b"", dst=MAC_SELF, src=MAC_CLIENT):
    return dst + src + struct.pack("!H", etype) + payload


def vlan(vid, inner, payload=b"", pcp=0, dst=MAC_SELF, src=MAC_CLIENT, outer=ETH_VLAN):
    return dst + src + struct.pack("!HHH", outer, (pcp << 13) | vid, inner) + payload


def ipv4(src, dst, proto, payload=b"", ttl=64, ident=0, frag=0x4000, tos=0, options=b"",
         tot_len=None, ihl=None, check=None):
    if ihl is None:
        ihl = 5 + len(options) // 4
    if tot_len is None:
        tot_len = 20 + len(options) + len(payload)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, tot_len, ident, frag, ttl, proto, 0,
                      ip4(src), ip4(dst)) + options
    c = csum(hdr) if check is None else check
    hdr = hdr[:10] + struct.pack("!H", c) + hdr[12:]
    return hdr + payload


def udp4(src, dst, sport, dport, payload=b"", with_csum=True, ttl=64, ident=0, options=b"",
         frag=0x4000):
    length = 8 + len(payload)
    u = struct.pack("!HHHH", sport, dport, length, 0) + payload
    if with_csum:
        pseudo = ip4(src) + ip4(dst) + struct.pack("!BBH", 0, 17, length)
        c = csum(pseudo + u) or 0xFFFF
        u = u[:6] + struct.pack("!H", c) + u[8:]
    return ipv4(src, dst, 17, u, ttl=ttl, ident=ident, options=options, frag=frag)


TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 1, 2, 4, 8, 16


def tcp4(src, dst, sport, dport, flags, payload=b"", seq=1000, ack=0, ttl=64, frag=0x4000,
         options=b""):
    t = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    pseudo = ip4(src) + ip4(dst) + struct.pack("!BBH", 0, 6, len(t))
    c = csum(pseudo + t)
    t = t[:16] + struct.pack("!H", c) + t[18:]
    return ipv4(src, dst, 6, t, ttl=ttl, frag=frag, options=options)


def icmp4(src, dst, ident=1, seq=1, payload=b"ping", ip_id=0):
    m = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + payload
    m = m[:2] + struct.pack("!H", csum(m)) + m[4:]
    return ipv4(src, dst, 1, m, ident=ip_id)


def ipv6(src, dst, nh, payload=b"", hlim=64):
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, hlim, ip6(src), ip6(dst)) + payload


def udp6_payload(src, dst, sport, dport, payload=b"", with_csum=True, ext=b"", first_nh=17):
    """Returns (nexthdr, bytes after the IPv6 header) for UDP behind extension headers `ext`."""
    length = 8 + len(payload)
    u = struct.pack("!HHHH", sport, dport, length, 0) + payload
    if with_csum:
        pseudo = ip6(src) + ip6(dst) + struct.pack("!IxxxB", length, 17)
        c = csum(pseudo + u) or 0xFFFF
        u = u[:6] + struct.pack("!H", c) + u[8:]
    return ext + u


def ext_opt(nh, units=0):
    """Hop-by-hop / destination options header: (units + 1) * 8 bytes, PadN filled."""
    body = bytes([nh, units]) + bytes([1, (units + 1) * 8 - 4]) + bytes((units + 1) * 8 - 4)
    return body


def ext_routing(nh, units=0):
    return bytes([nh, units, 0, 0]) + bytes((units + 1) * 8 - 4)


def ext_frag(nh, offset=0, more=0, ident=0x1234):
    return struct.pack("!BBHI", nh, 0, (offset << 3) | more, ident)


def arp():
    return eth(ETH_ARP, struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, MAC_CLIENT,
                                    ip4("192.0.2.1"), bytes(6), ip4("192.0.2.2")))


def pad(b, n):
    return b + bytes(max(0, n - len(b)))


# ---------------------------------------------------------------- output


def write(name, program, packets, maps=None, notes=()):
    lines = [f"# {name}.packets: generated by gen_packets.py, do not edit.",
             f"# program: {program}",
             "# One packet per line (hex). The comment before each packet gives the return",
             "# code expected when the packet runs against fresh maps loaded from",
             f"# {name}.maps.json (if present)." if maps else "# (this example needs no initial map contents)."]
    lines += [f"# {n}" for n in notes]
    lines.append("# No frame is shorter than 14 bytes: BPF_PROG_TEST_RUN rejects those (EINVAL),")
    lines.append("# so the 'shorter than an Ethernet header' branches have no test packet.")
    for i, (expect, desc, pkt) in enumerate(packets, 1):
        assert len(pkt) >= 14, (name, desc)
        lines.append(f"# [{i}] expect {expect}: {desc}")
        lines.append(pkt.hex())
    with open(os.path.join(OUT, name + ".packets"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if maps:
        with open(os.path.join(OUT, name + ".maps.json"), "w") as f:
            json.dump({m: [{"key": k.hex(), "value": v.hex()} for k, v in entries]
                       for m, entries in maps.items()}, f, indent=1)
            f.write("\n")


u32 = lambda v: struct.pack("<I", v & M32)
u64 = lambda v: struct.pack("<Q", v & M64)

# ---------------------------------------------------------------- examples

IPV4_UDP = udp4("192.0.2.1", "192.0.2.2", 1234, 5678, b"hello")
IPV6_UDP = ipv6("2001:db8::1", "2001:db8::2", 17, udp6_payload("2001:db8::1", "2001:db8::2", 1234, 5678, b"hi"))


def gen_filter():
    P = [
        (PASS, "untagged IPv4", eth(ETH_IP, IPV4_UDP)),
        (PASS, "untagged IPv6", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "untagged ARP", arp()),
        (PASS, "untagged IPv4, nothing after the Ethernet header (14 bytes)", eth(ETH_IP)),
        (DROP, "LLDP 0x88CC", eth(0x88CC, bytes(32), dst=mac("01:80:c2:00:00:0e"))),
        (DROP, "EtherType 0x0000", eth(0x0000, bytes(20))),
        (DROP, "802.3 length field 0x002E", eth(0x002E, bytes(46))),
        (PASS, "802.1Q VID 100 + IPv4 (metadata 0x00010064)", vlan(100, ETH_IP, IPV4_UDP)),
        (PASS, "802.1Q VID 4095 PCP 7 + IPv6 (metadata 0x00020fff)", vlan(4095, ETH_IP6, IPV6_UDP, pcp=7)),
        (PASS, "802.1Q VID 1 + ARP (metadata 0x00030001)", vlan(1, ETH_ARP, arp()[14:])),
        (PASS, "802.1ad VID 42 + IPv4 (metadata 0x0001002a)", vlan(42, ETH_IP, IPV4_UDP, outer=ETH_QINQ)),
        (PASS, "802.1Q + IPv4, frame ends right after the tag (18 bytes)", vlan(7, ETH_IP)),
        (DROP, "QinQ: 802.1Q inside 802.1ad (only one tag parsed)", vlan(10, ETH_VLAN, struct.pack("!HH", 20, ETH_IP) + IPV4_UDP, outer=ETH_QINQ)),
        (DROP, "802.1Q + LLDP", vlan(5, 0x88CC, bytes(30))),
        (DROP, "802.1Q tag truncated (16 bytes)", vlan(5, ETH_IP)[:16]),
        (DROP, "802.1Q tag truncated (17 bytes)", vlan(5, ETH_IP)[:17]),
    ]
    write("xdp_filter", "xdp_filter", P, notes=[
        "Passed tagged frames get 4 bytes of XDP metadata in front of the packet."])


def gen_reflector():
    P = [
        (TX, "IPv4 UDP: MACs, IPs and ports swapped", eth(ETH_IP, IPV4_UDP)),
        (TX, "IPv4 TCP SYN: MACs, IPs and ports swapped", eth(ETH_IP, tcp4("198.51.100.1", "203.0.113.9", 40000, 80, TCP_SYN))),
        (TX, "IPv4 ICMP: MACs and IPs swapped", eth(ETH_IP, icmp4("192.0.2.1", "192.0.2.2"))),
        (TX, "IPv4 UDP with 8 bytes of options (IHL 7)", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 7, 9, b"x", options=bytes([1] * 8)))),
        (TX, "IPv4 UDP, only 3 bytes after the IP header (ports truncated)", eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 17, b"\x00\x07\x00"))),
        (TX, "IPv4 header truncated (10 bytes)", eth(ETH_IP, IPV4_UDP[:10])),
        (TX, "IPv4 with IHL 4 (invalid)", eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 17, bytes(8), ihl=4))),
        (TX, "IPv6 UDP: only MACs swapped", eth(ETH_IP6, IPV6_UDP)),
        (TX, "ARP: only MACs swapped", arp()),
        (TX, "802.1Q-tagged IPv4: only MACs swapped", vlan(3, ETH_IP, IPV4_UDP)),
        (TX, "exactly 14 bytes", eth(0x1234)),
    ]
    write("xdp_reflector", "xdp_reflector", P)


def gen_router():
    nh = {
        "A": mac("0a:00:00:00:00:0a") + mac("0a:00:00:00:00:01"),
        "B": mac("0b:00:00:00:00:0b") + mac("0b:00:00:00:00:01"),
        "C": mac("0c:00:00:00:00:0c") + mac("0c:00:00:00:00:01"),
    }
    routes = [("10.1.0.0", 16, "A"), ("10.1.2.0", 24, "B"), ("192.168.0.0", 16, "C"), ("203.0.113.128", 25, "A")]
    maps = {"routes": [(u32(plen) + ip4(a), nh[h]) for a, plen, h in routes]}

    # a header whose checksum is 0xfeff / 0xffff exercises the end-around carry of
    # ip_decrease_ttl (check >= 0xFFFF in little-endian load order)
    carry = None
    for ident in range(65536):
        p = udp4("10.1.2.77", "10.1.9.9", 1000, 2000, b"carry", ident=ident)
        if p[10:12] in (b"\xfe\xff", b"\xff\xff"):
            carry = p
            break
    P = [
        (TX, "10.1.2.3 matches 10.1.2.0/24 (more specific than /16) -> next hop B", eth(ETH_IP, udp4("198.51.100.1", "10.1.2.3", 5000, 53, b"q"))),
        (TX, "10.1.9.9 matches 10.1.0.0/16 -> next hop A", eth(ETH_IP, tcp4("198.51.100.1", "10.1.9.9", 5000, 80, TCP_SYN))),
        (TX, "192.168.77.1 matches 192.168.0.0/16 -> next hop C", eth(ETH_IP, icmp4("10.9.9.9", "192.168.77.1"))),
        (TX, "203.0.113.200 matches 203.0.113.128/25 -> A", eth(ETH_IP, udp4("10.0.0.1", "203.0.113.200", 1, 2))),
        (PASS, "203.0.113.5: outside the /25 -> no route", eth(ETH_IP, udp4("10.0.0.1", "203.0.113.5", 1, 2))),
        (PASS, "8.8.8.8: no route", eth(ETH_IP, udp4("10.1.2.3", "8.8.8.8", 5000, 53, b"q"))),
        (TX, "TTL 2 -> forwarded with TTL 1", eth(ETH_IP, udp4("198.51.100.1", "10.1.2.3", 1, 2, ttl=2))),
        (TX, "TTL 255", eth(ETH_IP, udp4("198.51.100.1", "10.1.2.3", 1, 2, ttl=255))),
        (DROP, "TTL 1 -> expired", eth(ETH_IP, udp4("198.51.100.1", "10.1.2.3", 1, 2, ttl=1))),
        (DROP, "TTL 0 -> expired", eth(ETH_IP, udp4("198.51.100.1", "10.1.2.3", 1, 2, ttl=0))),
        (TX, "checksum end-around carry case (check field %s)" % (carry[10:12].hex() if carry else "n/a"), eth(ETH_IP, carry)),
        (TX, "IPv4 with options (IHL 6)", eth(ETH_IP, udp4("198.51.100.1", "10.1.2.3", 1, 2, options=bytes([1, 1, 1, 0])))),
        (DROP, "IPv4 header truncated (19 bytes)", eth(ETH_IP, udp4("1.1.1.1", "10.1.2.3", 1, 2)[:19])),
        (DROP, "IHL 3 (invalid)", eth(ETH_IP, ipv4("1.1.1.1", "10.1.2.3", 17, bytes(8), ihl=3))),
        (PASS, "IPv6", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP", arp()),
        (PASS, "802.1Q-tagged IPv4 (not parsed)", vlan(9, ETH_IP, udp4("1.1.1.1", "10.1.2.3", 1, 2))),
    ]
    write("xdp_router", "xdp_router", P, maps)


def fw_key(saddr, daddr, sport, dport, proto):
    s, d = ip4_int(saddr), ip4_int(daddr)
    swap = s > d or (s == d and sport > dport)
    lo, hi = ((d, dport), (s, sport)) if swap else ((s, sport), (d, dport))
    return struct.pack("!II", lo[0], hi[0]) + struct.pack("!HH", lo[1], hi[1]) + bytes([proto, 0, 0, 0])


def gen_firewall():
    est_tcp = ("10.0.0.5", "93.184.216.34", 40000, 443)
    est_udp = ("10.0.0.7", "8.8.8.8", 33000, 53)
    maps = {"fw_conns": [
        (fw_key(*est_tcp, 6), u64(3) + u64(180)),
        (fw_key(*est_udp, 17), u64(1) + u64(74)),
    ]}
    T = lambda s, d, sp, dp, fl: eth(ETH_IP, tcp4(s, d, sp, dp, fl))
    U = lambda s, d, sp, dp: eth(ETH_IP, udp4(s, d, sp, dp, b"data"))
    P = [
        (PASS, "outbound TCP SYN, new connection -> entry created", T("10.0.0.9", "1.1.1.1", 41000, 80, TCP_SYN)),
        (PASS, "outbound TCP SYN on an existing connection", T(*est_tcp, TCP_SYN)),
        (PASS, "outbound TCP ACK, established", T(*est_tcp, TCP_ACK | TCP_PSH)),
        (PASS, "outbound TCP FIN|ACK, established -> entry deleted", T(*est_tcp, TCP_FIN | TCP_ACK)),
        (PASS, "outbound TCP RST, established -> entry deleted", T(*est_tcp, TCP_RST)),
        (DROP, "outbound TCP ACK without a connection", T("10.0.0.9", "1.1.1.1", 41000, 80, TCP_ACK)),
        (DROP, "outbound TCP SYN|ACK without a connection (does not open)", T("10.0.0.9", "1.1.1.1", 41000, 80, TCP_SYN | TCP_ACK)),
        (PASS, "outbound UDP, new flow -> entry created", U("10.0.0.9", "9.9.9.9", 5000, 53)),
        (PASS, "outbound UDP, existing flow (key endpoints swapped: 8.8.8.8 < 10.0.0.7)", U(*est_udp)),
        (PASS, "inbound TCP ACK on an established connection", T("93.184.216.34", "10.0.0.5", 443, 40000, TCP_ACK)),
        (PASS, "inbound TCP RST on an established connection -> entry deleted", T("93.184.216.34", "10.0.0.5", 443, 40000, TCP_RST | TCP_ACK)),
        (DROP, "inbound TCP SYN, no connection", T("203.0.113.66", "10.0.0.5", 55555, 22, TCP_SYN)),
        (DROP, "inbound TCP to a known host, wrong port", T("93.184.216.34", "10.0.0.5", 443, 40001, TCP_ACK)),
        (PASS, "inbound UDP reply on an existing flow", U("8.8.8.8", "10.0.0.7", 53, 33000)),
        (DROP, "inbound UDP, no flow", U("8.8.8.8", "10.0.0.7", 53, 33001)),
        (PASS, "inside -> inside (not inspected)", T("10.0.0.1", "10.0.0.2", 1000, 22, TCP_ACK)),
        (PASS, "outside -> outside transit (not inspected)", U("1.1.1.1", "2.2.2.2", 1, 2)),
        (PASS, "ICMP echo (not TCP/UDP)", eth(ETH_IP, icmp4("10.0.0.5", "1.1.1.1"))),
        (DROP, "first fragment (MF set)", eth(ETH_IP, udp4("10.0.0.9", "9.9.9.9", 5000, 53, b"frag", frag=0x2000))),
        (DROP, "non-first fragment (offset 185)", eth(ETH_IP, ipv4("10.0.0.9", "9.9.9.9", 17, bytes(16), frag=185))),
        (DROP, "TCP header truncated (12 of 20 bytes)", eth(ETH_IP, ipv4("10.0.0.9", "1.1.1.1", 6, bytes(12)))),
        (DROP, "UDP header truncated (4 of 8 bytes)", eth(ETH_IP, ipv4("10.0.0.9", "1.1.1.1", 17, bytes(4)))),
        (DROP, "IPv4 header truncated", eth(ETH_IP, bytes([0x45]) + bytes(10))),
        (DROP, "IHL 2 (invalid)", eth(ETH_IP, ipv4("10.0.0.9", "1.1.1.1", 17, bytes(8), ihl=2))),
        (PASS, "outbound UDP with IP options (IHL 6), new flow", eth(ETH_IP, udp4("10.0.0.9", "9.9.9.9", 5001, 53, b"o", options=bytes([1, 1, 1, 0])))),
        (PASS, "IPv6 (not inspected)", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP (not inspected)", arp()),
    ]
    write("xdp_firewall", "xdp_firewall", P, maps)


def cms_indices(rows, saddr, daddr, sport, dport, proto, cols=512):
    """The counter of each row a flow increments (xdp_cms.c's hash, any power-of-two COLS)."""
    def mix(h, v):
        h ^= v
        h = (h * 0x85EBCA6B) & M32
        h ^= h >> 13
        h = (h * 0xC2B2AE35) & M32
        h ^= h >> 16
        return h
    out = []
    for r in range(rows):
        h = ((r + 1) * 0x9E3779B1) & M32
        for v in (ip4_int(saddr), ip4_int(daddr), (sport << 16) | dport, proto):
            h = mix(h, v)
        out.append(r * cols + (h & (cols - 1)))
    return out


def gen_cms(stem="xdp_cms", program="xdp_cms", notes=(), count_only=False):
    heavy = ("10.0.0.1", "10.0.0.2", 1111, 80, 6)
    partial = ("10.0.0.3", "10.0.0.4", 2222, 443, 17)
    warm = ("10.0.0.5", "10.0.0.6", 3333, 53, 17)
    for rows in (2, 5, 10, 20):
        counts = {}
        for i in cms_indices(rows, *heavy):
            counts[i] = 15            # +1 -> 16 = threshold in every row
        counts[cms_indices(rows, *partial)[0]] = 1000  # only row 0 is hot
        for i in cms_indices(rows, *warm):
            counts.setdefault(i, 0)
            counts[i] = max(counts[i], 14)  # +1 -> 15, just below threshold
        maps = {"cms": [(u32(i), u32(v)) for i, v in sorted(counts.items())]}
        if count_only:
            counted = [
                (PASS, "heavy flow (every row at 15): counted, never dropped", eth(ETH_IP, tcp4(*heavy[:4], TCP_ACK))),
                (PASS, "flow hot in row 0 only: counted", eth(ETH_IP, udp4(*partial[:4], b"p"))),
                (PASS, "warm flow (every row at 14): counted", eth(ETH_IP, udp4(*warm[:4], b"w"))),
            ]
        else:
            counted = [
                (DROP, "heavy flow: every row at 15 -> estimate 16 >= threshold", eth(ETH_IP, tcp4(*heavy[:4], TCP_ACK))),
                (PASS, "flow hot in row 0 only -> min over rows stays low", eth(ETH_IP, udp4(*partial[:4], b"p"))),
                (PASS, "warm flow: every row at 14 -> estimate 15 < threshold", eth(ETH_IP, udp4(*warm[:4], b"w"))),
            ]
        P = counted + [
            (PASS, "fresh UDP flow", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 5000, 6000, b"x"))),
            (PASS, "fresh TCP flow", eth(ETH_IP, tcp4("192.0.2.1", "192.0.2.2", 5000, 6000, TCP_SYN))),
            (PASS, "UDP with IP options (IHL 6)", eth(ETH_IP, udp4("192.0.2.9", "192.0.2.2", 1, 2, options=bytes([1, 1, 1, 0])))),
            (PASS, "ICMP (not counted)", eth(ETH_IP, icmp4("192.0.2.1", "192.0.2.2"))),
            (PASS, "IPv6 (not counted)", eth(ETH_IP6, IPV6_UDP)),
            (PASS, "ARP (not counted)", arp()),
            (DROP, "IPv4 header truncated", eth(ETH_IP, IPV4_UDP[:16])),
            (DROP, "IHL 4 (invalid)", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 17, bytes(8), ihl=4))),
            (DROP, "UDP ports truncated (3 bytes)", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 17, b"\x01\x02\x03"))),
        ]
        dims = f"ROWS = {rows}, COLS = 512." if count_only else f"ROWS = {rows}, COLS = 512, threshold 16."
        write(f"{stem}_d{rows}", program, P, maps, notes=[dims, *notes])


def gen_cms_nfp():
    """xdp_cms_nfp_d*: count-only sketch (non-fetching adds, counters never read); same packets and counters."""
    gen_cms("xdp_cms_nfp", "xdp_cms_nfp", count_only=True, notes=[
        "Same packets and counters as xdp_cms_d*. Count-only: each row's counter gets a",
        "non-fetching atomic add and is never read (the NFP verifier refuses reading and",
        "atomically adding the same map-value word), so every counted packet is passed."])


def dns_name(name):
    out = b""
    for label in name.split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def dns_query(name_wire, qtype=1, qclass=1, ident=0x1234, flags=0x0100, qd=1, an=0, ns=0, ar=0, extra=b""):
    return struct.pack("!6H", ident, flags, qd, an, ns, ar) + name_wire + struct.pack("!HH", qtype, qclass) + extra


def gen_dns():
    records = {"www.example.com": "192.0.2.10", "ns1.example.com": "192.0.2.53", "a.b": "198.51.100.1",
               "x" * 20 + "." + "y" * 20 + ".example.org": "203.0.113.77"}
    maps = {"dns_a_records": [(pad(dns_name(n), 64), ip4(a)) for n, a in records.items()]}
    Q = lambda payload, dport=53, sport=40000, **kw: eth(ETH_IP, udp4("198.51.100.20", "192.0.2.1", sport, dport, payload, **kw))
    long_name = ".".join(["abcdefghi"] * 7)  # 7 * 10 + 1 = 71 bytes > 64
    P = [
        (TX, "A www.example.com (RD set) -> answer 192.0.2.10", Q(dns_query(dns_name("www.example.com")))),
        (TX, "A ns1.example.com (RD clear), no UDP checksum", Q(dns_query(dns_name("ns1.example.com"), flags=0), with_csum=False)),
        (TX, "A a.b: short name, packet grows by 16 bytes", Q(dns_query(dns_name("a.b")))),
        (TX, "A with a 55-byte name (near the 64-byte limit)", Q(dns_query(dns_name("x" * 20 + "." + "y" * 20 + ".example.org")))),
        (TX, "A www.example.com followed by 10 trailing bytes: packet shrinks to fit", Q(dns_query(dns_name("www.example.com"), extra=bytes(10)))),
        (PASS, "A unknown.example.com: not in the map", Q(dns_query(dns_name("unknown.example.com")))),
        (PASS, "A WWW.example.com: names are matched byte-exact", Q(dns_query(dns_name("WWW.example.com")))),
        (PASS, "AAAA www.example.com: QTYPE not A", Q(dns_query(dns_name("www.example.com"), qtype=28))),
        (PASS, "A www.example.com class CH", Q(dns_query(dns_name("www.example.com"), qclass=3))),
        (PASS, "response (QR set)", Q(dns_query(dns_name("www.example.com"), flags=0x8180))),
        (PASS, "opcode 2 (STATUS)", Q(dns_query(dns_name("www.example.com"), flags=0x1000))),
        (PASS, "QDCOUNT 2", Q(dns_query(dns_name("www.example.com"), qd=2))),
        (PASS, "ARCOUNT 1 (EDNS OPT not supported)", Q(dns_query(dns_name("www.example.com"), ar=1, extra=b"\x00\x00\x29\x10\x00\x00\x00\x00\x00\x00\x00"))),
        (PASS, "ANCOUNT 1 in a query", Q(dns_query(dns_name("www.example.com"), an=1))),
        (PASS, "NSCOUNT 1 in a query", Q(dns_query(dns_name("www.example.com"), ns=1))),
        (PASS, "compression pointer in the question name (bpf_printk branch)", Q(dns_query(b"\x03www\xc0\x0c"))),
        (PASS, "label length disagrees with the zero terminator", Q(dns_query(b"\x05ab\x00"))),
        (PASS, "name longer than 64 bytes", Q(dns_query(dns_name(long_name)))),
        (PASS, "name runs past the end of the packet", Q(struct.pack("!6H", 1, 0x100, 1, 0, 0, 0) + b"\x03www\x07exam")),
        (PASS, "QTYPE/QCLASS truncated", Q(struct.pack("!6H", 1, 0x100, 1, 0, 0, 0) + dns_name("www.example.com") + b"\x00")),
        (PASS, "DNS header truncated (8 bytes)", Q(bytes(8))),
        (PASS, "UDP to port 5353", Q(dns_query(dns_name("www.example.com")), dport=5353)),
        (PASS, "TCP to port 53", eth(ETH_IP, tcp4("198.51.100.20", "192.0.2.1", 40000, 53, TCP_SYN))),
        (PASS, "IPv4 with options (IHL 6) not handled", eth(ETH_IP, udp4("198.51.100.20", "192.0.2.1", 40000, 53, dns_query(dns_name("www.example.com")), options=bytes([1, 1, 1, 0])))),
        (PASS, "IPv4 fragment (MF set)", Q(dns_query(dns_name("www.example.com")), frag=0x2000)),
        (PASS, "UDP header truncated", eth(ETH_IP, ipv4("198.51.100.20", "192.0.2.1", 17, b"\x9c\x40\x00\x35"))),
        (PASS, "IPv6 UDP to port 53", eth(ETH_IP6, ipv6("2001:db8::1", "2001:db8::2", 17, udp6_payload("2001:db8::1", "2001:db8::2", 40000, 53, dns_query(dns_name("www.example.com")))))),
        (PASS, "ARP", arp()),
    ]
    write("xdp_dns", "xdp_dns", P, maps)


def gen_dns_nfp():
    """xdp_dns_nfp: answers only when the frame already has room for the answer (the NFP's
    bpf_xdp_adjust_tail can only shrink), so hit cases carry trailing bytes."""
    long63 = "a" * 30 + "." + "b" * 31                       # 64-byte wire name (the maximum)
    records = {"www.example.com": "192.0.2.10", "ns1.example.com": "192.0.2.53", "a.b": "198.51.100.1",
               "x" * 20 + "." + "y" * 20 + ".example.org": "203.0.113.77",
               "ab.c": "198.51.100.2", "ab.cd": "198.51.100.3", "abc.de": "198.51.100.4", long63: "198.51.100.5"}
    maps = {"dns_a_records": [(pad(dns_name(n), 64), ip4(a)) for n, a in records.items()]}
    Q = lambda payload, dport=53, sport=40000, **kw: eth(ETH_IP, udp4("198.51.100.20", "192.0.2.1", sport, dport, payload, **kw))
    long_name = ".".join(["abcdefghi"] * 7)  # 7 * 10 + 1 = 71 bytes > 64

    def hit(name, room, **kw):
        """A query for `name` followed by `room` trailing bytes (16 = exactly the answer's size)."""
        return Q(dns_query(dns_name(name), extra=bytes(room), **{k: v for k, v in kw.items() if k != "with_csum"}),
                 **{k: v for k, v in kw.items() if k == "with_csum"})
    P = [
        (TX, "A www.example.com (RD set), 16 trailing bytes: exactly room for the answer, no adjust_tail", hit("www.example.com", 16)),
        (TX, "A ns1.example.com (RD clear), no UDP checksum, 30 trailing bytes: trimmed by 14", hit("ns1.example.com", 30, flags=0, with_csum=False)),
        (TX, "A a.b, 17 trailing bytes: trimmed by 1", hit("a.b", 17)),
        (TX, "A with a 55-byte name (root label in byte 2 of a word), 20 trailing bytes", hit("x" * 20 + "." + "y" * 20 + ".example.org", 20)),
        (TX, "A ab.c: 6-byte name, root label in byte 1 of a word", hit("ab.c", 16)),
        (TX, "A ab.cd: 7-byte name, root label in byte 2 of a word", hit("ab.cd", 16)),
        (TX, "A abc.de: 8-byte name, root label in byte 3 of a word", hit("abc.de", 16)),
        (TX, "A with a 64-byte name (the maximum, root label in the last key byte)", hit(long63, 16)),
        (PASS, "A www.example.com without trailing bytes: the answer would grow the frame (left to the host)", Q(dns_query(dns_name("www.example.com")))),
        (PASS, "A www.example.com followed by 10 trailing bytes: 6 bytes short", hit("www.example.com", 10)),
        (PASS, "A a.b without trailing bytes: would grow", Q(dns_query(dns_name("a.b")))),
        (PASS, "A unknown.example.com: not in the map", hit("unknown.example.com", 16)),
        (PASS, "A WWW.example.com: names are matched byte-exact", hit("WWW.example.com", 16)),
        (PASS, "A ab.c.d: a known name as a prefix is not a match", hit("ab.c.d", 16)),
        (PASS, "AAAA www.example.com: QTYPE not A", Q(dns_query(dns_name("www.example.com"), qtype=28, extra=bytes(16)))),
        (PASS, "A www.example.com class CH", Q(dns_query(dns_name("www.example.com"), qclass=3, extra=bytes(16)))),
        (PASS, "response (QR set)", Q(dns_query(dns_name("www.example.com"), flags=0x8180, extra=bytes(16)))),
        (PASS, "opcode 2 (STATUS)", Q(dns_query(dns_name("www.example.com"), flags=0x1000))),
        (PASS, "QDCOUNT 2", Q(dns_query(dns_name("www.example.com"), qd=2))),
        (PASS, "ARCOUNT 1 (EDNS OPT not supported)", Q(dns_query(dns_name("www.example.com"), ar=1, extra=b"\x00\x00\x29\x10\x00\x00\x00\x00\x00\x00\x00" + bytes(16)))),
        (PASS, "ANCOUNT 1 in a query", Q(dns_query(dns_name("www.example.com"), an=1))),
        (PASS, "NSCOUNT 1 in a query", Q(dns_query(dns_name("www.example.com"), ns=1))),
        (PASS, "compression pointer in the question name", Q(dns_query(b"\x03www\xc0\x0c", extra=bytes(16)))),
        (PASS, "label length 64 (reserved label type 0x40)", Q(dns_query(b"\x40" + bytes(3), extra=bytes(16)))),
        (PASS, "label length disagrees with the zero terminator", Q(dns_query(b"\x05ab\x00", extra=bytes(16)))),
        (PASS, "name longer than 64 bytes", Q(dns_query(dns_name(long_name), extra=bytes(16)))),
        (PASS, "65-byte name (one more than the maximum)", Q(dns_query(dns_name(long63 + "c"), extra=bytes(16)))),
        (PASS, "name runs past the end of the packet", Q(struct.pack("!6H", 1, 0x100, 1, 0, 0, 0) + b"\x03www\x07exam")),
        (PASS, "QTYPE/QCLASS truncated (root label inside the packet, its word is not)", Q(struct.pack("!6H", 1, 0x100, 1, 0, 0, 0) + dns_name("www.example.com") + b"\x00")),
        (PASS, "QCLASS truncated (root label word complete)", Q(struct.pack("!6H", 1, 0x100, 1, 0, 0, 0) + dns_name("www.example.com") + b"\x00\x01\x00")),
        (PASS, "DNS header truncated (8 bytes)", Q(bytes(8))),
        (PASS, "UDP to port 5353", Q(dns_query(dns_name("www.example.com"), extra=bytes(16)), dport=5353)),
        (PASS, "TCP to port 53", eth(ETH_IP, tcp4("198.51.100.20", "192.0.2.1", 40000, 53, TCP_SYN))),
        (PASS, "IPv4 with options (IHL 6) not handled", eth(ETH_IP, udp4("198.51.100.20", "192.0.2.1", 40000, 53, dns_query(dns_name("www.example.com"), extra=bytes(16)), options=bytes([1, 1, 1, 0])))),
        (PASS, "IPv4 fragment (MF set)", Q(dns_query(dns_name("www.example.com"), extra=bytes(16)), frag=0x2000)),
        (PASS, "UDP header truncated", eth(ETH_IP, ipv4("198.51.100.20", "192.0.2.1", 17, b"\x9c\x40\x00\x35"))),
        (PASS, "IPv6 UDP to port 53", eth(ETH_IP6, ipv6("2001:db8::1", "2001:db8::2", 17, udp6_payload("2001:db8::1", "2001:db8::2", 40000, 53, dns_query(dns_name("www.example.com")))))),
        (PASS, "ARP", arp()),
    ]
    write("xdp_dns_nfp", "xdp_dns_nfp", P, maps, notes=[
        "Answers are built only in frames with room for them (16 bytes after the question):",
        "the NFP's bpf_xdp_adjust_tail only shrinks, so growing cases are passed to the host."])


def fnv1a(b):
    h = 2166136261
    for x in b:
        h = ((h ^ x) * 16777619) & M32
    return h


QUIC_BACKENDS4 = ["10.10.0.1", "10.10.0.2", "10.10.0.3", None]  # slot 3 unconfigured
QUIC_BACKENDS6 = ["2001:db8:10::1", "2001:db8:10::2", "2001:db8:10::3", None]
BACKEND_MAC = lambda i: mac("0e:00:00:00:00:%02x" % (i + 1))


def quic_short(cid, payload=b"\x00" * 24):
    return bytes([0x40 | 0x01]) + cid + payload


def quic_long(dcid, version=1, scid=b"\xaa" * 8, payload=b"\x00" * 24):
    return bytes([0xC0]) + struct.pack("!I", version) + bytes([len(dcid)]) + dcid + bytes([len(scid)]) + scid + payload


def quic_cases(backend_of):
    """Common QUIC cases: (expect, desc, quic payload, client port). backend_of(idx) -> expect."""
    cid_sid2 = bytes([0x08, 2]) + b"\x11\x22\x33\x44\x55\x66"
    cid_sid3 = bytes([0x08, 3]) + b"\x11\x22\x33\x44\x55\x66"
    cid_sid9 = bytes([0x08, 9]) + b"\x01\x02\x03\x04\x05\x06"
    cid_unr = bytes([0xE8, 1]) + b"\x99\x88\x77\x66\x55\x44"
    dcid_rand = bytes.fromhex("83941c43ab3f7e5d0a11")
    dcid_max = bytes(range(0x30, 0x30 + 20))
    h = lambda c: fnv1a(c) % 4
    return [
        (backend_of(2), "short header, server id 2 in the CID", quic_short(cid_sid2), 50000),
        (backend_of(3), "short header, server id 3 -> unconfigured backend", quic_short(cid_sid3), 50000),
        (backend_of(h(cid_sid9)), f"short header, server id 9 invalid -> FNV hash -> backend {h(cid_sid9)}", quic_short(cid_sid9), 50000),
        (backend_of(h(cid_unr)), f"short header, unroutable config 7 -> FNV hash -> backend {h(cid_unr)}", quic_short(cid_unr), 50000),
        (backend_of(h(dcid_rand)), f"long header Initial, unknown client -> FNV hash -> backend {h(dcid_rand)}, sticky entry added", quic_long(dcid_rand), 50001),
        (backend_of(1), "long header, client in the sticky table (-> backend 1)", quic_long(dcid_rand), 50002),
        (backend_of(h(dcid_max)), f"long header, 20-byte DCID -> backend {h(dcid_max)}", quic_long(dcid_max), 50003),
        (backend_of(h(b"")), f"long header, empty DCID -> backend {h(b'')}", quic_long(b""), 50004),
        (PASS, "long header version 0 (version negotiation)", quic_long(dcid_rand, version=0), 50005),
        (DROP, "long header DCID length 21", quic_long(bytes(21)), 50006),
        (DROP, "long header truncated before the DCID length", bytes([0xC0, 0, 0, 0, 1]), 50007),
        (DROP, "long header DCID truncated", bytes([0xC0, 0, 0, 0, 1, 8, 1, 2, 3]), 50008),
        (PASS, "short header with fixed bit clear", bytes([0x01]) + cid_sid2 + bytes(8), 50009),
        (DROP, "short header CID truncated (5 bytes)", bytes([0x41]) + cid_sid2[:5], 50010),
        (DROP, "empty UDP payload", b"", 50011),
    ]


def gen_quic_v4(stem="xdp_quic_lb_v4", infix=""):
    maps = {
        f"qlb_backends_{infix}v4": [(u32(i), (ip4(a) if a else bytes(4)) + BACKEND_MAC(i) + bytes(2)) for i, a in enumerate(QUIC_BACKENDS4)],
        f"qlb_sticky_{infix}v4": [(ip4("198.51.100.7") + struct.pack("!H", 50002) + bytes(2), u32(1))],
    }
    be = lambda i: TX if QUIC_BACKENDS4[i] else PASS
    U = lambda payload, sport=50000, dport=443, **kw: eth(ETH_IP, udp4("198.51.100.7", "192.0.2.100", sport, dport, payload, **kw))
    P = [(e, d, U(q, sport=sp)) for e, d, q, sp in quic_cases(be)]
    cid_sid2 = bytes([0x08, 2]) + b"\x11\x22\x33\x44\x55\x66"
    P += [
        (TX, "short header, server id 0, zero UDP checksum (left zero)", U(quic_short(bytes([0, 0]) + bytes(6)), with_csum=False)),
        (TX, "IPv4 options (IHL 6), server id 1", U(quic_short(bytes([0, 1]) + bytes(6)), options=bytes([1, 1, 1, 0]))),
        (PASS, "UDP to port 80", U(quic_short(cid_sid2), dport=80)),
        (PASS, "IPv4 fragment", U(quic_short(cid_sid2), frag=0x2000)),
        (PASS, "TCP to port 443", eth(ETH_IP, tcp4("198.51.100.7", "192.0.2.100", 50000, 443, TCP_SYN))),
        (DROP, "UDP header truncated", eth(ETH_IP, ipv4("198.51.100.7", "192.0.2.100", 17, b"\xc3\x50\x01"))),
        (DROP, "IPv4 header truncated", eth(ETH_IP, bytes([0x45, 0, 0, 40]))),
        (DROP, "IHL 4 (invalid)", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 17, bytes(8), ihl=4))),
        (PASS, "IPv6", eth(ETH_IP6, IPV6_UDP)),
    ]
    write(stem, stem, P, maps)


def gen_quic_v6(stem="xdp_quic_lb_v6", infix=""):
    client = "2001:db8:c::7"
    vip = "2001:db8:100::1"
    maps = {
        f"qlb_backends_{infix}v6": [(u32(i), (ip6(a) if a else bytes(16)) + BACKEND_MAC(i) + bytes(2)) for i, a in enumerate(QUIC_BACKENDS6)],
        f"qlb_sticky_{infix}v6": [(ip6(client) + struct.pack("!H", 50002) + bytes(2), u32(1))],
    }
    be = lambda i: TX if QUIC_BACKENDS6[i] else PASS

    def U(payload, sport=50000, dport=443, ext=b"", first_nh=17, with_csum=True):
        return eth(ETH_IP6, ipv6(client, vip, first_nh, udp6_payload(client, vip, sport, dport, payload, with_csum, ext)))

    P = [(e, d, U(q, sport=sp)) for e, d, q, sp in quic_cases(be)]
    short0 = quic_short(bytes([0, 0]) + bytes(6))
    hbh, rt, dst, fr = 0, 43, 60, 44
    P += [
        (TX, "hop-by-hop options before UDP", U(short0, ext=ext_opt(17), first_nh=hbh)),
        (TX, "hop-by-hop (16 bytes) + routing + destination options", U(short0, ext=ext_opt(rt, 1) + ext_routing(dst) + ext_opt(17), first_nh=hbh)),
        (TX, "first fragment (offset 0, M set)", U(short0, ext=ext_frag(17, 0, 1), first_nh=fr)),
        (TX, "six extension headers (the loop maximum)", U(short0, ext=ext_opt(dst) + ext_opt(rt) + ext_routing(dst) + ext_opt(fr) + ext_frag(dst) + ext_opt(17), first_nh=hbh)),
        (PASS, "seven extension headers (more than the loop walks)", U(short0, ext=ext_opt(dst) + ext_opt(rt) + ext_routing(dst) + ext_opt(fr) + ext_frag(dst) + ext_opt(dst) + ext_opt(17), first_nh=hbh)),
        (PASS, "non-first fragment (offset 100)", U(short0, ext=ext_frag(17, 100, 0), first_nh=fr)),
        (PASS, "destination options then TCP", eth(ETH_IP6, ipv6(client, vip, dst, ext_opt(6) + bytes(20)))),
        (PASS, "no next header (59)", eth(ETH_IP6, ipv6(client, vip, 59, b""))),
        (PASS, "ICMPv6", eth(ETH_IP6, ipv6(client, vip, 58, bytes([128, 0, 0, 0, 0, 1, 0, 1])))),
        (DROP, "hop-by-hop header truncated", eth(ETH_IP6, ipv6(client, vip, hbh, b"\x11"))),
        (DROP, "fragment header truncated", eth(ETH_IP6, ipv6(client, vip, fr, b"\x11\x00\x00\x00"))),
        (DROP, "UDP header truncated behind a routing header", eth(ETH_IP6, ipv6(client, vip, rt, ext_routing(17) + b"\xc3\x50"))),
        (TX, "zero UDP checksum left zero", U(short0, with_csum=False)),
        (PASS, "UDP to port 80", U(short0, dport=80)),
        (DROP, "IPv6 header truncated", eth(ETH_IP6, bytes(20))),
        (PASS, "IPv4", eth(ETH_IP, IPV4_UDP)),
    ]
    write(stem, stem, P, maps)


def gen_quic_nfp():
    """xdp_quic_lb_nfp_v4/v6: same packets as the originals; the sticky tables are plain HASH maps."""
    gen_quic_v4("xdp_quic_lb_nfp_v4", "nfp_")
    gen_quic_v6("xdp_quic_lb_nfp_v6", "nfp_")


def gen_ipip():
    tun = ip4("192.0.2.1") + ip4("203.0.113.1") + mac("0e:00:00:00:01:01") + mac("0e:00:00:00:01:02")
    tun2 = ip4("192.0.2.1") + ip4("203.0.113.2") + mac("0e:00:00:00:02:01") + mac("0e:00:00:00:02:02")
    maps = {"ipip_tunnels": [(ip4("198.51.100.7"), tun), (ip4("198.51.100.8"), tun2)]}
    P = [
        (TX, "UDP to 198.51.100.7 -> encapsulated towards 203.0.113.1", eth(ETH_IP, udp4("10.0.0.1", "198.51.100.7", 1000, 2000, b"payload"))),
        (TX, "TCP SYN to 198.51.100.8 -> encapsulated towards 203.0.113.2", eth(ETH_IP, tcp4("10.0.0.1", "198.51.100.8", 1000, 80, TCP_SYN))),
        (TX, "ICMP with TOS 0xb8 to 198.51.100.7 (TOS copied)", eth(ETH_IP, ipv4("10.0.0.1", "198.51.100.7", 1, b"\x08\x00\xf7\xff\x00\x00\x00\x00", tos=0xB8))),
        (TX, "inner IPv4 with options (IHL 6)", eth(ETH_IP, udp4("10.0.0.1", "198.51.100.7", 1, 2, options=bytes([1, 1, 1, 0])))),
        (TX, "inner header only (20 bytes, no L4)", eth(ETH_IP, ipv4("10.0.0.1", "198.51.100.7", 17))),
        (PASS, "destination 198.51.100.9 has no tunnel", eth(ETH_IP, udp4("10.0.0.1", "198.51.100.9", 1000, 2000, b"payload"))),
        (PASS, "already IP-in-IP (protocol 4)", eth(ETH_IP, ipv4("192.0.2.9", "198.51.100.7", 4, ipv4("10.0.0.1", "10.0.0.2", 17, bytes(8))))),
        (DROP, "inner total length 65520 (> 65515)", eth(ETH_IP, ipv4("10.0.0.1", "198.51.100.7", 17, bytes(8), tot_len=65520))),
        (TX, "inner total length 65515 (largest allowed)", eth(ETH_IP, ipv4("10.0.0.1", "198.51.100.7", 17, bytes(8), tot_len=65515))),
        (DROP, "IPv4 header truncated", eth(ETH_IP, bytes([0x45]) + bytes(15))),
        (DROP, "IHL 4 (invalid)", eth(ETH_IP, ipv4("10.0.0.1", "198.51.100.7", 17, bytes(8), ihl=4))),
        (PASS, "IPv6", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP", arp()),
    ]
    write("xdp_ipip", "xdp_ipip", P, maps)


def rtp(pt, payload, marker=0, version=2, cc=0, x=0, ssrc=0x11223344, seq=1, ts=160):
    b0 = (version << 6) | (x << 4) | cc
    return struct.pack("!BBHII", b0, (marker << 7) | pt, seq, ts, ssrc) + bytes(4 * cc) + payload


def gen_transcoder(stem="xdp_transcoder", nfp=False):
    if nfp:
        maps = {"rtp_streams_nfp": [(struct.pack("!I", 0xCAFEF00D), u64(10) + u64(1600))],
                "alaw_to_ulaw8": [(u32(k), bytes(alaw_to_ulaw(8 * k + j) for j in range(8))) for k in range(32)]}
        notes = ["alaw_to_ulaw8 holds the G.711 A-law -> mu-law table, 8 codes per entry",
                 "(entry a >> 3, byte a & 7); rtp_streams_nfp is a HASH."]
    else:
        maps = {"rtp_streams": [(struct.pack("!I", 0xCAFEF00D), u64(10) + u64(1600))]}
        notes = ["rtp_streams is a PERCPU_HASH: its maps.json value is one CPU's value."]
    audio = bytes((i * 37 + 0x55) & 0xFF for i in range(160))
    R = lambda r, dport=5004, **kw: eth(ETH_IP, udp4("192.0.2.50", "192.0.2.60", 40000, dport, r, **kw))
    P = [
        (PASS, "PCMA, 160 bytes: transcoded to PCMU, new SSRC counter", R(rtp(8, audio))),
        (PASS, "PCMA, 160 bytes, known SSRC: transcoded, counter incremented", R(rtp(8, audio, ssrc=0xCAFEF00D))),
        (PASS, "PCMA, 20 bytes with the marker bit: transcoded, marker kept", R(rtp(8, audio[:20], marker=1))),
        (PASS, "PCMA, 1 byte: transcoded", R(rtp(8, b"\xd5"))),
        (PASS, "PCMA, all 256 code points split over 2 packets (0..159)", R(rtp(8, bytes(range(160))))),
        (PASS, "PCMA, code points 160..255", R(rtp(8, bytes(range(160, 256))))),
        (PASS, "PCMA, 161 bytes: too long, unchanged", R(rtp(8, audio + b"\x00"))),
        (PASS, "PCMA, empty payload: unchanged", R(rtp(8, b""))),
        (PASS, "PCMU (PT 0): unchanged", R(rtp(0, audio[:40]))),
        (PASS, "dynamic PT 96: unchanged", R(rtp(96, audio[:40]))),
        (PASS, "RTP version 1: unchanged", R(rtp(8, audio[:40], version=1))),
        (PASS, "CSRC count 2: unchanged", R(rtp(8, audio[:40], cc=2))),
        (PASS, "extension bit set: unchanged", R(rtp(8, audio[:40], x=1))),
        (PASS, "PCMA with padding bit set is still transcoded", R(bytes([0xA0]) + rtp(8, audio[:32])[1:])),
        (DROP, "RTP header truncated (8 bytes)", R(rtp(8, b"")[:8])),
        (PASS, "UDP to port 5006", R(rtp(8, audio[:40]), dport=5006)),
        (DROP, "UDP header truncated", eth(ETH_IP, ipv4("192.0.2.50", "192.0.2.60", 17, b"\x9c\x40\x13\x8c"))),
        (PASS, "IPv4 with options (IHL 6)", eth(ETH_IP, udp4("192.0.2.50", "192.0.2.60", 40000, 5004, rtp(8, audio[:40]), options=bytes([1, 1, 1, 0])))),
        (PASS, "IPv4 fragment", R(rtp(8, audio[:40]), frag=0x2000)),
        (PASS, "TCP", eth(ETH_IP, tcp4("192.0.2.50", "192.0.2.60", 40000, 5004, TCP_ACK))),
        (PASS, "IPv6", eth(ETH_IP6, IPV6_UDP)),
    ]
    write(stem, stem, P, maps, notes=notes)


def alaw_to_ulaw(a):
    """G.711 A-law code -> mu-law code through linear PCM (alaw2linear and linear2ulaw of
    Sun's reference g711.c); equals the .rodata table of xdp_transcoder.c."""
    a ^= 0x55
    t = (a & 0x0F) << 4
    seg = (a & 0x70) >> 4
    t += 8 if seg == 0 else 0x108
    if seg > 1:
        t <<= seg - 1
    pcm = t if a & 0x80 else -t
    pcm >>= 2                      # 14-bit magnitude for mu-law
    mask = 0xFF
    if pcm < 0:
        pcm, mask = -pcm, 0x7F
    pcm = min(pcm, 8159) + 0x21    # clip, add the bias
    for seg, end in enumerate((0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF)):
        if pcm <= end:
            return ((seg << 4) | ((pcm >> (seg + 1)) & 0x0F)) ^ mask
    return 0x7F ^ mask


def gen_transcoder_nfp():
    """xdp_transcoder_nfp: same packets as xdp_transcoder; the table comes from the map."""
    gen_transcoder("xdp_transcoder_nfp", nfp=True)


def pe_acc(f, wide=True):
    """xdp_path_explosion's accumulator over feature bytes f (32-bit for the NFP variant)."""
    acc, mask, mod = (0x9E3779B97F4A7C15, M64, 57) if wide else (0x9E3779B9, M32, 25)
    for i in range(48):
        v = f[i]
        if v > 0x7F:
            acc = (acc * 31 + v) & mask
        else:
            acc ^= (v << (i % mod)) & mask
    return acc


def pe_vectors():
    """The feature vectors both path-explosion programs run on."""
    seed = 0x12345678

    def lcg():
        nonlocal seed
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        return seed >> 16 & 0xFF

    vectors = [("all zero", bytes(48)), ("all 0xff", b"\xff" * 48),
               ("alternating 0x00/0x80", bytes([0, 0x80] * 24)), ("0x7f/0x80 boundary", bytes([0x7F, 0x80] * 24)),
               ("0x3f/0x40 values (below the slow-path guard)", bytes([0x3F, 0x40] * 24))]
    for k in range(9):
        vectors.append((f"pseudo-random vector {k + 1}", bytes(lcg() for _ in range(48))))
    return vectors


def gen_path_explosion():
    vectors = pe_vectors()
    P = []
    for desc, f in vectors:
        acc = pe_acc(f)
        P.append((TX if acc & 1 else DROP, f"{desc}, acc = 0x{acc:016x}", eth(0x88B5, f + bytes(8))))
    # make sure both verdicts appear: flip the last byte's low bit until parity differs
    P += [
        (PASS, "EtherType 0x0800", eth(ETH_IP, IPV4_UDP)),
        (DROP, "0x88B5 but only 55 bytes of payload (56 needed)", eth(0x88B5, bytes(55))),
    ]
    write("xdp_path_explosion", "xdp_path_explosion", P, notes=[
        "The result acc is written big-endian at bytes 62..69; TX if odd, DROP if even."])


def gen_path_explosion_nfp():
    """xdp_path_explosion_nfp: the vectors of xdp_path_explosion with the 32-bit accumulator."""
    vectors = pe_vectors()
    P = []
    for desc, f in vectors:
        acc = pe_acc(f, wide=False)
        P.append((TX if acc & 1 else DROP, f"{desc}, acc = 0x{acc:08x}", eth(0x88B5, f + bytes(8))))
    f = bytes([0x80, 0x01] * 24)
    acc = pe_acc(f, wide=False)
    P += [
        (TX if acc & 1 else DROP, f"exactly 48 + 4 bytes of payload, acc = 0x{acc:08x}", eth(0x88B5, f + bytes(4))),
        (PASS, "EtherType 0x0800", eth(ETH_IP, IPV4_UDP)),
        (DROP, "0x88B5 but only 51 bytes of payload (52 needed)", eth(0x88B5, bytes(51))),
    ]
    assert {TX, DROP} <= {e for e, _, _ in P}
    write("xdp_path_explosion_nfp", "xdp_path_explosion_nfp", P, notes=[
        "The 32-bit result acc is written big-endian at bytes 62..65; TX if odd, DROP if even."])


def gen_tailcall():
    P = [
        (DROP, "IPv4 UDP: tail call into xdp_tailcall_ipv4, UDP dropped", eth(ETH_IP, IPV4_UDP)),
        (PASS, "IPv4 TCP: tail call, counted, passed", eth(ETH_IP, tcp4("192.0.2.1", "192.0.2.2", 1, 2, TCP_SYN))),
        (PASS, "IPv4 ICMP: tail call, counted, passed", eth(ETH_IP, icmp4("192.0.2.1", "192.0.2.2"))),
        (DROP, "IPv4 header truncated: tail call, dropped by the second program", eth(ETH_IP, IPV4_UDP[:12])),
        (PASS, "IPv6: slot 1 empty, tail call falls through", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP: no tail call", arp()),
        (PASS, "802.1Q-tagged IPv4: no tail call", vlan(3, ETH_IP, IPV4_UDP)),
    ]
    write("xdp_tailcall", "xdp_tailcall_entry", P, notes=[
        "tc_progs slot 0 = xdp_tailcall_ipv4 comes from the object itself (BTF .values)."])


def gen_rodata():
    P = [
        (DROP, "TCP to port 23 (blocked_port): blocked_action", eth(ETH_IP, tcp4("198.51.100.1", "192.0.2.1", 40000, 23, TCP_SYN))),
        (DROP, "UDP to port 23 (filter_udp = 1)", eth(ETH_IP, udp4("198.51.100.1", "192.0.2.1", 40000, 23, b"x"))),
        (DROP, "TCP to port 23 with IP options (IHL 6)", eth(ETH_IP, tcp4("198.51.100.1", "192.0.2.1", 40000, 23, TCP_SYN, options=bytes([1, 1, 1, 0])))),
        (PASS, "TCP from port 23 to port 22", eth(ETH_IP, tcp4("198.51.100.1", "192.0.2.1", 23, 22, TCP_SYN))),
        (PASS, "UDP to port 53", eth(ETH_IP, udp4("198.51.100.1", "192.0.2.1", 40000, 53, b"x"))),
        (PASS, "ICMP", eth(ETH_IP, icmp4("198.51.100.1", "192.0.2.1"))),
        (PASS, "IPv6", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP", arp()),
        (DROP, "1600-byte frame > max_frame_len 1514", eth(ETH_IP, udp4("198.51.100.1", "192.0.2.1", 1, 2, bytes(1558)))),
        (PASS, "1514-byte frame (= max_frame_len)", eth(ETH_IP, udp4("198.51.100.1", "192.0.2.1", 1, 2, bytes(1472)))),
        (DROP, "IPv4 header truncated", eth(ETH_IP, bytes([0x45]) + bytes(8))),
        (DROP, "IHL 4 (invalid)", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 6, bytes(20), ihl=4))),
        (DROP, "TCP ports truncated", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 6, b"\x00\x17\x00"))),
    ]
    write("xdp_rodata_config", "xdp_rodata_config", P, notes=[
        "Defaults from the object: blocked_port 23, filter_udp 1, blocked_action XDP_DROP, max_frame_len 1514."])


def gen_redirect():
    maps = {
        "redir_ports": [(struct.pack("<H", 53), u32(0)), (struct.pack("<H", 80), u32(3)), (struct.pack("<H", 443), u32(7))],
        "redir_devs": [(u32(0), u32(1)), (u32(7), u32(1))],  # ifindex 1 = lo
        "redir_cpus": [(u32(0), u32(192))],                   # CPU 0, queue size 192
    }
    P = [
        (REDIRECT, "UDP to port 53 -> devmap slot 0 (lo)", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 40000, 53, b"q"))),
        (REDIRECT, "TCP to port 443 -> devmap slot 7 (lo)", eth(ETH_IP, tcp4("192.0.2.1", "192.0.2.2", 40000, 443, TCP_SYN))),
        (DROP, "TCP to port 80 -> devmap slot 3 is empty: fallback XDP_DROP", eth(ETH_IP, tcp4("192.0.2.1", "192.0.2.2", 40000, 80, TCP_SYN))),
        (PASS, "UDP to port 9999: not steered", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 40000, 9999, b"q"))),
        (REDIRECT, "ICMP, IP id 2 -> cpumap CPU 0", eth(ETH_IP, icmp4("192.0.2.1", "192.0.2.2", ip_id=2))),
        (PASS, "ICMP, IP id 3 -> cpumap CPU 1 empty: fallback XDP_PASS", eth(ETH_IP, icmp4("192.0.2.1", "192.0.2.2", ip_id=3))),
        (PASS, "GRE (protocol 47)", eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 47, bytes(8)))),
        (REDIRECT, "EtherType 0x88B6 -> bpf_redirect(ifindex 1)", eth(0x88B6, bytes(46))),
        (PASS, "IPv6", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP", arp()),
        (DROP, "TCP ports truncated", eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 6, b"\x01"))),
        (DROP, "IPv4 header truncated", eth(ETH_IP, bytes([0x45, 0]))),
    ]
    write("xdp_redirect", "xdp_redirect", P, maps, notes=[
        "redir_devs values are ifindexes (1 = lo); redir_cpus values are cpumap queue sizes."])


def gen_v4_ops():
    state = u64(1000) + u64(2000) + u64(3000) + u64((-5) & M64) + u64(0xF0) + u64(M64) + u64(0x5555) \
        + u32(7) + u32(8) + u32(0xFFFFFFFF) + u32(0)
    maps = {"v4_state": [(u32(0), state)]}

    def pl(a, b, c, d, n=152):
        return pad(struct.pack("<bxhiq", a, b, c, d), n)
    U = lambda payload, dport=9000: eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 40000, dport, payload))
    P = [
        (TX, "positive operands", U(pl(7, 300, 100000, 123456789012))),
        (TX, "negative operands (sign-extending loads)", U(pl(-3, -300, -100000, -123456789012))),
        (TX, "a = -5 equals the cmpxchg cell: cmpxchg succeeds", U(pl(-5, 17, -1, 99))),
        (TX, "b = 0: 64-bit modulo skipped (r64 = 0), 32-bit cmpxchg fails", U(pl(1, 0, 42, -42))),
        (TX, "b = -1 ((u32)b = 0xffffffff) equals the cmpxchg32 cell: 32-bit cmpxchg succeeds", U(pl(2, -1, 1000, 1000))),
        (TX, "INT64_MIN / -1 and INT32_MIN / -1 (signed-division overflow)", U(pl(-1, -1, -2**31, -2**63))),
        (TX, "INT64_MIN % -1 path: b = -1, d = INT64_MIN", U(pl(5, -1, 2**31 - 1, -2**63))),
        (TX, "extreme values", U(pl(127, 32767, 2**31 - 1, 2**63 - 1))),
        (TX, "a = -128, b = -32768", U(pl(-128, -32768, -2**31, 1))),
        (TX, "longer payload (200 bytes)", U(pl(9, 10, 11, 12, n=200))),
        (DROP, "payload 151 bytes (< 152)", U(pl(1, 2, 3, 4, n=151))),
        (PASS, "UDP to port 9001", U(pl(1, 2, 3, 4), dport=9001)),
        (DROP, "UDP header truncated", eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 17, b"\x9c\x40\x23"))),
        (PASS, "TCP", eth(ETH_IP, tcp4("192.0.2.1", "192.0.2.2", 40000, 9000, TCP_SYN))),
        (PASS, "IPv4 with options (IHL 6)", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 40000, 9000, pl(1, 2, 3, 4), options=bytes([1, 1, 1, 0])))),
        (PASS, "IPv6", eth(ETH_IP6, IPV6_UDP)),
    ]
    write("xdp_v4_ops", "xdp_v4_ops", P, maps, notes=[
        "v4_state initial cells: add 1000, fetch_add 2000, xchg 3000, cmpxchg -5, or 0xf0,",
        "and ~0, xor 0x5555, add32 7, xchg32 8, cmpxchg32 0xffffffff, fetch_add32 0."])


def gen_legacy():
    blocked = mac("02:00:00:00:00:66")
    maps = {"legacy_blocked": [(blocked + b"\0\0", u32(1))]}
    P = [
        (PASS, "IPv4 from an allowed MAC", eth(ETH_IP, IPV4_UDP)),
        (PASS, "ARP from an allowed MAC", arp()),
        (PASS, "IPv6 from an allowed MAC", eth(ETH_IP6, IPV6_UDP)),
        (DROP, "IPv4 from the blocked MAC 02:00:00:00:00:66", eth(ETH_IP, IPV4_UDP, src=blocked)),
        (DROP, "ARP from the blocked MAC", eth(ETH_ARP, arp()[14:], src=blocked)),
        (PASS, "blocked MAC as destination only", eth(ETH_IP, IPV4_UDP, dst=blocked)),
    ]
    write("xdp_legacy_maps", "xdp_legacy_maps (section xdp_prog)", P, maps)

    good = udp4("192.0.2.1", "192.0.2.2", 1, 2, b"abc")
    bad = good[:10] + bytes([good[10] ^ 0xFF]) + good[11:]
    P = [
        (PASS, "IPv4 with a valid header checksum", eth(ETH_IP, good)),
        (PASS, "IPv4 TCP with a valid checksum", eth(ETH_IP, tcp4("10.0.0.1", "10.0.0.2", 1, 2, TCP_SYN))),
        (DROP, "IPv4 with a corrupted header checksum", eth(ETH_IP, bad)),
        (DROP, "IPv4 with checksum field 0", eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 17, bytes(8), check=0))),
        (DROP, "IHL 6 (not handled)", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 1, 2, options=bytes([1, 1, 1, 0])))),
        (DROP, "IPv4 header truncated", eth(ETH_IP, good[:19])),
        (PASS, "IPv6", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP", arp()),
    ]
    write("xdp_legacy_text", "xdp_legacy_text (section .text, no SEC)", P)

    P = [
        (PASS, "802.1Q VID 100 + IPv4: tag stripped", vlan(100, ETH_IP, IPV4_UDP)),
        (PASS, "802.1Q + ARP: tag stripped", vlan(7, ETH_ARP, arp()[14:])),
        (PASS, "802.1Q, nothing after the tag (18 bytes): stripped to 14", vlan(1, ETH_IP)),
        (PASS, "untagged IPv4: unchanged", eth(ETH_IP, IPV4_UDP)),
        (PASS, "802.1ad outer tag: not handled, unchanged", vlan(5, ETH_IP, IPV4_UDP, outer=ETH_QINQ)),
        (DROP, "802.1Q tag truncated (17 bytes)", vlan(1, ETH_IP)[:17]),
    ]
    write("xdp_legacy_prog", "xdp_legacy_prog (section prog)", P)


# ---------------------------------------------------------------- hXDP paper programs (§5.2)


def gen_hxdp_drop():
    P = [
        (DROP, "IPv4 UDP", eth(ETH_IP, IPV4_UDP)),
        (DROP, "ARP", arp()),
        (DROP, "bare Ethernet header (14 bytes)", eth(ETH_IP)),
        (DROP, "1514-byte IPv4 UDP frame", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 1234, 5678, bytes(1472)))),
    ]
    write("xdp_hxdp_drop", "xdp_hxdp_drop", P)


def gen_hxdp_tx():
    P = [
        (TX, "IPv4 UDP: MACs swapped", eth(ETH_IP, IPV4_UDP)),
        (TX, "ARP: MACs swapped", arp()),
        (TX, "IPv6 UDP: MACs swapped", eth(ETH_IP6, IPV6_UDP)),
        (TX, "bare Ethernet header (14 bytes): MACs swapped", eth(ETH_IP, src=mac("00:1b:21:0a:0b:0c"))),
    ]
    write("xdp_hxdp_tx", "xdp_hxdp_tx", P)


def gen_hxdp_redirect():
    P = [
        (REDIRECT, "IPv4 UDP: MACs swapped, redirected", eth(ETH_IP, IPV4_UDP)),
        (REDIRECT, "ARP: MACs swapped, redirected", arp()),
        (REDIRECT, "IPv6 UDP: MACs swapped, redirected", eth(ETH_IP6, IPV6_UDP)),
        (REDIRECT, "bare Ethernet header (14 bytes): redirected", eth(ETH_IP, src=mac("00:1b:21:0a:0b:0c"))),
    ]
    write("xdp_hxdp_redirect", "xdp_hxdp_redirect", P)


# xdp_simple_firewall.c reads the input port from the source MAC's locally administered bit.
MAC_INTERNAL = MAC_CLIENT                 # 02:00:00:00:00:01, locally administered
MAC_EXTERNAL = mac("00:1b:21:0a:0b:0c")   # universally administered


def sfw_key(saddr, daddr, sport, dport, proto):
    """xdp_simple_firewall.c's key: endpoints ordered by address, then port, each compared as
    the little-endian value of its network-order bytes (the word the program loads)."""
    s, d = ip4(saddr), ip4(daddr)
    sp, dp = struct.pack("!H", sport), struct.pack("!H", dport)
    le = lambda b: int.from_bytes(b, "little")
    keep = le(s) < le(d) or (s == d and le(sp) <= le(dp))
    lo, hi = ((s, sp), (d, dp)) if keep else ((d, dp), (s, sp))
    return lo[0] + hi[0] + lo[1] + hi[1] + bytes([proto, 0, 0, 0])


def gen_simple_firewall():
    seen_inside = u32(1) + u32(0)
    flow_tcp = ("10.0.0.5", "93.184.216.34", 40000, 443)
    flow_udp = ("10.0.0.7", "8.8.8.8", 33000, 53)
    flow_same = ("10.0.0.9", "10.0.0.9", 7000, 7001)
    maps = {"sfw_flows": [
        (sfw_key(*flow_tcp, 6), seen_inside),
        (sfw_key(*flow_udp, 17), seen_inside),
        (sfw_key(*flow_same, 17), seen_inside),
    ]}
    rev = lambda f: (f[1], f[0], f[3], f[2])
    T = lambda f, src, fl=TCP_ACK: eth(ETH_IP, tcp4(*f, fl), src=src)
    U = lambda f, src: eth(ETH_IP, udp4(*f, b"data"), src=src)
    new_tcp = ("10.0.0.9", "1.1.1.1", 41000, 80)
    new_udp = ("10.0.0.9", "9.9.9.9", 5000, 53)
    P = [
        (TX, "internal TCP SYN, new flow -> entry created", T(new_tcp, MAC_INTERNAL, TCP_SYN)),
        (TX, "internal UDP, new flow -> entry created", U(new_udp, MAC_INTERNAL)),
        (TX, "internal TCP on a known flow -> entry updated", T(flow_tcp, MAC_INTERNAL)),
        (TX, "internal UDP with an empty payload (transport header ends the frame)",
         eth(ETH_IP, udp4(*new_udp), src=MAC_INTERNAL)),
        (TX, "external TCP reply on a known flow (key endpoints swapped)", T(rev(flow_tcp), MAC_EXTERNAL)),
        (TX, "external UDP reply on a known flow", U(rev(flow_udp), MAC_EXTERNAL)),
        (TX, "external UDP in the flow's own direction", U(flow_udp, MAC_EXTERNAL)),
        (TX, "external UDP, equal addresses, ports ordered by the tie break", U(rev(flow_same), MAC_EXTERNAL)),
        (DROP, "external TCP, no flow", T(("203.0.113.66", "10.0.0.5", 55555, 22), MAC_EXTERNAL, TCP_SYN)),
        (DROP, "external TCP, known hosts, wrong port", T(("93.184.216.34", "10.0.0.5", 443, 40001), MAC_EXTERNAL)),
        (DROP, "external TCP on a known UDP flow's endpoints (protocol is in the key)", T(rev(flow_udp), MAC_EXTERNAL)),
        (DROP, "external UDP reply before its internal packet (flow not yet created)", U(rev(new_udp), MAC_EXTERNAL)),
        (DROP, "IPv6 (not IPv4)", eth(ETH_IP6, IPV6_UDP, src=MAC_INTERNAL)),
        (DROP, "ARP (not IPv4)", arp()),
        (DROP, "ICMP (neither TCP nor UDP)", eth(ETH_IP, icmp4("10.0.0.5", "1.1.1.1"), src=MAC_INTERNAL)),
        (DROP, "IPv4 with options (IHL 6)", eth(ETH_IP, udp4(*new_udp, b"o", options=bytes([1, 1, 1, 0])), src=MAC_INTERNAL)),
        (DROP, "IP version 6 in an IPv4 EtherType frame", eth(ETH_IP, bytes([0x65]) + udp4(*new_udp)[1:], src=MAC_INTERNAL)),
        (DROP, "bounds check 2: bare Ethernet header (14 bytes)", eth(ETH_IP, src=MAC_INTERNAL)),
        (DROP, "bounds check 2: IPv4 header truncated (19 of 20 bytes)", eth(ETH_IP, udp4(*new_udp)[:19], src=MAC_INTERNAL)),
        (DROP, "bounds check 3: UDP header truncated (7 of 8 bytes)", eth(ETH_IP, udp4(*new_udp)[:27], src=MAC_INTERNAL)),
        (DROP, "bounds check 3: TCP header truncated (4 of 20 bytes, 4 short of the checked 8)",
         eth(ETH_IP, ipv4(*new_tcp[:2], 6, bytes(4)), src=MAC_EXTERNAL)),
    ]
    write("xdp_simple_firewall", "xdp_simple_firewall", P, maps, notes=[
        "Input port: a locally administered source MAC (02:..) is the internal port, a",
        "universally administered one (00:1b:21:..) the external port (packet files cannot set",
        "ctx->ingress_ifindex). The Ethernet bounds check (bounds check 1) has no packet."])


if __name__ == "__main__":
    import gen_kfunc; gen_kfunc.gen_kfunc()
    for g in (gen_filter, gen_reflector, gen_router, gen_firewall, gen_cms, gen_dns, gen_quic_v4, gen_quic_v6,
              gen_ipip, gen_transcoder, gen_path_explosion, gen_tailcall, gen_rodata, gen_redirect, gen_v4_ops,
              gen_legacy, gen_cms_nfp, gen_dns_nfp, gen_quic_nfp, gen_transcoder_nfp,
              gen_path_explosion_nfp, gen_hxdp_drop, gen_hxdp_tx, gen_hxdp_redirect, gen_simple_firewall):
        g()
    import gen_mixed
    gen_mixed.generate()
    __import__("gen_jumbo").gen_jumbo(sys.modules[__name__])
    __import__("gen_map_in_map").generate()
    __import__("gen_hugemaps").main()
    __import__("gen_btf").generate(sys.modules[__name__])
    __import__("gen_records").generate()
    __import__("gen_callbacks").generate()
