"""Packets of xdp_jumbo (multi-buffer XDP): frames around the 3,520-byte linear limit, across
fragment boundaries, up to the largest frame BPF_PROG_TEST_RUN takes (3,520 + 17 x 4,096 bytes).

Called from gen_packets.py; uses its builders and writer.
"""
import struct

LINEAR = 3520          # bytes of a frame in the linear part of the buffer
FRAG = 4096            # bytes of one fragment page
MAX_FRAME = LINEAR + 17 * FRAG
MAGIC, STAMP = b"JMBO", b"JMB2"
PRIO_OFFSET, HOPS_OFFSET = 4000, 3516


def gen_jumbo(gp):
    def frame(total, trailer=MAGIC, prio=None, hops=None, etype=0x88B5):
        body = bytearray((i * 7 + 3) & 0xFF for i in range(total - 14 - len(trailer)))
        f = bytearray(gp.eth(etype, bytes(body))) + trailer
        if prio is not None:
            f[PRIO_OFFSET] = prio
        if hops is not None:
            f[HOPS_OFFSET:HOPS_OFFSET + 8] = struct.pack("!Q", hops)
        assert len(f) == total
        return bytes(f)

    def grows(total):
        """Whether adjust_tail(+8) after adjust_tail(-4) finds room, as the kernel decides it."""
        if total <= LINEAR:
            return total - 4 + 8 <= LINEAR
        frags = total - LINEAR - 4       # fragment bytes after the trim
        if frags <= 0:                   # every fragment dropped: linear tailroom
            return LINEAR + frags + 8 <= LINEAR
        last = frags % FRAG or FRAG
        return last + 8 <= FRAG

    def expect(total, prio=None):
        if total - 4 > 0xFFFF:           # bpf_xdp_load_bytes takes offsets up to 0xffff
            return gp.ABORTED
        if prio == 0xFF and total > PRIO_OFFSET + 4:
            return gp.DROP
        if not grows(total):
            return gp.PASS
        return gp.DROP if total > 9000 else gp.TX

    cases = [
        (60, "60 bytes, single buffer: trailer replaced (tailroom)"),
        (3512, "3,512 bytes, single buffer: trimmed to 3,508, grown to 3,516 within the tailroom"),
        (3520, "3,520 bytes, the whole linear part: no tailroom for the new trailer"),
        (3521, "3,521 bytes, one fragment byte: the trim drops the fragment and 3 linear bytes, then no room"),
        (3522, "3,522 bytes: trailer read across the end of the linear part; no room after the trim"),
        (3540, "3,540 bytes: trailer in the fragment, hop counter straddles the linear end"),
        (5000, "5,000 bytes: priority byte at 4,000 in the first fragment, new trailer written there"),
        (7616, "7,616 bytes: first fragment full, no room in its page after the trim"),
        (7620, "7,620 bytes: the trim drops the second fragment (4 bytes), first one full: no room"),
        (7621, "7,621 bytes: new trailer written across the first and second fragments"),
        (9000, "9,000 bytes, a jumbo frame: XDP_TX"),
        (9001, "9,001 bytes, above the jumbo MTU: XDP_DROP after rewriting"),
        (65539, "65,539 bytes: trailer at offset 65,535, the last bpf_xdp_load_bytes reaches; above the MTU"),
        (65540, "65,540 bytes: trailer at offset 65,536, past what bpf_xdp_load_bytes takes (-EFAULT)"),
        (MAX_FRAME, "73,152 bytes, every fragment full, the largest frame test_run takes: -EFAULT"),
    ]
    P = []
    for total, why in cases:
        P.append((expect(total), why, frame(total)))
    P += [
        (gp.DROP, "5,000 bytes, priority byte 0xff at offset 4,000", frame(5000, prio=0xFF)),
        (gp.DROP, "4,005 bytes, priority byte 0xff at offset 4,000 (the shortest frame read there)",
         frame(4005, prio=0xFF)),
        (gp.DROP, "5,000 bytes with a wrong trailer", frame(5000, trailer=b"JMBX")),
        (gp.DROP, "3,520 bytes with a wrong trailer", frame(3520, trailer=b"XXXX")),
        (gp.TX, "6,000 bytes, hop counter 0xffffffff carries into the upper word", frame(6000, hops=0xFFFFFFFF)),
        (gp.DROP, "21 bytes: shorter than header and trailers", gp.eth(0x88B5, b"abc" + MAGIC)),
        (gp.PASS, "9,000-byte IPv4 frame: not EtherType 0x88B5", frame(9000, etype=gp.ETH_IP)),
        (gp.PASS, "60-byte IPv4 frame", gp.eth(gp.ETH_IP, gp.IPV4_UDP)),
    ]
    for e, _, f in P:
        assert e in (gp.DROP, gp.PASS, gp.TX, gp.ABORTED)
    gp.write("xdp_jumbo", "xdp_jumbo (section xdp.frags)", P, notes=[
        "Frames above 3,520 bytes are multi-buffer: the rest of the frame is in 4,096-byte fragments.",
        "The new trailer is 'JMB2' + the original length (big-endian); the hop counter at 3,516 is a",
        "big-endian u64 incremented in frames of at least 3,528 bytes."])
