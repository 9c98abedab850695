//! Test packets for the differential checks of an optimized program against its original:
//! random bytes, and crafted frames (Ethernet, VLAN, ARP, IPv4 and IPv6 with TCP, UDP, ICMP and
//! others, with random header fields, options, and lengths from runts to jumbo frames) so that
//! the branches a parser takes on real traffic are all exercised.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `count` packets from `seed`: about a tenth random bytes, the rest crafted frames.
pub fn generate(count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|i| {
            if i % 10 == 9 {
                let len = *[14usize, 20, 34, 42, 54, 60, 64, 128, 512, 1500]
                    .get(rng.gen_range(0..10))
                    .unwrap_or(&64);
                (0..len).map(|_| rng.gen()).collect()
            } else {
                frame(&mut rng)
            }
        })
        .collect()
}

/// A random value that is often one of `common`.
fn sometimes<T: Copy>(rng: &mut StdRng, common: &[T], other: impl FnOnce(&mut StdRng) -> T) -> T {
    if !common.is_empty() && rng.gen_bool(0.8) {
        common[rng.gen_range(0..common.len())]
    } else {
        other(rng)
    }
}

fn frame(rng: &mut StdRng) -> Vec<u8> {
    let mut p: Vec<u8> = Vec::with_capacity(128);
    let macs: [[u8; 6]; 3] = [[0xff; 6], [0x02, 0, 0, 0, 0, 1], [0x02, 0, 0, 0, 0, 2]];
    for _ in 0..2 {
        let mac = sometimes(rng, &macs, |r| r.gen());
        p.extend_from_slice(&mac);
    }
    if rng.gen_bool(0.1) {
        p.extend_from_slice(&[0x81, 0x00]);
        p.extend_from_slice(&rng.gen::<u16>().to_be_bytes());
    }
    let ethertype: u16 = sometimes(
        rng,
        &[0x0800, 0x0800, 0x0800, 0x86dd, 0x86dd, 0x0806],
        |r| r.gen(),
    );
    p.extend_from_slice(&ethertype.to_be_bytes());
    match ethertype {
        0x0800 => ipv4(rng, &mut p),
        0x86dd => ipv6(rng, &mut p),
        0x0806 => {
            p.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, sometimes(rng, &[1, 2], |r| r.gen())]);
            p.extend((0..20).map(|_| rng.gen::<u8>()));
        }
        _ => p.extend((0..rng.gen_range(0..64)).map(|_| rng.gen::<u8>())),
    }
    // Sometimes cut short, sometimes padded: the length checks get both answers.
    if rng.gen_bool(0.1) {
        let cut = rng.gen_range(14..=p.len().max(14));
        p.truncate(cut);
    } else if rng.gen_bool(0.1) {
        let pad = sometimes(rng, &[64usize, 512, 1400], |r| r.gen_range(0..3000));
        p.extend((0..pad).map(|_| rng.gen::<u8>()));
    }
    p
}

fn l4(rng: &mut StdRng, proto: u8, p: &mut Vec<u8>) {
    let port = |r: &mut StdRng| sometimes(r, &[53u16, 80, 443, 4433, 22, 8080, 9000], |r| r.gen());
    match proto {
        6 => {
            p.extend_from_slice(&port(rng).to_be_bytes());
            p.extend_from_slice(&port(rng).to_be_bytes());
            p.extend((0..8).map(|_| rng.gen::<u8>()));
            let words = sometimes(rng, &[5u8, 5, 8], |r| r.gen_range(0..16));
            p.push(words << 4);
            p.push(sometimes(rng, &[0x02, 0x10, 0x12, 0x18, 0x11, 0x04], |r| {
                r.gen()
            }));
            p.extend((0..6).map(|_| rng.gen::<u8>()));
            p.extend((0..(words.saturating_sub(5) as usize * 4)).map(|_| rng.gen::<u8>()));
        }
        17 => {
            p.extend_from_slice(&port(rng).to_be_bytes());
            p.extend_from_slice(&port(rng).to_be_bytes());
            p.extend_from_slice(&rng.gen_range(8u16..600).to_be_bytes());
            p.extend_from_slice(&[0, 0]);
        }
        1 | 58 => {
            p.push(sometimes(rng, &[8u8, 0, 128, 129], |r| r.gen()));
            p.extend((0..7).map(|_| rng.gen::<u8>()));
        }
        _ => {}
    }
    let payload = sometimes(rng, &[0usize, 8, 32, 64], |r| r.gen_range(0..256));
    p.extend((0..payload).map(|_| rng.gen::<u8>()));
}

fn ipv4(rng: &mut StdRng, p: &mut Vec<u8>) {
    let ihl = sometimes(rng, &[5u8, 5, 5, 6], |r| r.gen_range(0..16));
    let proto = sometimes(rng, &[6u8, 17, 17, 1, 4, 47], |r| r.gen());
    let start = p.len();
    p.push(0x40 | ihl);
    p.push(rng.gen());
    p.extend_from_slice(&rng.gen_range(20u16..1500).to_be_bytes());
    p.extend_from_slice(&rng.gen::<u16>().to_be_bytes());
    p.extend_from_slice(&sometimes(rng, &[0u16, 0x4000], |r| r.gen()).to_be_bytes());
    p.push(sometimes(rng, &[64u8, 1, 0, 255], |r| r.gen()));
    p.push(proto);
    p.extend_from_slice(&[0, 0]);
    for _ in 0..2 {
        let a: [u8; 4] = sometimes(
            rng,
            &[[10, 0, 0, 1], [10, 0, 0, 2], [192, 168, 1, 1]],
            |r| r.gen(),
        );
        p.extend_from_slice(&a);
    }
    p.extend((0..(ihl.saturating_sub(5) as usize * 4)).map(|_| rng.gen::<u8>()));
    let sum = checksum(&p[start..]);
    if let Some(c) = p.get_mut(start + 10..start + 12) {
        c.copy_from_slice(&sum.to_be_bytes());
    }
    l4(rng, proto, p);
}

fn ipv6(rng: &mut StdRng, p: &mut Vec<u8>) {
    let next = sometimes(rng, &[6u8, 17, 17, 58, 0, 43, 44], |r| r.gen());
    p.extend_from_slice(&[0x60, 0, 0, 0]);
    p.extend_from_slice(&rng.gen_range(0u16..1500).to_be_bytes());
    p.push(next);
    p.push(sometimes(rng, &[64u8, 1, 0], |r| r.gen()));
    p.extend((0..32).map(|_| rng.gen::<u8>()));
    let mut proto = next;
    // An extension header or two in front of the transport header.
    while matches!(proto, 0 | 43 | 44 | 60) && rng.gen_bool(0.8) {
        proto = sometimes(rng, &[6u8, 17, 58], |r| r.gen());
        p.push(proto);
        p.push(0);
        p.extend((0..6).map(|_| rng.gen::<u8>()));
    }
    l4(rng, proto, p);
}

/// The Internet checksum of `bytes`.
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += word as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
