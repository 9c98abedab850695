"""Packets and maps of the examples of helpers with callbacks: xdp_bpf_loop (bpf_loop),
xdp_for_each and xdp_for_each_hash (bpf_for_each_map_elem over arrays and hash maps). Called from
gen_packets.py."""
import struct

from gen_packets import (ABORTED, DROP, ETH_IP, ETH_IP6, PASS, TX, arp, eth, ext_frag, ext_opt,
                         ext_routing, icmp4, ipv4, ipv6, tcp4, u32, u64, udp4, udp6_payload, write)

NEXTHDR_HOP, NEXTHDR_ROUTING, NEXTHDR_FRAGMENT, NEXTHDR_DEST, NEXTHDR_ICMP6 = 0, 43, 44, 60, 58
A6, B6 = "2001:db8::1", "2001:db8::2"


def v6(first_nh, ext, upper=b""):
    """An IPv6 packet: extension headers `ext` (first of type `first_nh`), then `upper`."""
    return eth(ETH_IP6, ipv6(A6, B6, first_nh, ext + upper))


def udp6(ext=b""):
    return udp6_payload(A6, B6, 1234, 5678, b"hi", ext=ext)


def loop_args(nr_loops, flags, limit):
    return eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 40000, 9, u32(nr_loops) + u32(flags) + u32(limit)))


def gen_bpf_loop():
    icmp6 = bytes([128, 0, 0, 0, 0, 1, 0, 1])
    P = [
        (PASS, "IPv6 UDP, no extension header: one callback call finds UDP", v6(17, b"", udp6())),
        (PASS, "IPv6 hop-by-hop + destination options, then UDP: two skipped",
         v6(NEXTHDR_HOP, ext_opt(NEXTHDR_DEST) + ext_opt(17, 1), udp6())),
        (TX, "IPv6 hop-by-hop + routing + fragment, then ICMPv6: three skipped",
         v6(NEXTHDR_HOP, ext_opt(NEXTHDR_ROUTING) + ext_routing(NEXTHDR_FRAGMENT, 2)
            + ext_frag(NEXTHDR_ICMP6), icmp6)),
        (PASS, "IPv6, five destination options headers then UDP: the sixth call finds UDP",
         v6(NEXTHDR_DEST, b"".join(ext_opt(NEXTHDR_DEST) for _ in range(4)) + ext_opt(17), udp6())),
        (DROP, "IPv6, six destination options headers: all MAX_EXT calls skip, the walk is unfinished",
         v6(NEXTHDR_DEST, b"".join(ext_opt(NEXTHDR_DEST) for _ in range(5)) + ext_opt(17), udp6())),
        (DROP, "IPv6 hop-by-hop of 40 bytes announcing destination options past the packet's end",
         v6(NEXTHDR_HOP, bytes([NEXTHDR_DEST, 4]) + bytes(6))),
        (DROP, "IPv6 header truncated", eth(ETH_IP6, bytes(20))),
        (TX, "IPv4 UDP port 9: bpf_loop(5, flags 0, limit 1000) returns 5, sum 10", loop_args(5, 0, 1000)),
        (TX, "IPv4 UDP port 9: bpf_loop(100, limit 20) stops at index 6 (sum 21), returns 7",
         loop_args(100, 0, 20)),
        (TX, "IPv4 UDP port 9: bpf_loop(0) calls nothing and returns 0", loop_args(0, 0, 0)),
        (ABORTED, "IPv4 UDP port 9: flags 1, bpf_loop returns -EINVAL", loop_args(5, 1, 1000)),
        (ABORTED, "IPv4 UDP port 9: nr_loops 2^23 + 1, bpf_loop returns -E2BIG",
         loop_args((1 << 23) + 1, 0, 0)),
        (TX, "IPv4 UDP port 9: nr_loops 2^23 (allowed), limit 0 stops at index 1, returns 2",
         loop_args(1 << 23, 0, 0)),
        (TX, "IPv4 UDP port 9: bpf_loop(3000) runs to the end, sum 4498500",
         loop_args(3000, 0, 0xFFFFFFFF)),
        (PASS, "IPv4 UDP port 9 with 8 payload bytes: too short for the arguments",
         eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 40000, 9, bytes(8)))),
        (PASS, "IPv4 UDP port 10", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 40000, 10, bytes(12)))),
        (PASS, "ARP", arp()),
    ]
    write("xdp_bpf_loop", "xdp_bpf_loop", P, notes=[
        "ext_count[0] counts skipped extension headers; loop_stats[0] holds bpf_loop's result,",
        "loop_stats[1] the sum of the indexes the callback saw."])


def rule(port, proto, action, hits=0):
    return struct.pack("<HBBI", port, proto, action, hits)


def gen_for_each():
    udp, tcp = 17, 6
    rules = [(u32(1), rule(53, udp, 1)), (u32(2), rule(80, tcp, 3, hits=7)),
             (u32(4), rule(53, tcp, 2)), (u32(6), rule(443, tcp, 1)),
             (u32(7), rule(443, tcp, 3))]
    maps = {"port_rules": rules}

    def u(dport):
        return eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 40000, dport, b"q"))

    def t(dport):
        return eth(ETH_IP, tcp4("192.0.2.1", "192.0.2.2", 40000, dport, 2))

    P = [
        (DROP, "UDP port 53 matches rule 1 (XDP_DROP): two elements visited", u(53)),
        (TX, "TCP port 80 matches rule 2 (XDP_TX), its hits 7 -> 8", t(80)),
        (PASS, "TCP port 53 matches rule 4 (XDP_PASS), not rule 1 (UDP)", t(53)),
        (DROP, "TCP port 443 matches rule 6 first (XDP_DROP), rule 7 is not visited", t(443)),
        (PASS, "UDP port 443: no rule, all 8 elements visited", u(443)),
        (TX, "ICMP, TOS 0: count_rule visits all 8 and counts 5 rules",
         eth(ETH_IP, icmp4("192.0.2.1", "192.0.2.2"))),
        (ABORTED, "ICMP, TOS 4: flags 4, bpf_for_each_map_elem returns -EINVAL",
         eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 1, bytes([8, 0, 0xf7, 0xff, 0, 0, 0, 0]), tos=4))),
        (DROP, "TCP ports truncated", eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 6, b"\x01"))),
        (PASS, "GRE (protocol 47)", eth(ETH_IP, ipv4("192.0.2.1", "192.0.2.2", 47, bytes(8)))),
        (PASS, "ARP", arp()),
    ]
    write("xdp_for_each", "xdp_for_each", P, maps, notes=[
        "fe_stats[0] holds the elements visited, [1] the matching index (0xffffffff: none),",
        "[2] the rules count_rule counted, [3] that helper call's result."])


def flow_key(addr, port):
    """struct flow {__be32 saddr; __be16 sport; u16 pad}."""
    return bytes(int(x) for x in addr.split(".")) + struct.pack("!H", port) + bytes(2)


def gen_for_each_hash():
    flows = [(flow_key(f"10.0.{i // 8}.{i * 7 % 251 + 1}", 1000 + 37 * i), u64(i * 3 + (i % 4 == 1)))
             for i in range(20)]
    macs = [(bytes([0x02, 0, 0xaa, i, 0x10 * i, 7]), u32(100 + i)) for i in range(5)]
    cpus = [(u32(k), u64(k + 1)) for k in (5, 9, 300, 70000, 2)]
    maps = {"fh_flows": flows, "fh_macs": macs, "fh_cpu": cpus}

    def op(n, arg=0, src="10.0.0.8", sport=1037, mac=None, payload=None):
        body = u32(arg) if payload is None else payload
        frame = udp4(src, "192.0.2.2", sport, 7000 + n, body)
        return eth(ETH_IP, frame) if mac is None else eth(ETH_IP, frame, src=mac)

    P = [
        (TX, "op 0: walk all 20 flows in bucket order, newest first in a bucket", op(0)),
        (TX, "op 1: a new flow 10.9.9.9:5 is linked at the head of its bucket, then all 21 walked",
         op(1, src="10.9.9.9", sport=5)),
        (TX, "op 1: the seeded flow 10.0.0.8:1037 is replaced: it becomes the newest of its bucket",
         op(1, src="10.0.0.8", sport=1037)),
        (TX, "op 2: the walk deletes every flow with an odd value and goes on past it", op(2)),
        (TX, "op 3: the walk stops at flow 10.0.1.57 (argument), not visiting the rest",
         op(3, arg=int.from_bytes(bytes([10, 0, 1, 57]), "little"))),
        (TX, "op 3: no flow has address 1.2.3.4: all 20 visited", op(3, arg=0x04030201)),
        (TX, "op 4: the source MAC 02:00:aa:02:20:07 is replaced in the LRU map, then 5 walked",
         op(4, mac=bytes([0x02, 0, 0xaa, 2, 0x20, 7]))),
        (TX, "op 4: a new MAC 02:00:aa:09:09:09 is inserted into the LRU map, then 6 walked",
         op(4, mac=bytes([0x02, 0, 0xaa, 9, 9, 9]))),
        (TX, "op 5: per-CPU key 300 rewritten in place: the order does not change", op(5, arg=300)),
        (TX, "op 5: per-CPU key 11 inserted, then 6 walked", op(5, arg=11)),
        (ABORTED, "op 6: flags 1, bpf_for_each_map_elem returns -EINVAL", op(6)),
        (DROP, "op 0 with a 2-byte payload: the argument is missing", op(0, payload=b"ab")),
        (PASS, "UDP port 7007: no operation", op(7)),
        (PASS, "ARP", arp()),
    ]
    write("xdp_for_each_hash", "xdp_for_each_hash", P, maps, notes=[
        "fh_order[i] holds the i-th key visited (flows: saddr ^ sport << 16; MACs: bytes 2..5),",
        "fh_stats[0] the helper's result, fh_stats[1] the sum of the values seen."])


def generate():
    gen_bpf_loop()
    gen_for_each()
    gen_for_each_hash()
