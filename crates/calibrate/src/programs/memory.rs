//! Loads, stores and atomics per memory region, and the `xdp_md` context fields.

use super::*;

/// The `xdp_md` fields XDP programs may read, with their offsets.
pub(crate) const CTX_FIELDS: [(&str, u64, bool); 5] = [
    ("data", xdp_md::DATA, true),
    ("data_end", xdp_md::DATA_END, true),
    ("data_meta", xdp_md::DATA_META, true),
    ("ingress_ifindex", xdp_md::INGRESS_IFINDEX, false),
    ("rx_queue_index", xdp_md::RX_QUEUE_INDEX, false),
];

/// Destinations of independent context loads (`r1` holds the context).
const CTX_DESTINATIONS: [Reg; 5] = [R0, R3, R4, R5, R8];

/// Destinations of independent loads from a region (`r1` holds its address).
const LOAD_DESTINATIONS: [Reg; 6] = [R0, R3, R4, R5, R6, R9];

pub(super) fn ctx_group() -> Group {
    let mut g = Group::new("ctx");
    // Each iteration starts with r1 = ctx.
    let setup = |_: &mut Asm, _: Label| {};
    g.timed("ctx base", program(setup, 0, |_, _, _| {}), None);
    for (field, off, _) in CTX_FIELDS {
        let key = format!("aux.ctx.{field}");
        let units = 1500;
        let insns = program(setup, units, |a, k, _| {
            a.push(ldx_ctx(
                CTX_DESTINATIONS[k as usize % CTX_DESTINATIONS.len()],
                R1,
                off,
            ));
        });
        let bench = Bench::new(&key, "ctx base", units).note(format!(
            "independent loads of `xdp_md.{field}` (as the verifier rewrites it) into five \
             registers (throughput)"
        ));
        g.timed(format!("{key} x{units}"), insns, Some(bench));
    }
    g
}

/// Sets `r1` to 64 accessible bytes of `region`, `r2 = 0`, `r0 = 0`.
fn region_setup(region: Region) -> impl Fn(&mut Asm, Label) {
    move |a: &mut Asm, fail: Label| {
        match region {
            Region::Packet => {
                check_packet(a, [R7, R8, R1], 64, fail);
                a.push(mov64_reg(R1, R7));
            }
            Region::Stack => {
                a.push(mov64(R2, 0));
                for i in 1..=8 {
                    a.push(stx(Size::Dw, R10, -8 * i, R2));
                }
                a.extend([mov64_reg(R1, R10), add64(R1, -64)]);
            }
            Region::MapValue => {
                a.extend([
                    st(Size::W, R10, -4, 0),
                    mov64_reg(R2, R10),
                    add64(R2, -4),
                    ld_map(R1, 0),
                    call_helper(helper::MAP_LOOKUP_ELEM),
                ]);
                a.jcc(true, Cond::Eq, R0, Operand::Imm(0), fail);
                a.push(mov64_reg(R1, R0));
            }
            Region::Global => a.push(ld_map_value(R1, 0, 0)),
            Region::Ctx => unreachable!("the context has its own group"),
        }
        a.extend([mov64(R2, 0), mov64(R0, 0)]);
    }
}

pub(super) fn mem_group(region: Region) -> Group {
    let name = match region {
        Region::Packet => "packet",
        Region::Stack => "stack",
        Region::MapValue => "map_value",
        Region::Global => "global",
        Region::Ctx => "ctx",
    };
    let mut g = Group::new(name);
    match region {
        Region::MapValue => g.maps.push(plain_map("values", MapType::ARRAY, 4, 64, 1)),
        Region::Global => g.maps.push(data_map(".data", vec![0u8; 64])),
        _ => {}
    }
    let base = format!("{name} base");
    let setup = region_setup(region);
    g.timed(&base, program(&setup, 0, |_, _, _| {}), None);
    let accesses = [
        (1, false),
        (2, false),
        (4, false),
        (8, false),
        (1, true),
        (2, true),
        (4, true),
    ];
    for (bytes, signed) in accesses {
        let size = Size::from_bytes(bytes).expect("valid size");
        let key = Item::Load {
            region,
            access: Access::new(size, signed),
        }
        .to_string();
        let units = 1500;
        let insns = program(&setup, units, |a, k, _| {
            a.push(Instruction::Load {
                size,
                signed,
                dst: LOAD_DESTINATIONS[k as usize % LOAD_DESTINATIONS.len()],
                src: R1,
                off: ((k % 8) * bytes) as i16,
            })
        });
        let bench = Bench::new(&key, &base, units).note(
            "independent loads (L1 hits) cycling over 8 offsets and six registers (throughput)",
        );
        g.timed(format!("{key} x{units}"), insns, Some(bench));
    }
    for bytes in [1u32, 2, 4, 8] {
        let size = Size::from_bytes(bytes).expect("valid size");
        let key = Item::Store {
            region,
            bytes: bytes as u8,
        }
        .to_string();
        let units = 2000;
        let insns = program(&setup, units, |a, k, _| {
            a.push(stx(size, R1, ((k % 8) * bytes) as i16, R2))
        });
        let bench = Bench::new(&key, &base, units).note(
            "independent register stores cycling over 8 slots (throughput); immediate stores share \
             the price",
        );
        g.timed(format!("{key} x{units}"), insns, Some(bench));
    }
    if matches!(region, Region::Stack | Region::MapValue | Region::Global) {
        for bytes in [4u32, 8] {
            let size = Size::from_bytes(bytes).expect("valid size");
            for op in AtomicOp::ALL {
                let fetches: &[bool] = match op {
                    AtomicOp::Xchg | AtomicOp::CmpXchg => &[true],
                    _ => &[false, true],
                };
                for &fetch in fetches {
                    let key = Item::Atomic {
                        region,
                        op,
                        fetch,
                        bytes: bytes as u8,
                    }
                    .to_string();
                    let units = 500;
                    let insns = program(&setup, units, |a, k, _| {
                        a.push(atomic(size, op, fetch, R1, ((k % 8) * 8) as i16, R2))
                    });
                    let bench = Bench::new(&key, &base, units).note(
                        "back-to-back atomics cycling over 8 locations (locked operations \
                         still drain the store buffer one after the other; fetching forms \
                         chain through the fetched register)",
                    );
                    g.timed(format!("{key} x{units}"), insns, Some(bench));
                }
            }
        }
    }
    g
}
