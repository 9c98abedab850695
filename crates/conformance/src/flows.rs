//! Inputs of the flow-table example `examples/xdp_flow_huge.c` (a hash map of ten million flows)
//! that its test and its benchmark build in bulk: flow keys, the frames of a flow, and the
//! sources of the seeded flows.

/// A flow key of `xdp_flow_huge.c` (addresses and ports in network order, as on the wire).
pub fn flow_key(saddr: [u8; 4], daddr: [u8; 4], sport: u16, dport: u16, proto: u8) -> Vec<u8> {
    let mut key = Vec::with_capacity(16);
    key.extend(saddr);
    key.extend(daddr);
    key.extend(sport.to_be_bytes());
    key.extend(dport.to_be_bytes());
    key.extend([proto, 0, 0, 0]);
    key
}

/// An Ethernet + IPv4 + UDP frame (checksums zero: the program does not check them).
pub fn udp_frame(saddr: [u8; 4], daddr: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut p = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    p.extend([0x45, 0, 0, 29, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    p.extend(saddr);
    p.extend(daddr);
    p.extend(sport.to_be_bytes());
    p.extend(dport.to_be_bytes());
    p.extend([0, 9, 0, 0, b'x']);
    p
}

/// The `i`-th seeded flow's source address and port.
pub fn seeded_source(i: u32) -> ([u8; 4], u16) {
    let b = i.to_be_bytes();
    ([172, b[1], b[2], b[3]], 1024 + (i % 60_000) as u16)
}
