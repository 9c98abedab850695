"""Test inputs of the huge-map examples (issue 8, item 6), called from gen_packets.py.

xdp_cms_huge: xdp_cms.c built with ROWS = 4, COLS = 2^23 (2^25 counters, 128 MiB).
xdp_flow_huge: a flow table of ten million entries, seeded with a few hundred flows.
"""
import struct

from gen_packets import (DROP, ETH_IP, ETH_IP6, IPV6_UDP, PASS, cms_indices, TCP_ACK, TCP_SYN, arp, eth,
                         icmp4, ip4, ipv4, tcp4, u32, u64, udp4, write)

CMS_HUGE_ROWS = 4
CMS_HUGE_COLS = 1 << 23


def gen_cms_huge():
    rows, cols = CMS_HUGE_ROWS, CMS_HUGE_COLS
    heavy = ("10.0.0.1", "10.0.0.2", 1111, 80, 6)
    partial = ("10.0.0.3", "10.0.0.4", 2222, 443, 17)
    warm = ("10.0.0.5", "10.0.0.6", 3333, 53, 17)
    counts = {}
    for i in cms_indices(rows, *heavy, cols=cols):
        counts[i] = 15
    counts[cms_indices(rows, *partial, cols=cols)[0]] = 1000
    for i in cms_indices(rows, *warm, cols=cols):
        counts[i] = max(counts.get(i, 0), 14)
    # The last counter of the last row, so that read-back is seen to reach the end of the array.
    counts[rows * cols - 1] = 7
    maps = {"cms": [(u32(i), u32(v)) for i, v in sorted(counts.items())]}
    P = [
        (DROP, "heavy flow: every row at 15 -> estimate 16 >= threshold", eth(ETH_IP, tcp4(*heavy[:4], TCP_ACK))),
        (PASS, "flow hot in row 0 only -> min over rows stays low", eth(ETH_IP, udp4(*partial[:4], b"p"))),
        (PASS, "warm flow: every row at 14 -> estimate 15 < threshold", eth(ETH_IP, udp4(*warm[:4], b"w"))),
        (PASS, "fresh UDP flow", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 5000, 6000, b"x"))),
        (PASS, "fresh TCP flow", eth(ETH_IP, tcp4("192.0.2.1", "192.0.2.2", 5000, 6000, TCP_SYN))),
        (PASS, "ICMP (not counted)", eth(ETH_IP, icmp4("192.0.2.1", "192.0.2.2"))),
        (PASS, "IPv6 (not counted)", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP (not counted)", arp()),
        (DROP, "IHL 4 (invalid)", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 17, bytes(8), ihl=4))),
        (DROP, "UDP ports truncated (3 bytes)", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 17, b"\x01\x02\x03"))),
    ]
    write("xdp_cms_huge", "xdp_cms", P, maps, notes=[
        f"ROWS = {rows}, COLS = 2^23: {rows * cols} counters (128 MiB), threshold 16.",
        "Seeded counters sit anywhere in the array, the last one at index 2^25 - 1."])


def flow_key(saddr, daddr, sport, dport, proto):
    return ip4(saddr) + ip4(daddr) + struct.pack("!HH", sport, dport) + bytes([proto, 0, 0, 0])


def flow_val(packets, nbytes, blocked=0):
    return u64(packets) + u64(nbytes) + u32(blocked) + u32(0)


FLOW_FILLERS = 300


def gen_flow_huge():
    blocked = ("10.1.0.1", "10.2.0.2", 1000, 53, 17)
    known = ("10.1.0.3", "10.2.0.4", 40000, 443, 6)
    flows = [(flow_key(*blocked), flow_val(5, 500, blocked=1)),
             (flow_key(*known), flow_val(10, 1000))]
    # Flows of other hosts, so that the table is read back with more than a handful of entries.
    for i in range(FLOW_FILLERS):
        flows.append((flow_key(f"172.16.{i // 256}.{i % 256}", "10.9.9.9", 2000 + i, 80, 6),
                      flow_val(i + 1, 64 * (i + 1))))
    maps = {"flows": flows}
    P = [
        (DROP, "known flow marked blocked (counted)", eth(ETH_IP, udp4(*blocked[:4], b"q"))),
        (PASS, "known flow, not blocked (counted)", eth(ETH_IP, tcp4(*known[:4], TCP_ACK))),
        (PASS, "new UDP flow -> inserted", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 5000, 6000, b"x"))),
        (PASS, "new TCP flow -> inserted", eth(ETH_IP, tcp4("192.0.2.1", "192.0.2.2", 5000, 6000, TCP_SYN))),
        (PASS, "ICMP (not counted)", eth(ETH_IP, icmp4("192.0.2.1", "192.0.2.2"))),
        (PASS, "IPv6 (not counted)", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP (not counted)", arp()),
        (DROP, "IPv4 header truncated", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 17, bytes(8))[:16])),
        (DROP, "IHL 4 (invalid)", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 17, bytes(8), ihl=4))),
        (DROP, "UDP ports truncated (3 bytes)", eth(ETH_IP, ipv4("1.1.1.1", "2.2.2.2", 17, b"\x01\x02\x03"))),
    ]
    write("xdp_flow_huge", "xdp_flow_huge", P, maps, notes=[
        "flows: HASH of 10,000,000 entries (BPF_F_NO_PREALLOC), seeded with "
        f"{len(flows)} flows."])


def main():
    gen_cms_huge()
    gen_flow_huge()
