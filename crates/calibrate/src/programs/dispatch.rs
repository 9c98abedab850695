//! Map helper calls the verifier cannot bind to one map: a call site that several maps reach.
//!
//! For a call site that always gets the same map, the verifier replaces a map helper by a direct
//! call of that map type's operation (and inlines array lookups); where two maps of any type reach
//! the call site the kernel runs the generic helper, which dispatches through the map's operations
//! table, an indirect call (kernel/bpf/verifier.c, the map helper fixups skip a "poisoned" map
//! pointer). Each bench's unit chooses between two maps on a packet byte the verifier cannot
//! know; its baseline is the same program choosing between the same map twice, so the difference
//! is the dispatch alone.

use super::*;

/// Maps of the group: two devmaps and two arrays, slot 0 of each populated.
const DEVMAP_A: u32 = 0;
const DEVMAP_B: u32 = 1;
const ARRAY_A: u32 = 2;
const ARRAY_B: u32 = 3;
/// The stack slot holding the array key (0).
const KEY: i16 = -4;

/// The call sites timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DispatchCase {
    /// `redirect_map` on one of two devmaps: a direct call of the devmap's operation, or the
    /// generic helper's indirect call.
    RedirectMap,
    /// An array lookup: inlined by the verifier, or the generic helper's indirect call.
    Lookup,
}

impl DispatchCase {
    const ALL: [DispatchCase; 2] = [DispatchCase::RedirectMap, DispatchCase::Lookup];

    fn name(self) -> &'static str {
        match self {
            DispatchCase::RedirectMap => "redirect_map",
            DispatchCase::Lookup => "lookup_array",
        }
    }

    fn maps(self) -> (u32, u32) {
        match self {
            DispatchCase::RedirectMap => (DEVMAP_A, DEVMAP_B),
            DispatchCase::Lookup => (ARRAY_A, ARRAY_B),
        }
    }
}

/// The bench key of a case, for the plan of [`crate::fit`].
pub(crate) fn dispatch_bench(case: DispatchCase) -> String {
    format!("aux.dispatch.{}", case.name())
}

fn setup(a: &mut Asm, fail: Label) {
    check_packet(a, [R7, R8, R1], 1, fail);
    a.extend([ldx(Size::B, R9, R7, 0), st(Size::W, R10, KEY, 0)]);
}

/// One unit: `r1 = first; if r9 != 0 { r1 = second }; call` with the helper's other arguments.
fn unit(a: &mut Asm, case: DispatchCase, first: u32, second: u32, fail: Label) {
    let chosen = a.label();
    a.push(ld_map(R1, first));
    a.jcc(true, Cond::Eq, R9, Operand::Imm(0), chosen);
    a.push(ld_map(R1, second));
    a.bind(chosen);
    if case == DispatchCase::RedirectMap {
        a.extend([
            mov64(R2, 0),
            mov64(R3, 0),
            call_helper(helper::REDIRECT_MAP),
        ]);
    } else {
        a.extend([
            mov64_reg(R2, R10),
            add64(R2, KEY as i32),
            call_helper(helper::MAP_LOOKUP_ELEM),
        ]);
        a.jcc(true, Cond::Eq, R0, Operand::Imm(0), fail);
    }
}

pub(super) fn dispatch_group() -> Group {
    let mut g = Group::new("dispatch");
    g.maps.push(plain_map("devmap_a", MapType::DEVMAP, 4, 4, 1));
    g.maps.push(plain_map("devmap_b", MapType::DEVMAP, 4, 4, 1));
    g.maps.push(plain_map("array_a", MapType::ARRAY, 4, 8, 1));
    g.maps.push(plain_map("array_b", MapType::ARRAY, 4, 8, 1));
    let slot0 = 0u32.to_le_bytes().to_vec();
    for map in [DEVMAP_A, DEVMAP_B] {
        // ifindex 1: loopback.
        g.populate
            .push((map as usize, slot0.clone(), 1u32.to_le_bytes().to_vec()));
    }
    let units = 400;
    for case in DispatchCase::ALL {
        let name = case.name();
        let (first, second) = case.maps();
        let base = format!("dispatch {name} bound x{units}");
        g.timed(
            &base,
            program(setup, units, |a, _, fail| unit(a, case, first, first, fail)),
            None,
        );
        let key = dispatch_bench(case);
        g.timed(
            format!("dispatch {name} two maps x{units}"),
            program(setup, units, |a, _, fail| {
                unit(a, case, first, second, fail)
            }),
            Some(Bench::new(&key, &base, units).note(format!(
                "`{name}` at a call site two maps reach, against the same call site reached by one \
                 map"
            ))),
        );
    }
    g
}
