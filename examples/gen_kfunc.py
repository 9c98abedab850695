"""Packets of xdp_kfunc (kfunc calls and __kconfig externs); called by gen_packets.py."""
from gen_packets import DROP, PASS, TX, eth, write

ETH_EXPERIMENTAL = 0x88B5  # IEEE 802 local experimental EtherType


def body(count, data):
    """struct result: count, 3 pad, sum, reversed_error, kernel_version, missing_option, 32 bytes."""
    data = bytes(data)
    assert len(data) <= 32
    return bytes([count]) + bytes(3 + 16) + data + bytes(32 - len(data))


def gen_kfunc():
    P = [
        (DROP, "6 of 1..8 added: 21 is odd", eth(ETH_EXPERIMENTAL, body(6, range(1, 9)))),
        (TX, "4 of 1..8 added: 10 is even", eth(ETH_EXPERIMENTAL, body(4, range(1, 9)))),
        (PASS, "no byte added: sum 0", eth(ETH_EXPERIMENTAL, body(0, range(1, 9)))),
        (TX, "count 40 capped at 32: 32 * 0xff = 8160", eth(ETH_EXPERIMENTAL, body(40, [0xFF] * 32))),
        (DROP, "count 31 of bytes 1: 31 is odd", eth(ETH_EXPERIMENTAL, body(31, [1] * 32))),
        (PASS, "count 200 of zero bytes: sum 0", eth(ETH_EXPERIMENTAL, body(200, []))),
        (PASS, "frame one byte short of the 52-byte header", eth(ETH_EXPERIMENTAL, body(6, range(1, 9))[:51])),
    ]
    write("xdp_kfunc", "xdp_kfunc", P, notes=[
        "Both engines write the sum, bpf_iter_num_new's -EINVAL for a reversed range,",
        "LINUX_KERNEL_VERSION of the running kernel and 0 for a weak CONFIG_ extern no kernel has",
        "into the packet."])
