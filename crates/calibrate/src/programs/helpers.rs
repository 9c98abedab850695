//! Helper calls, back to back with their argument setup subtracted.

use super::*;

/// Stack layout of the helper programs (offsets from r10).
const FIB_PARAMS: i16 = -64;
/// A 16-byte `trace_printk` format with three integer conversions, in the part of the stack between
/// the byte buffers and the fib parameters that nothing else uses.
const PRINTK_FMT: i16 = -88;
const PRINTK_FORMAT: &[u8; 16] = b"lr %d %u %llx\n\0\0";
const BUFFER: i16 = -192;
/// The SYN cookie helpers' headers: a TCP header of the longest kind at the byte buffer (`doff`
/// 15, its 40 bytes of options all NOPs, the most steps the kernel's walk for an MSS option
/// takes), and a zero IP header between the buffer and the `trace_printk` format.
const TCP_HEADER: i16 = BUFFER;
const TCP_HEADER_BYTES: i32 = 60;
const IP_HEADER: i16 = -128;
/// What `probe_read_kernel(_str)` read: a run of non-NUL bytes as long as the larger size timed
/// (a string copy stops at its first NUL, so this is its longest walk), below the loop's slots.
const KERNEL_SOURCE: i16 = -320;
const KERNEL_SOURCE_BYTE: u8 = b'x';
/// Sizes `probe_read_kernel(_str)` are timed at (their price is the dearer): a word, and a
/// cache line as `xdp_load_bytes` copies. The kernel copies 8 bytes at a time (a string a byte at
/// a time), so a call costs more the more it reads.
pub(crate) const KERNEL_READ_SIZES: [i32; 2] = [8, 64];

/// The bench key of `probe_read_kernel(_str)` (`id`) reading `bytes` bytes.
pub(crate) fn kernel_read_key(id: u32, bytes: i32) -> String {
    format!("aux.{}.b{bytes}", linerate_bpf::helpers::helper_name(id))
}

fn helper_setup(a: &mut Asm, _fail: Label) {
    a.extend([mov64_reg(R6, R1), mov64(R7, 0)]);
    for i in 1..=24 {
        a.push(stx(Size::Dw, R10, -8 * i, R7));
    }
    // struct bpf_fib_lookup: family AF_INET, UDP, ifindex 1 (lo), source and destination.
    a.extend([
        st(Size::B, R10, FIB_PARAMS, 2),
        st(Size::B, R10, FIB_PARAMS + 1, 17),
        st(Size::W, R10, FIB_PARAMS + 8, 1),
        st(
            Size::W,
            R10,
            FIB_PARAMS + 16,
            i32::from_ne_bytes([127, 0, 0, 1]),
        ),
        st(Size::W, R10, FIB_PARAMS + 32, i32::from_ne_bytes(FIB_DST)),
    ]);
    a.push(st(Size::B, R10, TCP_HEADER + 12, 15 << 4));
    for option in (20..TCP_HEADER_BYTES as i16).step_by(4) {
        a.push(st(Size::W, R10, TCP_HEADER + option, 0x0101_0101));
    }
    for (i, word) in PRINTK_FORMAT.chunks(4).enumerate() {
        let word = i32::from_ne_bytes(word.try_into().expect("4 bytes"));
        a.push(st(Size::W, R10, PRINTK_FMT + 4 * i as i16, word));
    }
    let source_word = i32::from_ne_bytes([KERNEL_SOURCE_BYTE; 4]);
    let largest = KERNEL_READ_SIZES[KERNEL_READ_SIZES.len() - 1];
    for offset in (0..largest as i16).step_by(4) {
        a.push(st(Size::W, R10, KERNEL_SOURCE + offset, source_word));
    }
}

/// `probe_read_kernel(_str)(buffer, bytes, source)`: from the stack, which is kernel memory.
fn kernel_read_insns(id: u32, bytes: i32) -> Vec<Instruction> {
    vec![
        mov64_reg(R1, R10),
        add64(R1, BUFFER as i32),
        mov64(R2, bytes),
        mov64_reg(R3, R10),
        add64(R3, KERNEL_SOURCE as i32),
        call_helper(id),
    ]
}

/// How one helper is called: the unit's instructions (`probe`: check each result but the last),
/// calls per unit, the expected result, and what is subtracted.
struct HelperCase {
    id: u32,
    units: u32,
    calls: u32,
    expect: Option<u32>,
    minus: Vec<(&'static str, f64)>,
    note: String,
}

fn helper_call_insns(id: u32, step: u32) -> Vec<Instruction> {
    let ctx = mov64_reg(R1, R6);
    match id {
        helper::TRACE_PRINTK => vec![
            mov64_reg(R1, R10),
            add64(R1, PRINTK_FMT as i32),
            mov64(R2, PRINTK_FORMAT.len() as i32),
            mov64(R3, -123_456_789),
            mov64(R4, 4_000_000_000u32 as i32),
            mov64(R5, -1),
            call_helper(id),
        ],
        helper::REDIRECT => vec![mov64(R1, 1), mov64(R2, 0), call_helper(id)],
        helper::CSUM_DIFF => vec![
            mov64_reg(R1, R10),
            add64(R1, BUFFER as i32),
            mov64(R2, CSUM_BYTES),
            mov64_reg(R3, R10),
            add64(R3, BUFFER as i32 + 32),
            mov64(R4, CSUM_BYTES),
            mov64(R5, 0),
            call_helper(id),
        ],
        helper::XDP_ADJUST_HEAD | helper::XDP_ADJUST_META => {
            let delta = if step == 0 {
                -ADJUST_BYTES
            } else {
                ADJUST_BYTES
            };
            vec![ctx, mov64(R2, delta), call_helper(id)]
        }
        helper::XDP_ADJUST_TAIL => {
            let delta = if step == 0 {
                ADJUST_BYTES
            } else {
                -ADJUST_BYTES
            };
            vec![ctx, mov64(R2, delta), call_helper(id)]
        }
        helper::REDIRECT_MAP => redirect_map_insns(0),
        helper::FIB_LOOKUP => vec![
            st(Size::W, R10, FIB_PARAMS + 8, 1),
            ctx,
            mov64_reg(R2, R10),
            add64(R2, FIB_PARAMS as i32),
            mov64(R3, FIB_LOOKUP_PARAMS as i32),
            mov64(R4, 0),
            call_helper(id),
        ],
        helper::XDP_GET_BUFF_LEN => vec![ctx, call_helper(id)],
        helper::TCP_RAW_GEN_SYNCOOKIE_IPV4
        | helper::TCP_RAW_GEN_SYNCOOKIE_IPV6
        | helper::TCP_RAW_CHECK_SYNCOOKIE_IPV4
        | helper::TCP_RAW_CHECK_SYNCOOKIE_IPV6 => vec![
            mov64_reg(R1, R10),
            add64(R1, IP_HEADER as i32),
            mov64_reg(R2, R10),
            add64(R2, TCP_HEADER as i32),
            mov64(R3, TCP_HEADER_BYTES),
            call_helper(id),
        ],
        helper::XDP_LOAD_BYTES | helper::XDP_STORE_BYTES => vec![
            ctx,
            mov64(R2, 0),
            mov64_reg(R3, R10),
            add64(R3, BUFFER as i32),
            mov64(R4, COPY_BYTES),
            call_helper(id),
        ],
        _ => vec![call_helper(id)],
    }
}

fn helper_case(id: u32) -> HelperCase {
    let name = linerate_bpf::helpers::helper_name(id);
    let mut c = HelperCase {
        id,
        units: 200,
        calls: 1,
        expect: None,
        minus: Vec::new(),
        note: format!("back-to-back `{name}` calls"),
    };
    match id {
        helper::TRACE_PRINTK => {
            c.units = 20;
            c.minus = vec![
                ("alu64.mov.reg", 1.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 4.0),
            ];
            c.note = "`trace_printk(\"lr %d %u %llx\\n\", 16, ...)`: three integer conversions, \
                      the most arguments the helper takes (it writes a line to the trace buffer \
                      each call; longer formats and %s cost more), minus argument setup"
                .into();
        }
        helper::GET_SMP_PROCESSOR_ID => c.units = 1000,
        helper::REDIRECT => {
            c.units = 500;
            c.expect = Some(XDP_REDIRECT as u32);
            c.minus = vec![("alu64.mov.imm", 2.0)];
            c.note = "`redirect(1, 0)`, minus argument setup".into();
        }
        helper::CSUM_DIFF => {
            c.minus = vec![
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 2.0),
                ("alu64.mov.imm", 3.0),
            ];
            c.note = format!(
                "`csum_diff` of {CSUM_BYTES} bytes removed and {CSUM_BYTES} added (a header \
                 rewrite), minus argument setup"
            );
        }
        helper::XDP_ADJUST_HEAD | helper::XDP_ADJUST_META | helper::XDP_ADJUST_TAIL => {
            c.units = 100;
            c.calls = 2;
            c.expect = Some(0);
            c.minus = vec![("alu64.mov.reg", 1.0), ("alu64.mov.imm", 1.0)];
            let (first, second) = if id == helper::XDP_ADJUST_TAIL {
                (ADJUST_BYTES, -ADJUST_BYTES)
            } else {
                (-ADJUST_BYTES, ADJUST_BYTES)
            };
            c.note = format!(
                "pairs `{name}({first})`, `{name}({second})` (the packet is left as it was), \
                 per call, minus argument setup"
            );
        }
        helper::REDIRECT_MAP => {
            c.expect = Some(XDP_REDIRECT as u32);
            c.minus = vec![("ld_imm64", 1.0), ("alu64.mov.imm", 2.0)];
            c.note = "`redirect_map`, minus argument setup".into();
        }
        helper::FIB_LOOKUP => {
            c.units = 100;
            c.minus = vec![
                ("store.stack.u32", 1.0),
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 2.0),
            ];
            c.note = "`fib_lookup` (IPv4, ingress lo) of a destination routed by the host's \
                      default route, minus argument setup and the store resetting the ifindex"
                .into();
        }
        helper::XDP_GET_BUFF_LEN => {
            c.units = 500;
            c.minus = vec![("alu64.mov.reg", 1.0)];
            c.note = "`xdp_get_buff_len`, minus argument setup".into();
        }
        helper::TCP_RAW_GEN_SYNCOOKIE_IPV4 | helper::TCP_RAW_GEN_SYNCOOKIE_IPV6 => {
            c.minus = vec![
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 2.0),
                ("alu64.mov.imm", 1.0),
            ];
            c.note = format!(
                "`{name}` of a 60-byte TCP header whose options are 40 NOPs (the longest walk \
                 for an MSS option, then the cookie's hash), minus argument setup"
            );
        }
        helper::TCP_RAW_CHECK_SYNCOOKIE_IPV4 | helper::TCP_RAW_CHECK_SYNCOOKIE_IPV6 => {
            c.expect = Some(-(EACCES as i32) as u32);
            c.minus = vec![
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 2.0),
                ("alu64.mov.imm", 1.0),
            ];
            c.note = format!(
                "`{name}` of an ACK whose cookie the kernel did not issue (-EACCES: the hash is \
                 computed and compared either way), minus argument setup"
            );
        }
        helper::PROBE_READ_KERNEL | helper::PROBE_READ_KERNEL_STR => {
            c.expect = Some(0);
            c.minus = vec![
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 2.0),
                ("alu64.mov.imm", 1.0),
            ];
        }
        helper::XDP_LOAD_BYTES | helper::XDP_STORE_BYTES => {
            c.expect = Some(0);
            c.minus = vec![
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 2.0),
            ];
            c.note = format!("`{name}` of {COPY_BYTES} bytes at offset 0, minus argument setup");
        }
        _ => {}
    }
    c
}

/// Maps `redirect_map` is timed on (map index in the helper group, name), each with slot 0
/// occupied: lo in the device maps, a 192-packet queue on CPU 0 in the CPU map. The helper's work
/// is a lookup in the target map, whose code differs per type.
pub(crate) const REDIRECT_TARGETS: [(u32, &str); 3] =
    [(0, "devmap"), (1, "devmap_hash"), (2, "cpumap")];

/// One of the benches helper `c.id` is priced at the dearest of (`fit::plan`): `call` made
/// `c.units` times, and its probe.
fn variant_bench(g: &mut Group, key: &str, c: &HelperCase, note: &str, call: Vec<Instruction>) {
    let insns = program(helper_setup, c.units, |a, _, _| {
        a.extend(call.iter().copied())
    });
    let mut bench = Bench::new(key, "helper base", c.units).note(note);
    for (m, n) in &c.minus {
        bench = bench.minus(*m, *n);
    }
    g.timed(format!("{key} x{}", c.units), insns, Some(bench));
    let mut a = Asm::new();
    let setup_fail = a.label();
    helper_setup(&mut a, setup_fail);
    a.extend(call);
    a.push(exit());
    a.tail_block(setup_fail, [mov64(R0, 1), exit()]);
    g.probe(key, a.finish().insns, c.expect);
}

/// `redirect_map(map, 0, 0)` on the helper group's map `map`.
fn redirect_map_insns(map: u32) -> Vec<Instruction> {
    vec![
        ld_map(R1, map),
        mov64(R2, 0),
        mov64(R3, 0),
        call_helper(helper::REDIRECT_MAP),
    ]
}

pub(super) fn helper_group() -> Group {
    let mut g = Group::new("helper");
    g.maps.push(plain_map("devmap", MapType::DEVMAP, 4, 4, 1));
    g.maps
        .push(plain_map("devmap_hash", MapType::DEVMAP_HASH, 4, 4, 1));
    g.maps.push(plain_map("cpumap", MapType::CPUMAP, 4, 4, 1));
    let slot0 = 0u32.to_le_bytes().to_vec();
    g.populate
        .push((0, slot0.clone(), 1u32.to_le_bytes().to_vec()));
    g.populate
        .push((1, slot0.clone(), 1u32.to_le_bytes().to_vec()));
    g.populate.push((2, slot0, 192u32.to_le_bytes().to_vec()));
    g.timed("helper base", program(helper_setup, 0, |_, _, _| {}), None);
    for id in costed_helpers() {
        // Helpers with callbacks have a group of their own (`callbacks`).
        if matches!(id, helper::LOOP | helper::FOR_EACH_MAP_ELEM) {
            continue;
        }
        // Ring buffers, perf output, queues and check_mtu have a group of their own.
        if RECORD_HELPERS.contains(&id) {
            continue;
        }
        if id == helper::REDIRECT_MAP {
            for (map, name) in REDIRECT_TARGETS {
                let c = helper_case(id);
                let note = "`redirect_map` to an occupied slot of the map, minus argument setup";
                let key = format!("aux.redirect_map.{name}");
                variant_bench(&mut g, &key, &c, note, redirect_map_insns(map));
            }
            continue;
        }
        if matches!(
            id,
            helper::PROBE_READ_KERNEL | helper::PROBE_READ_KERNEL_STR
        ) {
            for bytes in KERNEL_READ_SIZES {
                let mut c = helper_case(id);
                // The string is as long as the size: the copy ends at the size, NUL last.
                if id == helper::PROBE_READ_KERNEL_STR {
                    c.expect = Some(bytes as u32);
                }
                let what = if id == helper::PROBE_READ_KERNEL {
                    "`probe_read_kernel`"
                } else {
                    "`probe_read_kernel_str` of a string as long as the size (copied a byte at a \
                     time, the last made NUL)"
                };
                let note = format!(
                    "{what} from the stack (kernel memory the copy reads without a fault), minus \
                     argument setup"
                );
                let key = kernel_read_key(id, bytes);
                variant_bench(&mut g, &key, &c, &note, kernel_read_insns(id, bytes));
            }
            continue;
        }
        let c = helper_case(id);
        let key = Item::Helper(id).to_string();
        let unit = |a: &mut Asm, _k: u32, fail: Option<Label>| {
            for step in 0..c.calls {
                a.extend(helper_call_insns(c.id, step));
                if let (Some(fail), Some(e)) = (fail, c.expect) {
                    check_r0(a, Expect::Eq(e as i32), fail);
                }
            }
        };
        let insns = program(helper_setup, c.units, |a, k, _| unit(a, k, None));
        let mut bench = Bench::new(&key, "helper base", c.units).note(&c.note);
        bench.per_unit = c.calls as f64;
        for (m, n) in &c.minus {
            bench = bench.minus(*m, *n * c.calls as f64);
        }
        g.timed(format!("{key} x{}", c.units), insns, Some(bench));
        g.programs.last_mut().expect("just pushed").needs_forwarding = id == helper::FIB_LOOKUP;
        // The probe runs one unit and returns the last result (or a failed check).
        let probe = {
            let mut a = Asm::new();
            let fail = a.label();
            let setup_fail = a.label();
            helper_setup(&mut a, setup_fail);
            for step in 0..c.calls {
                a.extend(helper_call_insns(c.id, step));
                if step + 1 < c.calls {
                    if let Some(e) = c.expect {
                        check_r0(&mut a, Expect::Eq(e as i32), fail);
                    }
                }
            }
            a.push(exit());
            a.tail_block(fail, [add64(R0, PROBE_FAIL as i32), exit()]);
            a.tail_block(setup_fail, [mov64(R0, 1), exit()]);
            a.finish().insns
        };
        g.probe(&key, probe, c.expect);
        if id == helper::FIB_LOOKUP {
            g.programs.last_mut().expect("probe").needs_forwarding = true;
        }
    }
    g
}
