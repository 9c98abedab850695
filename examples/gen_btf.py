"""Packets for the examples of BTF handed to the kernel (xdp_global_funcs) and CO-RE.

Called by gen_packets.py with its own module, whose builders it uses.
"""


def generate(g):
    small_udp = g.udp4("192.0.2.1", "192.0.2.2", 1234, 53, b"hello")
    P = [
        (g.PASS, "IPv4 UDP frame of 47 bytes: classify 1, stats[1]", g.eth(g.ETH_IP, small_udp)),
        (g.PASS, "IPv4 UDP frame of exactly 100 bytes: classify 1",
         g.eth(g.ETH_IP, g.udp4("192.0.2.1", "192.0.2.2", 1, 2, bytes(58)))),
        (g.DROP, "IPv4 UDP frame of 101 bytes: classify 2, stats[2]",
         g.eth(g.ETH_IP, g.udp4("192.0.2.1", "192.0.2.2", 1, 2, bytes(59)))),
        (g.DROP, "IPv4 UDP frame of 1000 bytes: classify 2",
         g.eth(g.ETH_IP, g.udp4("192.0.2.1", "192.0.2.2", 1, 2, bytes(958)))),
        (g.PASS, "IPv4 TCP: classify 1",
         g.eth(g.ETH_IP, g.tcp4("192.0.2.1", "192.0.2.2", 1, 2, g.TCP_SYN))),
        (g.PASS, "IPv4 ICMP: classify 0, stats[0]", g.eth(g.ETH_IP, g.icmp4("192.0.2.1", "192.0.2.2"))),
        (g.PASS, "IPv6: parse_l3 -2, stats[3]", g.eth(g.ETH_IP6, g.IPV6_UDP)),
        (g.PASS, "ARP: parse_l3 -2", g.arp()),
        (g.PASS, "IPv4 header truncated: parse_l3 -1", g.eth(g.ETH_IP, small_udp[:12])),
    ]
    g.write("xdp_global_funcs", "xdp_global_funcs", P, notes=[
        "parse_l3 and classify are global functions: the kernel loads the object only with its",
        "BTF and func_info."])

    P = [
        (g.DROP, "IPv4 UDP to port 9: dest read at the kernel's offset 2 (flavor struct), stats[2]",
         g.eth(g.ETH_IP, g.udp4("192.0.2.1", "192.0.2.2", 1234, 9, b"discard"))),
        (g.PASS, "IPv4 UDP to port 53: stats[3]", g.eth(g.ETH_IP, small_udp)),
        (g.PASS, "IPv4 UDP from port 9 to port 10: only dest counts",
         g.eth(g.ETH_IP, g.udp4("192.0.2.1", "192.0.2.2", 9, 10, b"x"))),
        (g.DROP, "IPv4 UDP with IHL 6 to port 9: header length from the ihl bitfield",
         g.eth(g.ETH_IP, g.udp4("192.0.2.1", "192.0.2.2", 1, 9, b"x", options=bytes([1, 1, 1, 0])))),
        (g.PASS, "IPv4 TCP: stats[3]", g.eth(g.ETH_IP, g.tcp4("192.0.2.1", "192.0.2.2", 1, 9, g.TCP_SYN))),
        (g.DROP, "IPv4 with IHL 4 (ihl bitfield < 5): stats[1]",
         g.eth(g.ETH_IP, g.ipv4("1.1.1.1", "2.2.2.2", 6, bytes(20), ihl=4))),
        (g.DROP, "IPv4 header truncated (shorter than the kernel's 20-byte struct iphdr)",
         g.eth(g.ETH_IP, small_udp[:19])),
        (g.DROP, "IPv4 UDP header truncated", g.eth(g.ETH_IP, small_udp[:24])),
        (g.PASS, "IPv6: bpf_core_enum_value(XDP_PASS), stats[0]", g.eth(g.ETH_IP6, g.IPV6_UDP)),
        (g.PASS, "ARP: stats[0]", g.arp()),
    ]
    g.write("xdp_core", "xdp_core", P, notes=[
        "Built against vmlinux_core.h: offsets, sizes and enum values are CO-RE relocations",
        "resolved against the running kernel's BTF when the object is read."])
