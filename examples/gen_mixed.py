"""Packets of xdp_mixed (an object with XDP, TC, tracepoint and fentry programs).

Called by gen_packets.py; uses its packet builders.
"""
from gen_packets import DROP, ETH_IP, ETH_IP6, IPV4_UDP, IPV6_UDP, PASS, arp, eth, udp4, write


def generate():
    P = [
        (PASS, "IPv4 TTL 64: tail call into mixed_ipv4, counted, passed", eth(ETH_IP, IPV4_UDP)),
        (DROP, "IPv4 TTL 1: tail call, dropped", eth(ETH_IP, udp4("192.0.2.1", "192.0.2.2", 1, 2, b"x", ttl=1))),
        (DROP, "IPv4 header truncated: tail call, dropped", eth(ETH_IP, IPV4_UDP[:10])),
        (PASS, "IPv6: no tail call, counted, passed", eth(ETH_IP6, IPV6_UDP)),
        (PASS, "ARP: no tail call, passed", arp()),
    ]
    write("xdp_mixed", "mixed_entry", P, notes=[
        "refused: mixed_unchecked",
        "mixed_stages slot 0 = mixed_ipv4 comes from the object itself (BTF .values).",
        "mixed_tc_mark, mixed_on_write and mixed_on_test_run are TC, tracepoint and fentry",
        "programs: listed by inspect, refused by run, never loaded by the kernel runner."])
