"""Packets and maps for the record, queue, DEVMAP_HASH and check_mtu examples
(xdp_events, xdp_queue); called by gen_packets.py."""

import struct

import gen_packets as g
from gen_packets import ABORTED, DROP, PASS, REDIRECT, ETH_IP, ETH_IP6


def udp(sport, dport, payload):
    return g.eth(ETH_IP, g.udp4("192.0.2.1", "192.0.2.2", sport, dport, payload))


def gen_events():
    P = [
        (PASS, "IPv4 UDP: one ring record, one perf sample with 32 frame bytes", udp(1000, 53, b"hello")),
        (PASS, "IPv6: perf sample only", g.eth(ETH_IP6, g.IPV6_UDP)),
        (PASS, "ARP (42 bytes): perf sample only", g.arp()),
        (PASS, "14-byte frame: perf sample with 14 frame bytes", g.eth(0x1234)),
        (DROP, "burst: 8 records of 448 bytes fit the 4 KiB ring, the 9th gets -EAGAIN", udp(1, 2, b"B" + bytes(20))),
        (ABORTED, "ring output with flags 4: -EINVAL", udp(1, 2, b"F")),
        (DROP, "perf sample asking for 4000 frame bytes: -EFAULT", udp(1, 2, b"L")),
        (DROP, "perf sample to slot 1, which has no event: -ENOENT", udp(1, 2, b"I")),
        (DROP, "perf sample to slot 9 of 4: -E2BIG", udp(1, 2, b"X")),
        (PASS, "reserve a copy, output the header while it is reserved, submit the copy", udp(1, 2, b"R")),
        (PASS, "reserve a copy, output the header, discard the copy", udp(1, 2, b"D")),
        (DROP, "reserve 5000 bytes of a 4 KiB ring: NULL", udp(1, 2, b"W")),
        (PASS, "ring query: available data, size, consumer and producer positions", udp(1, 2, b"Q")),
        (PASS, "IPv4 UDP without payload: perf sample only", udp(9, 9, b"")),
    ]
    g.write("xdp_events", "xdp_events", P, notes=[
        "Records (ring buffer `events`, perf event array `samples`) are compared between",
        "the interpreter and the kernel by the differential test."])


def gen_queue():
    arg = lambda v: struct.pack("<I", v & g.M32)
    P = [
        (DROP, "push to the full queue (flags 0): -E2BIG", udp(1, 1, arg(0xAA))),
        (PASS, "push to the full queue with BPF_EXIST: the oldest is dropped", udp(1, 2, arg(0xAB))),
        (PASS, "pop the queue: 0x11111111", udp(1, 3, arg(0))),
        (PASS, "peek the queue: 0x11111111 stays", udp(1, 4, arg(0))),
        (PASS, "push to the empty stack", udp(1, 5, arg(0xCD))),
        (PASS, "push to the empty stack with BPF_EXIST", udp(1, 6, arg(0xCE))),
        (DROP, "pop the empty stack: -ENOENT, value zeroed", udp(1, 7, arg(0))),
        (DROP, "peek the empty stack: -ENOENT", udp(1, 8, arg(0))),
        (ABORTED, "push with BPF_NOEXIST: -EINVAL", udp(1, 9, arg(1))),
        (REDIRECT, "redirect through DEVMAP_HASH key 7 (ifindex 1)", udp(7, 10, arg(0))),
        (PASS, "redirect through DEVMAP_HASH key 8: no entry, falls back to XDP_PASS", udp(8, 10, arg(0))),
        (PASS, "check_mtu on the ingress device (lo, MTU 65536), len_diff 0", udp(1, 11, arg(0))),
        (DROP, "check_mtu with len_diff 70000: fragmentation needed", udp(1, 11, arg(70000))),
        (PASS, "check_mtu with len_diff -100", udp(1, 11, arg(-100))),
        (PASS, "check_mtu ifindex 1 with an L3 length of 1500", udp(1, 12, arg(1500))),
        (DROP, "check_mtu ifindex 1 with an L3 length of 65537: 65551 > 65550", udp(1, 12, arg(65537))),
        (DROP, "check_mtu on ifindex 999: -ENODEV", udp(1, 13, arg(0))),
        (DROP, "check_mtu with flags 1: -EINVAL", udp(1, 14, arg(0))),
        (PASS, "locked update of counts[0] (BPF_F_LOCK): frames 9, bytes 18", udp(1, 15, arg(9))),
        (PASS, "locked update of locked[3] with BPF_EXIST: rewritten in place", udp(1, 16, arg(3))),
        (DROP, "locked update of locked[5] with BPF_EXIST: no such key, -ENOENT", udp(1, 16, arg(5))),
        (PASS, "locked update of locked[5] (BPF_F_LOCK): inserted", udp(1, 17, arg(5))),
        (DROP, "BPF_F_LOCK on results, whose values hold no lock: -EINVAL", udp(1, 18, arg(1))),
        (PASS, "UDP port 19: no command", udp(1, 19, arg(0))),
        (PASS, "TCP: not a command", g.eth(ETH_IP, g.tcp4("10.0.0.1", "10.0.0.2", 1, 2, g.TCP_SYN))),
    ]
    maps = {
        "fifo": [(b"", struct.pack("<I", v)) for v in (0x11111111, 0x22222222, 0x33333333, 0x44444444)],
        "ports": [(struct.pack("<I", 7), struct.pack("<I", 1))],
        # struct locked_count {bpf_spin_lock; u32 frames; u64 bytes}: the lock bytes given here
        # are not stored (the kernel copies values around the lock).
        "locked": [(struct.pack("<I", k), struct.pack("<IIQ", 0xFFFFFFFF, k, 100 * k)) for k in (1, 3)],
        "counts": [(struct.pack("<I", 0), struct.pack("<IIQ", 0x01010101, 2, 50))],
    }
    g.write("xdp_queue", "xdp_queue", P, maps, notes=[
        "The queue `fifo` starts full (4 values), the stack `lifo` empty."])


def generate():
    gen_events()
    gen_queue()
