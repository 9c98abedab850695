//! Windows and what holds around them: entry facts from the analysis, readable registers,
//! registers and stack bytes live after the window.

use linerate_bpf::insn::build::{add64, exit, jmp_reg, ldx, mov64, mov64_reg, stx};
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::Object;
use linerate_optimize::window::{EntryFact, Place};
use linerate_optimize::{windows, SearchOptions};

#[test]
fn a_window_knows_its_pointers_and_what_is_read_after_it() {
    let insns = [
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, 14),
        jmp_reg(Cond::Gt, 4, 3, 6),
        // The window: slots 5..=8.
        ldx(Size::B, 5, 2, 12),
        stx(Size::B, 10, -1, 5),
        stx(Size::B, 10, -2, 5),
        mov64(0, 2),
        // Reads one of the two stack bytes back.
        ldx(Size::B, 6, 10, -1),
        jmp_reg(Cond::Eq, 6, 5, 0),
        exit(),
        mov64(0, 1),
        exit(),
    ];
    let object = Object::single("t", &insns, Vec::new());
    let found = windows(&object, 0, &SearchOptions::default()).expect("windows");
    let w = found
        .iter()
        .find(|w| w.start == 5)
        .expect("a window at slot 5");
    assert_eq!(w.original.len(), 5, "the window runs to the block's jump");
    assert_eq!(
        w.entry[2],
        EntryFact::Pointer {
            place: Place::Packet,
            offset: Some(0)
        }
    );
    // r1 still holds the context, but the window does not read it: another window's rewrite
    // may have changed it, so a candidate may not read it either.
    assert_eq!(w.entry[1], EntryFact::Uninit);
    assert_eq!(w.entry[5], EntryFact::Uninit);
    assert_eq!(w.entry[0], EntryFact::Uninit);
    // After the window: r0 (exit), r5 and r6 (the jump) are read.
    assert_eq!(w.live_out, (1 << 0) | (1 << 5) | (1 << 6));
    assert!(
        !w.live_stack.contains(-1),
        "the window itself reads r10-1 back"
    );
    let w0 = found
        .iter()
        .find(|w| w.start == 0)
        .expect("a window at slot 0");
    assert_eq!(w0.original.len(), 4);
    assert!(
        w0.live_stack == Default::default(),
        "nothing on the stack is read before it is written"
    );
}
