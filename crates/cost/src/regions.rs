//! Pointer provenance: which memory region each load, store and atomic touches, and which map each
//! map helper call operates on.
//!
//! A forward data-flow analysis over each function's CFG tracks what every register and every
//! 8-byte stack slot holds: the context, a packet pointer, a stack pointer (with its offset when
//! constant), a map or a map value (with the map when known), global data, or something else. The
//! verifier guarantees pointers never leave their region, so pointer arithmetic keeps the kind. At
//! joins, disagreeing facts become unknown; an access through an unknown pointer is reported as
//! `None` and priced at the most expensive region it could be.

use std::collections::HashMap;

use linerate_bpf::insn::{AluOp, CallTarget, Imm64, Instruction, Operand, Size};
use linerate_bpf::program::{MapOrigin, Object};
use linerate_cfg::Cfg;

use crate::item::Region;

/// `xdp_md` field offsets holding packet pointers.
const CTX_DATA: i16 = 0;
const CTX_DATA_END: i16 = 4;
const CTX_DATA_META: i16 = 8;

/// What a register or stack slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Not known to be any particular pointer (scalars included).
    Unknown,
    Ctx,
    Packet,
    PacketEnd,
    /// A stack pointer, with its offset from the frame pointer when constant.
    Stack(Option<i64>),
    /// A map (from a 64-bit immediate), by index in the object.
    MapPtr(usize),
    /// A value of a map; the map when known.
    MapValue(Option<usize>),
    /// Global data of a map.
    Global,
}

impl Kind {
    fn join(self, other: Kind) -> Kind {
        match (self, other) {
            (a, b) if a == b => a,
            (Kind::Stack(_), Kind::Stack(_)) => Kind::Stack(None),
            (Kind::MapValue(_), Kind::MapValue(_)) => Kind::MapValue(None),
            _ => Kind::Unknown,
        }
    }

    fn region(self) -> Option<Region> {
        match self {
            Kind::Ctx => Some(Region::Ctx),
            Kind::Packet => Some(Region::Packet),
            Kind::Stack(_) => Some(Region::Stack),
            Kind::MapValue(_) => Some(Region::MapValue),
            Kind::Global => Some(Region::Global),
            Kind::Unknown | Kind::PacketEnd | Kind::MapPtr(_) => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
struct State {
    regs: [Kind; 11],
    /// Spilled pointers by 8-byte-aligned stack offset.
    slots: HashMap<i64, Kind>,
}

impl State {
    fn entry(main: bool) -> State {
        let mut regs = [Kind::Unknown; 11];
        if main {
            regs[1] = Kind::Ctx;
        }
        regs[10] = Kind::Stack(Some(0));
        State {
            regs,
            slots: HashMap::new(),
        }
    }

    fn join(&self, other: &State) -> State {
        let mut regs = self.regs;
        for (a, b) in regs.iter_mut().zip(other.regs) {
            *a = a.join(b);
        }
        let slots = self
            .slots
            .iter()
            .filter_map(|(off, k)| {
                let j = k.join(*other.slots.get(off)?);
                (j != Kind::Unknown).then_some((*off, j))
            })
            .collect();
        State { regs, slots }
    }
}

/// The facts found for one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fact {
    /// A load, store or atomic; the region when known.
    Memory(Option<Region>),
    /// A map helper call (lookup/update/delete, redirect_map, tail call); the map when known.
    MapCall(Option<usize>),
}

/// Facts per instruction slot of a program.
#[derive(Clone, Debug, Default)]
pub struct Regions {
    facts: HashMap<usize, Fact>,
}

impl Regions {
    /// Analyses every function of `cfg`, the CFG of one of `object`'s programs (the object supplies
    /// its maps).
    pub fn analyse(object: &Object, cfg: &Cfg) -> Regions {
        let mut out = Regions::default();
        let entries = callee_entry_states(object, cfg);
        for (f, entry) in entries.into_iter().enumerate() {
            block_states(object, cfg, f, entry, &mut out.facts);
        }
        out
    }

    /// The fact found for the instruction at `slot`, if it accesses memory or calls a map helper.
    pub fn fact(&self, slot: usize) -> Option<Fact> {
        self.facts.get(&slot).copied()
    }
}

/// Entry states: the main function gets the context in `r1`; a callee gets the join of its call
/// sites' argument registers (two rounds reach every call chain a verifier-accepted program has,
/// up to its depth limit of 8, so iterate to a fixed point).
fn callee_entry_states(object: &Object, cfg: &Cfg) -> Vec<State> {
    let n = cfg.functions().len();
    let mut entries: Vec<Option<State>> = vec![None; n];
    entries[0] = Some(State::entry(true));
    for _ in 0..=n {
        let mut next = entries.clone();
        for (f, entry) in entries.iter().enumerate() {
            let Some(entry) = entry else { continue };
            let mut sink = HashMap::new();
            let states = block_states(object, cfg, f, entry.clone(), &mut sink);
            for site in cfg.calls() {
                if site.caller != f {
                    continue;
                }
                let Some(state) = state_before(object, cfg, &states, site.block, site.slot) else {
                    continue;
                };
                let mut callee = State::entry(false);
                callee.regs[1..=5].copy_from_slice(&state.regs[1..=5]);
                next[site.callee] = Some(match &next[site.callee] {
                    Some(s) => s.join(&callee),
                    None => callee,
                });
            }
        }
        if next == entries {
            break;
        }
        entries = next;
    }
    entries
        .into_iter()
        .map(|e| e.unwrap_or_else(|| State::entry(false)))
        .collect()
}

/// Entry state of every reachable block of function `f`, recording facts on the way.
fn block_states(
    object: &Object,
    cfg: &Cfg,
    f: usize,
    entry: State,
    facts: &mut HashMap<usize, Fact>,
) -> HashMap<usize, State> {
    let func = &cfg.functions()[f];
    let mut states: HashMap<usize, State> = HashMap::new();
    states.insert(func.entry, entry);
    let mut work = vec![func.entry];
    // Kinds only move up a finite lattice, so this terminates; the bound is a guard.
    let mut budget = 64 * (func.blocks.len() + 1);
    while let Some(b) = work.pop() {
        if budget == 0 {
            break;
        }
        budget -= 1;
        let mut state = states[&b].clone();
        for (slot, insn) in cfg.block_instructions(b) {
            transfer(object, &mut state, *slot, insn, facts);
        }
        for &e in &cfg.blocks()[b].succs {
            let edge = cfg.edges()[e];
            let merged = match states.get(&edge.to) {
                Some(old) => old.join(&state),
                None => state.clone(),
            };
            if states.get(&edge.to) != Some(&merged) {
                states.insert(edge.to, merged);
                work.push(edge.to);
            }
        }
    }
    states
}

/// The state right before `slot` in block `block`.
fn state_before(
    object: &Object,
    cfg: &Cfg,
    states: &HashMap<usize, State>,
    block: usize,
    slot: usize,
) -> Option<State> {
    let mut state = states.get(&block)?.clone();
    let mut sink = HashMap::new();
    for (s, insn) in cfg.block_instructions(block) {
        if *s == slot {
            return Some(state);
        }
        transfer(object, &mut state, *s, insn, &mut sink);
    }
    None
}

fn stack_slot(kind: Kind, off: i16) -> Option<i64> {
    match kind {
        Kind::Stack(Some(base)) => Some(base + off as i64),
        _ => None,
    }
}

fn transfer(
    object: &Object,
    st: &mut State,
    slot: usize,
    insn: &Instruction,
    facts: &mut HashMap<usize, Fact>,
) {
    match *insn {
        Instruction::Alu { wide, op, dst, src } => {
            let d = dst as usize;
            st.regs[d] = match (wide, op, src) {
                (true, AluOp::Mov, Operand::Reg(r)) => st.regs[r as usize],
                (true, AluOp::Add | AluOp::Sub, Operand::Imm(imm)) => match st.regs[d] {
                    Kind::Stack(Some(base)) => {
                        let delta = if op == AluOp::Add { imm } else { -imm };
                        Kind::Stack(Some(base + delta as i64))
                    }
                    k @ (Kind::Ctx | Kind::Packet | Kind::MapValue(_) | Kind::Global) => k,
                    Kind::Stack(None) => Kind::Stack(None),
                    _ => Kind::Unknown,
                },
                (true, AluOp::Add | AluOp::Sub, Operand::Reg(r)) => {
                    match (st.regs[d], st.regs[r as usize]) {
                        (Kind::Stack(_), _) => Kind::Stack(None),
                        (k @ (Kind::Packet | Kind::MapValue(_) | Kind::Global), _) => k,
                        // `scalar + pointer`: the verifier lets the pointer move to dst.
                        (_, k @ (Kind::Packet | Kind::MapValue(_) | Kind::Global))
                            if op == AluOp::Add =>
                        {
                            k
                        }
                        (_, Kind::Stack(_)) if op == AluOp::Add => Kind::Stack(None),
                        _ => Kind::Unknown,
                    }
                }
                _ => Kind::Unknown,
            };
        }
        Instruction::Endian { dst, .. } => st.regs[dst as usize] = Kind::Unknown,
        Instruction::LoadImm64 { dst, imm } => {
            st.regs[dst as usize] = match imm {
                Imm64::Map(m) => Kind::MapPtr(m as usize),
                Imm64::MapValue { map, .. } => {
                    match object.maps.get(map as usize).map(|m| &m.origin) {
                        Some(MapOrigin::GlobalData { .. }) => Kind::Global,
                        _ => Kind::MapValue(Some(map as usize)),
                    }
                }
                _ => Kind::Unknown,
            };
        }
        Instruction::Load {
            size,
            dst,
            src,
            off,
            ..
        } => {
            let base = st.regs[src as usize];
            facts.insert(slot, Fact::Memory(base.region()));
            let loaded = match base {
                Kind::Ctx if size == Size::W => match off {
                    CTX_DATA | CTX_DATA_META => Kind::Packet,
                    CTX_DATA_END => Kind::PacketEnd,
                    _ => Kind::Unknown,
                },
                Kind::Stack(_) if size == Size::Dw => stack_slot(base, off)
                    .and_then(|o| st.slots.get(&o).copied())
                    .unwrap_or(Kind::Unknown),
                _ => Kind::Unknown,
            };
            st.regs[dst as usize] = loaded;
        }
        Instruction::Store {
            size,
            dst,
            off,
            src,
            ..
        } => {
            let base = st.regs[dst as usize];
            facts.insert(slot, Fact::Memory(base.region()));
            match (stack_slot(base, off), base) {
                (Some(o), _) => {
                    let lo = o.div_euclid(8) * 8;
                    let hi = (o + size.bytes() as i64 - 1).div_euclid(8) * 8;
                    let spilled = match src {
                        Operand::Reg(r) if size == Size::Dw && o % 8 == 0 => st.regs[r as usize],
                        _ => Kind::Unknown,
                    };
                    st.slots.remove(&lo);
                    st.slots.remove(&hi);
                    if spilled != Kind::Unknown {
                        st.slots.insert(o, spilled);
                    }
                }
                (None, Kind::Stack(None)) => st.slots.clear(),
                _ => {}
            }
        }
        Instruction::Atomic {
            dst,
            src,
            fetch,
            op,
            off,
            ..
        } => {
            let base = st.regs[dst as usize];
            facts.insert(slot, Fact::Memory(base.region()));
            if let Some(o) = stack_slot(base, off) {
                st.slots.remove(&(o.div_euclid(8) * 8));
            } else if base == Kind::Stack(None) {
                st.slots.clear();
            }
            if fetch {
                let r = if op == linerate_bpf::insn::AtomicOp::CmpXchg {
                    0
                } else {
                    src as usize
                };
                st.regs[r] = Kind::Unknown;
            }
        }
        Instruction::LegacyPacketLoad { .. } => st.regs[0] = Kind::Unknown,
        Instruction::Call(target) => {
            let r0 = match target {
                CallTarget::Helper(id @ (1 | 2 | 3 | 12 | 51)) => {
                    // bpf_tail_call(ctx, prog_array, index); the others take the map first.
                    let map_arg = if id == 12 { 2 } else { 1 };
                    let map = match st.regs[map_arg] {
                        Kind::MapPtr(m) => Some(m),
                        _ => None,
                    };
                    facts.insert(slot, Fact::MapCall(map));
                    if id == 1 {
                        Kind::MapValue(map)
                    } else {
                        Kind::Unknown
                    }
                }
                _ => Kind::Unknown,
            };
            st.regs[0] = r0;
            for r in 1..=5 {
                st.regs[r] = Kind::Unknown;
            }
        }
        Instruction::Ja { .. }
        | Instruction::Jump { .. }
        | Instruction::MayGoto { .. }
        | Instruction::Exit => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::program::{Function, MapDef, MapType, Program};

    fn object(text: &str, maps: Vec<MapDef>) -> (Object, Cfg) {
        let program: Program = linerate_bpf::asm::assemble_program(text, &maps).unwrap();
        let cfg = Cfg::build(&program).unwrap();
        let object = Object {
            name: "t".into(),
            programs: vec![Program {
                functions: vec![Function {
                    name: "t".into(),
                    start: 0,
                    len: program.insns.len(),
                }],
                ..program
            }],
            maps,
            license: None,
        };
        (object, cfg)
    }

    fn map(name: &str, origin: MapOrigin) -> MapDef {
        MapDef {
            name: name.into(),
            map_type: MapType::ARRAY,
            key_size: 4,
            value_size: 8,
            max_entries: 1,
            flags: 0,
            origin,
            initial_value: None,
            initial_programs: Vec::new(),
        }
    }

    #[test]
    fn finds_regions_through_moves_spills_and_joins() {
        let text = "
            r2 = *(u32 *)(r1 + 0x0)
            r3 = *(u32 *)(r1 + 0x4)
            *(u64 *)(r10 - 0x10) = r2
            r4 = r2
            r4 += 0xe
            if r4 > r3 goto +0xd
            r5 = *(u64 *)(r10 - 0x10)
            r0 = *(u8 *)(r5 + 0xc)
            r1 = counters ll
            r2 = r10
            r2 += -0x4
            *(u32 *)(r2 + 0x0) = 0x0
            call 0x1
            if r0 == 0x0 goto +0x1
            r1 = *(u64 *)(r0 + 0x0)
            r6 = .rodata + 0x0 ll
            r7 = *(u32 *)(r6 + 0x0)
            r0 = 0x2
            exit
        ";
        let (object, cfg) = object(
            text,
            vec![
                map("counters", MapOrigin::Btf),
                map(
                    ".rodata",
                    MapOrigin::GlobalData {
                        section: ".rodata".into(),
                        read_only: true,
                    },
                ),
            ],
        );
        let r = Regions::analyse(&object, &cfg);
        assert_eq!(r.fact(0), Some(Fact::Memory(Some(Region::Ctx))));
        assert_eq!(r.fact(2), Some(Fact::Memory(Some(Region::Stack))));
        assert_eq!(r.fact(6), Some(Fact::Memory(Some(Region::Stack))));
        assert_eq!(
            r.fact(7),
            Some(Fact::Memory(Some(Region::Packet))),
            "spilled packet pointer"
        );
        assert_eq!(r.fact(12), Some(Fact::Memory(Some(Region::Stack))));
        assert_eq!(r.fact(13), Some(Fact::MapCall(Some(0))));
        assert_eq!(r.fact(15), Some(Fact::Memory(Some(Region::MapValue))));
        assert_eq!(r.fact(18), Some(Fact::Memory(Some(Region::Global))));
    }
}
