"""Test inputs of xdp_map_in_map (maps of maps), called from gen_packets.py.

xdp_map_in_map.maps.json uses the map-of-maps shape of the maps JSON: an outer
map's entry names the inner map at its key ({"key": hex, "inner": name}); inner
maps are listed under their own names like any map. The seed fills the three
backend pools, adds services 80 (pool_web) and 8080 (pool_spare) to svc_pools
beside the object's static 53 (pool_dns), and rearranges vip_pools: slot 1
(pool_dns in the object) now holds pool_spare, and pool_dns moves to slot 3.
"""
import json
import os
import struct


def backend(addr):
    """struct backend: address in network order, hit counter 0."""
    return bytes(int(x) for x in addr.split(".")) + bytes(4)


def generate():
    import gen_packets as g

    u32 = g.u32
    pools = {
        "pool_web": ["10.0.0.1", "10.0.0.2", None, "10.0.0.4"],
        "pool_dns": ["10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4"],
        "pool_spare": [None, "10.0.2.2", None, None],
    }
    maps = {
        name: [{"key": u32(i).hex(), "value": backend(a).hex()} for i, a in enumerate(addrs) if a]
        for name, addrs in pools.items()
    }
    maps["svc_pools"] = [
        {"key": u32(80).hex(), "inner": "pool_web"},
        {"key": u32(8080).hex(), "inner": "pool_spare"},
    ]
    maps["vip_pools"] = [
        {"key": u32(1).hex(), "inner": "pool_spare"},
        {"key": u32(3).hex(), "inner": "pool_dns"},
    ]
    client, vip = "198.51.100.7", "192.0.2."
    P = [
        (g.TX, "UDP to port 53: svc_pools[53] = pool_dns (static), sport 1000 -> slot 0 10.0.1.1",
         g.eth(g.ETH_IP, g.udp4(client, vip + "10", 1000, 53, b"query"))),
        (g.TX, "TCP to port 80: svc_pools[80] = pool_web (seeded), sport 40001 -> slot 1 10.0.0.2",
         g.eth(g.ETH_IP, g.tcp4(client, vip + "10", 40001, 80, g.TCP_SYN))),
        (g.DROP, "TCP to port 80, sport 40002 -> pool_web slot 2 unused (address 0)",
         g.eth(g.ETH_IP, g.tcp4(client, vip + "10", 40002, 80, g.TCP_SYN))),
        (g.TX, "UDP to port 8080: svc_pools[8080] = pool_spare, sport 1 -> slot 1 10.0.2.2",
         g.eth(g.ETH_IP, g.udp4(client, vip + "10", 1, 8080, b"x"))),
        (g.DROP, "UDP to port 8080, sport 0 -> pool_spare slot 0 unused",
         g.eth(g.ETH_IP, g.udp4(client, vip + "10", 0, 8080, b"x"))),
        (g.TX, "UDP to port 9999 (no service), VIP .4: vip_pools[0] = pool_web (static), sport 3 -> 10.0.0.4",
         g.eth(g.ETH_IP, g.udp4(client, vip + "4", 3, 9999, b"x"))),
        (g.TX, "UDP to port 9999, VIP .5: vip_pools[1] = pool_spare (seed replaced pool_dns), sport 1 -> 10.0.2.2",
         g.eth(g.ETH_IP, g.udp4(client, vip + "5", 1, 9999, b"x"))),
        (g.DROP, "UDP to port 9999, VIP .6: vip_pools[2] empty",
         g.eth(g.ETH_IP, g.udp4(client, vip + "6", 1, 9999, b"x"))),
        (g.TX, "UDP to port 9999, VIP .7: vip_pools[3] = pool_dns (moved by the seed), sport 2 -> 10.0.1.3",
         g.eth(g.ETH_IP, g.udp4(client, vip + "7", 2, 9999, b"x"))),
        (g.PASS, "ICMP: neither UDP nor TCP", g.eth(g.ETH_IP, g.icmp4(client, vip + "4"))),
        (g.PASS, "IPv6", g.eth(g.ETH_IP6, g.IPV6_UDP)),
        (g.PASS, "IPv4 with options (IHL 6)",
         g.eth(g.ETH_IP, g.udp4(client, vip + "4", 1, 53, b"x", options=bytes([1, 1, 1, 0])))),
        (g.DROP, "UDP ports truncated", g.eth(g.ETH_IP, g.ipv4(client, vip + "4", 17, b"\x00\x35"))),
        (g.DROP, "IPv4 header truncated", g.eth(g.ETH_IP, bytes([0x45, 0]))),
    ]
    # g.write writes "value" entries only: it writes the packets (its maps argument only makes
    # the header mention the maps file), and the maps file in the map-of-maps shape follows.
    g.write("xdp_map_in_map", "xdp_map_in_map", P, {"see below": []}, notes=[
        "Outer maps (svc_pools, vip_pools) name their inner maps: see gen_map_in_map.py."])
    with open(os.path.join(g.OUT, "xdp_map_in_map.maps.json"), "w") as f:
        json.dump(maps, f, indent=1)
        f.write("\n")
