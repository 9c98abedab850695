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

#[test]
fn executions_give_windows_tests_from_real_states_and_their_frequency() {
    use linerate_bpf::contents::MapSeed;
    use linerate_optimize::observe::{observe, Executions};
    use linerate_optimize::run::run_window;
    use linerate_optimize::search::{entry_tags, place_base};

    let insns = [
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, 20),
        jmp_reg(Cond::Gt, 4, 3, 2),
        // Reached only by packets of 20 bytes or more: loads byte 12.
        ldx(Size::B, 0, 2, 12),
        exit(),
        mov64(0, 1),
        exit(),
    ];
    let object = Object::single("t", &insns, Vec::new());
    let found = windows(&object, 0, &SearchOptions::default()).expect("windows");
    let mut long = vec![0u8; 60];
    long[12] = 0x86;
    let packets = vec![long, vec![7u8; 14]];
    let mut witness = vec![0u8; 20];
    witness[12] = 0x42;
    let seed = MapSeed::new();
    let witnesses = vec![(witness, MapSeed::new())];
    let seen = observe(
        &object,
        0,
        &found,
        &Executions {
            seed: &seed,
            packets: &packets,
            witnesses: &witnesses,
        },
    );
    let first = found
        .iter()
        .position(|w| w.start == 0)
        .expect("window at 0");
    let load = found
        .iter()
        .position(|w| w.start == 5)
        .expect("window at 5");
    // Every packet runs the first window; one of the two the load.
    assert_eq!(seen[first].per_packet, 1.0);
    assert_eq!(seen[load].per_packet, 0.5);
    // The witness's state and the long packet's: the load reads each one's byte 12.
    assert_eq!(seen[load].tests.len(), 2);
    let w = &found[load];
    let tags = entry_tags(w);
    let original: Vec<_> = w.original.iter().map(|i| Some(*i)).collect();
    let mut loaded = Vec::new();
    for t in &seen[load].tests {
        assert_eq!(t.regs[2], place_base(Place::Packet), "r2 is data");
        let out = run_window(&original, &tags, t);
        assert_eq!(out.fault, None);
        loaded.push(out.regs[0].v);
    }
    assert_eq!(loaded, vec![0x42, 0x86]);
}
