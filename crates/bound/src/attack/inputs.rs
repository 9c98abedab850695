//! Inputs that attack refutations: random packets shaped like the traffic XDP programs parse,
//! and mutations of inputs the solver built to reach a refuted decision.
//!
//! Random bytes alone rarely get past an Ethernet type check, so a random packet is built layer
//! by layer (Ethernet, up to two VLAN tags, IPv4 or IPv6, TCP, UDP or ICMP, a payload), each
//! field usually well-formed and sometimes drawn from the program's own constants or left random.
//! A mutation changes a few bytes of a guide's packet (bit flips, random bytes, a constant of the
//! program written at a random place in either byte order, a shorter or longer packet, now and
//! then one padded with zeros to a random length up to what a test-run buffer holds) and, now and
//! then, a byte of one of its map values.

use linerate_bpf::contents::MapSeed;
use linerate_bpf::insn::{Instruction, Operand};
use linerate_bpf::object::BPF_F_RDONLY_PROG;
use linerate_bpf::{MapType, Object};
use rand::rngs::StdRng;
use rand::Rng;

/// Shortest packet `BPF_PROG_TEST_RUN` (and the interpreter) accepts.
const ETH_HLEN: usize = 14;
/// Longest packet generated: the most a single test-run buffer holds (a walk to the packet's end
/// may need more than an Ethernet frame to run its loop out).
const MAX_PACKET: usize = linerate_bpf::facts::test_run_buffer::MAX_DATA as usize;

/// Values worth writing into packets: the program's comparison and store immediates, and the
/// protocol numbers parsers test.
pub struct Dictionary {
    values: Vec<u64>,
}

/// Ethernet types, IP protocols and ports parsers commonly test.
const PROTOCOL_VALUES: [u64; 20] = [
    0x0800, 0x86dd, 0x8100, 0x88a8, 0x0806, 1, 6, 17, 41, 47, 58, 4, 53, 80, 443, 4789, 6081, 22,
    0xffff, 0,
];

impl Dictionary {
    /// The constants of every program of `object` plus [`PROTOCOL_VALUES`].
    pub fn of(object: &Object) -> Dictionary {
        let mut values: Vec<u64> = PROTOCOL_VALUES.to_vec();
        for program in &object.programs {
            for (_, insn) in program.decode().unwrap_or_default() {
                match insn {
                    Instruction::Jump {
                        src: Operand::Imm(imm),
                        ..
                    }
                    | Instruction::Store {
                        src: Operand::Imm(imm),
                        ..
                    } => values.push(imm as i64 as u64),
                    _ => {}
                }
            }
        }
        values.sort_unstable();
        values.dedup();
        Dictionary { values }
    }

    fn pick(&self, rng: &mut StdRng) -> u64 {
        self.values[rng.gen_range(0..self.values.len())]
    }
}

/// `value`'s low `width` bytes, in network order or (`little`) the host's.
fn bytes_of(value: u64, width: usize, little: bool) -> Vec<u8> {
    let be = value.to_be_bytes();
    let mut out = be[8 - width..].to_vec();
    if little {
        out.reverse();
    }
    out
}

/// A field of `width` bytes: usually `usual`, sometimes a constant of the program, sometimes
/// random.
fn field(rng: &mut StdRng, dict: &Dictionary, width: usize, usual: u64) -> Vec<u8> {
    let value = match rng.gen_range(0..10) {
        0..=6 => usual,
        7 | 8 => dict.pick(rng),
        _ => rng.gen(),
    };
    bytes_of(value, width, false)
}

/// A random packet, shaped like traffic most of the time.
pub fn random_packet(rng: &mut StdRng, dict: &Dictionary) -> Vec<u8> {
    if rng.gen_range(0..10) == 0 {
        let len = rng.gen_range(ETH_HLEN..=128);
        return (0..len).map(|_| rng.gen()).collect();
    }
    let mut p: Vec<u8> = (0..12).map(|_| rng.gen()).collect();
    let tags = rng.gen_range(0..=2u8).saturating_sub(rng.gen_range(0..=1));
    for _ in 0..tags {
        p.extend(field(rng, dict, 2, 0x8100));
        let vlan = rng.gen_range(0..4096);
        p.extend(field(rng, dict, 2, vlan));
    }
    let ipv6 = rng.gen_bool(0.35);
    p.extend(field(rng, dict, 2, if ipv6 { 0x86dd } else { 0x0800 }));
    let protocol = [6u64, 17, 1, 58, 47, 4][rng.gen_range(0..6)];
    let l4_len = match protocol {
        6 => 20,
        17 => 8,
        _ => 8,
    };
    let payload = rng.gen_range(0..64usize);
    if ipv6 {
        p.extend(field(rng, dict, 1, 0x60));
        p.extend((0..3).map(|_| rng.gen::<u8>()));
        p.extend(field(rng, dict, 2, (l4_len + payload) as u64));
        p.extend(field(rng, dict, 1, protocol));
        p.push(rng.gen());
        p.extend((0..32).map(|_| rng.gen::<u8>()));
    } else {
        p.extend(field(rng, dict, 1, 0x45));
        p.push(rng.gen());
        p.extend(field(rng, dict, 2, (20 + l4_len + payload) as u64));
        p.extend((0..2).map(|_| rng.gen::<u8>()));
        p.extend(field(rng, dict, 2, 0));
        p.push(rng.gen());
        p.extend(field(rng, dict, 1, protocol));
        p.extend((0..10).map(|_| rng.gen::<u8>()));
    }
    for _ in 0..2 {
        let port = dict.pick(rng) & 0xffff;
        p.extend(field(rng, dict, 2, port));
    }
    p.extend((4..l4_len).map(|_| rng.gen::<u8>()));
    p.extend((0..payload).map(|_| rng.gen::<u8>()));
    p.truncate(MAX_PACKET);
    p
}

/// `packet` with one to four random changes.
pub fn mutate_packet(rng: &mut StdRng, dict: &Dictionary, packet: &[u8]) -> Vec<u8> {
    let mut p = packet.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        if p.is_empty() {
            p.resize(ETH_HLEN, 0);
        }
        let at = rng.gen_range(0..p.len());
        match rng.gen_range(0..6) {
            0 => p[at] ^= 1 << rng.gen_range(0..8),
            1 => p[at] = rng.gen(),
            2 | 3 => {
                let width = [1usize, 2, 4, 8][rng.gen_range(0..4)];
                let bytes = bytes_of(dict.pick(rng), width, rng.gen_bool(0.3));
                for (i, b) in bytes.into_iter().enumerate() {
                    if let Some(slot) = p.get_mut(at + i) {
                        *slot = b;
                    }
                }
            }
            4 => p.truncate(at.max(ETH_HLEN)),
            5 if p.len() < MAX_PACKET && rng.gen_range(0..8) == 0 => {
                let len = rng.gen_range(p.len()..=MAX_PACKET);
                p.resize(len, 0);
            }
            _ => {
                let more = rng.gen_range(1..=64);
                p.extend((0..more).map(|_| rng.gen::<u8>()));
            }
        }
    }
    p.truncate(MAX_PACKET);
    if p.len() < ETH_HLEN {
        p.resize(ETH_HLEN, 0);
    }
    p
}

/// Whether the values of map `map` are plain data a mutation may change: not read-only (the
/// kernel freezes `.rodata`, and the engine reads it as the object gives it), not a map of
/// programs, maps, devices or sockets.
fn mutable_values(object: &Object, map: usize) -> bool {
    let Some(def) = object.maps.get(map) else {
        return false;
    };
    def.flags & BPF_F_RDONLY_PROG == 0
        && def.inner.is_none()
        && matches!(
            def.map_type,
            MapType::HASH
                | MapType::ARRAY
                | MapType::PERCPU_HASH
                | MapType::PERCPU_ARRAY
                | MapType::LRU_HASH
                | MapType::LRU_PERCPU_HASH
                | MapType::LPM_TRIE
        )
}

/// `seed` with one byte of one of its plain-data values changed (as it is where it has none).
pub fn mutate_maps(
    rng: &mut StdRng,
    dict: &Dictionary,
    object: &Object,
    seed: &MapSeed,
) -> MapSeed {
    let entries = seed.entries();
    let targets: Vec<usize> = (0..entries.len())
        .filter(|&i| mutable_values(object, entries[i].map) && !entries[i].value.is_empty())
        .collect();
    let chosen = (!targets.is_empty()).then(|| targets[rng.gen_range(0..targets.len())]);
    let mut out = MapSeed::new();
    for (i, e) in entries.iter().enumerate() {
        let mut value = e.value.clone();
        if chosen == Some(i) {
            let at = rng.gen_range(0..value.len());
            value[at] = match rng.gen_range(0..3) {
                0 => rng.gen(),
                1 => value[at] ^ (1 << rng.gen_range(0..8)),
                _ => dict.pick(rng) as u8,
            };
        }
        out.push(e.map, e.key.clone(), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Packets, generated or mutated again and again from any length up to the largest, stay
    /// between the shortest and the largest a test run takes.
    #[test]
    fn packets_stay_within_what_a_test_run_takes() {
        let dict = Dictionary {
            values: PROTOCOL_VALUES.to_vec(),
        };
        let mut rng = StdRng::seed_from_u64(5);
        for start in [0, 1, ETH_HLEN, 1514, MAX_PACKET - 1, MAX_PACKET] {
            let first = vec![0u8; start];
            let mut p = first.clone();
            for _ in 0..5_000 {
                let once = mutate_packet(&mut rng, &dict, &first);
                assert!(
                    (ETH_HLEN..=MAX_PACKET).contains(&once.len()),
                    "{}",
                    once.len()
                );
                p = mutate_packet(&mut rng, &dict, &p);
                assert!((ETH_HLEN..=MAX_PACKET).contains(&p.len()), "{}", p.len());
            }
        }
        for _ in 0..2_000 {
            let p = random_packet(&mut rng, &dict);
            assert!((ETH_HLEN..=MAX_PACKET).contains(&p.len()), "{}", p.len());
        }
    }
}
