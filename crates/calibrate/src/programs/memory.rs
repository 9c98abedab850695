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

pub(super) fn ctx_group() -> Group {
    let mut g = Group::new("ctx");
    // r1 = ctx; r7 = ctx->data (a packet pointer to subtract from pointer-valued fields).
    let setup = |a: &mut Asm, _: Label| a.extend([ldx_ctx(R7, R1, xdp_md::DATA), mov64(R3, 0)]);
    g.timed("ctx base", program(setup, 0, |_, _, _| {}), None);
    for (field, off, pointer) in CTX_FIELDS {
        let key = format!("aux.ctx.{field}");
        let units = 1500;
        let insns = program(setup, units, |a, _, _| {
            a.push(ldx_ctx(R3, R1, off));
            if pointer {
                a.push(alu(true, AluOp::Sub, R3, Operand::Reg(R7)));
            }
            a.push(alu(true, AluOp::And, R3, Operand::Imm(0)));
            a.push(alu(true, AluOp::Add, R1, Operand::Reg(R3)));
        });
        let mut bench = Bench::new(&key, "ctx base", units)
            .minus("alu64.and.imm", 1.0)
            .minus("alu64.add.reg", 1.0)
            .note(format!(
                "load-to-use latency of `xdp_md.{field}` (as the verifier rewrites it) in a chain \
                 `x = *(u32 *)(ctx + {off}); {}x &= 0; ctx += x`, minus the glue",
                if pointer { "x -= data; " } else { "" }
            ));
        if pointer {
            bench = bench.minus("alu64.sub.reg", 1.0);
        }
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
        let insns = program(&setup, units, |a, _, _| {
            a.extend([
                Instruction::Load {
                    size,
                    signed,
                    dst: R3,
                    src: R1,
                    off: 0,
                },
                alu(true, AluOp::And, R3, Operand::Imm(0)),
                alu(true, AluOp::Add, R1, Operand::Reg(R3)),
            ])
        });
        let bench = Bench::new(&key, &base, units)
            .minus("alu64.and.imm", 1.0)
            .minus("alu64.add.reg", 1.0)
            .note(
                "load-to-use latency in a pointer chain `x = *(p + 0); x &= 0; p += x` (L1 hit), \
                 minus the glue",
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
                    let insns = program(&setup, units, |a, _, _| {
                        a.push(atomic(size, op, fetch, R1, 0, R2))
                    });
                    let bench = Bench::new(&key, &base, units).note(
                        "back-to-back atomics on one location (each waits for the previous; \
                         fetching forms chain through the fetched register)",
                    );
                    g.timed(format!("{key} x{units}"), insns, Some(bench));
                }
            }
        }
    }
    g
}
