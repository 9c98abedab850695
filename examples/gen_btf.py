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
