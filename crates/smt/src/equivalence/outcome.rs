//! The observable outcome of a pair of runs and where the two differ, as formulas over the
//! shared inputs: the return value, the packet, the maps' contents and the redirect target.

use linerate_bpf::facts::xdp::XDP_REDIRECT;
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::Object;
use linerate_sem::helpers::RedirectTo;
use z3::ast::{Ast, Bool, BV};

use crate::machine::{Env, State};
use crate::maps::value_offset;
use crate::memory::Memory;
use crate::value::{Bits, SymValue, Tag};

/// Where a pair of runs may differ.
pub(super) struct Differences {
    /// What may differ (`"packet"`, ...) and the condition under which it does.
    pub parts: Vec<(String, Bool)>,
    /// Definitions the memories made for the comparison's reads, to assert on the path.
    pub definitions: Vec<Bool>,
    /// The two return values' low 32 bits, 64 bits wide.
    pub returns: [BV; 2],
}

/// Why the two runs' values from outside the programs cannot be paired in order (the n-th read
/// of each is the same variable): another number of them, or another helper or kind of value.
pub(super) fn same_sources(
    envs: &[Env; 2],
    program: usize,
    original: &State,
    candidate: &State,
) -> Option<String> {
    let helper = |env: &Env, pc: usize| match env.slots.get(program).and_then(|p| p.get(pc)) {
        Some(Some(Instruction::Call(CallTarget::Helper(id)))) => Some(*id),
        _ => None,
    };
    let (a, b) = (&original.sources, &candidate.sources);
    if a.len() != b.len() {
        return Some(format!(
            "the original reads {} values from outside the program (time, random numbers, \
             routes) on a path where the candidate reads {}",
            a.len(),
            b.len()
        ));
    }
    a.iter().zip(b).find_map(|(x, y)| {
        (x.what != y.what || helper(&envs[0], x.pc) != helper(&envs[1], y.pc)).then(|| {
            format!(
                "the original reads {} at insn {} where the candidate reads {} at insn {}",
                x.what, x.pc, y.what, y.pc
            )
        })
    })
}

/// The low 32 bits of a returned scalar, 64 bits wide.
fn return_value(r0: &SymValue, which: &str) -> Result<BV, String> {
    match r0.tag {
        Tag::Scalar => Ok(r0.bits.bv().extract(31, 0).zero_ext(32).simplify()),
        _ => Err(format!("the {which} returns a pointer")),
    }
}

/// The byte at the symbolic offset `at`, as a 64-bit value.
fn byte_at(memory: &mut Memory, at: &Bits) -> Result<BV, String> {
    memory
        .load(at, 1)
        .map(|v| v.bits.bv())
        .map_err(|why| format!("comparing memory: {why}"))
}

/// Where the original's end state (`states[0]`, returning `r0s[0]`) and the candidate's differ.
/// `offset`: a variable of its own, standing for every packet offset.
pub(super) fn differences(
    object: &Object,
    states: [&mut State; 2],
    r0s: [&SymValue; 2],
    offset: &BV,
) -> Result<Differences, String> {
    let [original, candidate] = states;
    let returns = [
        return_value(r0s[0], "original")?,
        return_value(r0s[1], "candidate")?,
    ];
    let mut parts = vec![("return value".to_string(), returns[0].eq(&returns[1]).not())];
    let mut definitions = Vec::new();

    // The packet: its bounds, then any byte between them (the original's; equal bounds).
    let (a, b) = (&original.bounds, &candidate.bounds);
    let bounds = [
        (&a.data_meta, &b.data_meta),
        (&a.data, &b.data),
        (&a.data_end, &b.data_end),
    ];
    let moved: Vec<Bool> = bounds
        .iter()
        .map(|(x, y)| x.bits.bv().eq(y.bits.bv()).not())
        .collect();
    parts.push((
        "packet bounds".into(),
        Bool::or(&moved.iter().collect::<Vec<_>>()),
    ));
    let at = Bits::Sym(offset.clone());
    original.packet.share_input(&candidate.packet);
    let byte_o = byte_at(&mut original.packet, &at)?;
    candidate.packet.share_input(&original.packet);
    let byte_c = byte_at(&mut candidate.packet, &at)?;
    definitions.extend(original.packet.take_definitions());
    definitions.extend(candidate.packet.take_definitions());
    let inside = Bool::and(&[
        &a.data_meta.bits.bv().bvule(offset),
        &offset.bvult(a.data_end.bits.bv()),
    ]);
    parts.push((
        "packet".into(),
        Bool::and(&[&inside, &byte_o.eq(&byte_c).not()]),
    ));

    // The maps: every key either run accessed, its presence and (where present) its value.
    for (i, def) in object.maps.iter().enumerate() {
        let (Some(map_o), Some(map_c)) = (original.maps.get(i), candidate.maps.get(i)) else {
            return Err(format!("map `{}` is missing from a run", def.name));
        };
        if map_o.is_frozen() {
            continue;
        }
        if !map_o.keyed_only() || !map_c.keyed_only() {
            return Err(format!(
                "map `{}` is used as a ring buffer, queue or map of maps, whose \
                 contents are not compared",
                def.name
            ));
        }
        let lock = def.spin_lock.map(|at| u64::from(at)..u64::from(at) + 4);
        let bytes: Vec<u64> = (0..u64::from(def.value_size))
            .filter(|b| !lock.as_ref().is_some_and(|l| l.contains(b)))
            .collect();
        let keys = map_c.keys();
        let mut entries = Vec::with_capacity(keys);
        for j in 0..keys {
            let (Some(o), Some(c)) = (map_o.entry_of(map_c, j), map_c.entry_of(map_c, j)) else {
                return Err(format!(
                    "map `{}`: key {j} of the candidate is missing",
                    def.name
                ));
            };
            entries.push((o, c));
        }
        let mut values_o = Vec::with_capacity(keys);
        let memory_c = candidate.maps[i].memory.clone();
        let memory_o = &mut original.maps[i].memory;
        memory_o.share_input(&memory_c);
        for ((_, slot), _) in &entries {
            let mut value = Vec::with_capacity(bytes.len());
            for &b in &bytes {
                value.push(byte_at(memory_o, &value_offset(slot, b))?);
            }
            values_o.push(value);
        }
        definitions.extend(memory_o.take_definitions());
        let memory_o = original.maps[i].memory.clone();
        let memory_c = &mut candidate.maps[i].memory;
        memory_c.share_input(&memory_o);
        let mut changed = Vec::new();
        for (((present_o, _), (present_c, slot_c)), value_o) in entries.iter().zip(&values_o) {
            changed.push(present_o.eq(present_c).not());
            for (&b, byte_o) in bytes.iter().zip(value_o) {
                let byte_c = byte_at(memory_c, &value_offset(slot_c, b))?;
                changed.push(Bool::and(&[present_o, &byte_o.eq(&byte_c).not()]));
            }
        }
        definitions.extend(memory_c.take_definitions());
        if !changed.is_empty() {
            parts.push((
                format!("map `{}`", def.name),
                Bool::or(&changed.iter().collect::<Vec<_>>()),
            ));
        }
    }

    // Where an `XDP_REDIRECT` sends the packet: the last redirect helper's target.
    let redirecting = returns[0].eq(BV::from_u64(XDP_REDIRECT, 64));
    let low = |v: &SymValue| v.bits.bv().extract(31, 0);
    let target = match (original.redirects.last(), candidate.redirects.last()) {
        (None, None) => None,
        (Some(RedirectTo::Ifindex(x)), Some(RedirectTo::Ifindex(y))) => {
            Some(low(x).eq(low(y)).not())
        }
        (Some(RedirectTo::Map { map: m, key: x }), Some(RedirectTo::Map { map: n, key: y }))
            if m == n =>
        {
            Some(low(x).eq(low(y)).not())
        }
        _ => Some(Bool::from_bool(true)),
    };
    if let Some(target) = target {
        parts.push(("redirect".into(), Bool::and(&[&redirecting, &target])));
    }
    Ok(Differences {
        parts,
        definitions,
        returns,
    })
}
