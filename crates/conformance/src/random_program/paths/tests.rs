use super::*;
use linerate_bpf::insn::Instruction;

/// Paths from each slot to an exit, counted on the decoded instructions alone (independently of
/// the tree the generator counted them on); `None` for a backward or out-of-range jump.
fn paths_by_slot(object: &Object) -> Option<u128> {
    let program = &object.programs[0];
    let decoded = program.decode().ok()?;
    let slots = program.insns.len();
    let mut paths = vec![0u128; slots + 1];
    for &(slot, insn) in decoded.iter().rev() {
        let next = slot + insn.slots();
        let target = |t: i64| -> Option<u128> {
            (t > slot as i64 && (t as usize) < slots).then(|| paths[t as usize])
        };
        paths[slot] = match insn {
            Instruction::Exit => 1,
            Instruction::Ja { .. } => target(insn.jump_target(slot)?)?,
            Instruction::Jump { .. } => paths[next] + target(insn.jump_target(slot)?)?,
            _ => paths[next],
        };
    }
    Some(paths[0])
}

fn conditional_jumps(object: &Object) -> usize {
    object.programs[0]
        .decode()
        .unwrap()
        .iter()
        .filter(|(_, insn)| matches!(insn, Instruction::Jump { .. }))
        .count()
}

/// The path count and branch count the generator reports are those of the instructions; every
/// jump goes forward; the same seed gives the same program.
#[test]
fn reported_paths_and_branches_match_the_instructions() {
    for seed in 0..300 {
        let options = GenOptions {
            branches: 1 + seed as usize % 14,
            time_random: seed % 3 == 0,
            ..GenOptions::default()
        };
        let generated = generate(seed, &options);
        let counted = paths_by_slot(&generated.object);
        assert_eq!(
            counted,
            Some(generated.paths as u128),
            "seed {seed}:\n{}",
            generated.description
        );
        assert!(generated.paths <= options.max_paths);
        assert!(generated.branches <= options.branches);
        // The generator counts a lookup's NULL check as its branch.
        assert_eq!(conditional_jumps(&generated.object), generated.branches);
        let again = generate(seed, &options);
        assert_eq!(
            again.object.programs[0].insns,
            generated.object.programs[0].insns
        );
        assert_eq!(again.seed_maps, generated.seed_maps);
    }
}

/// The branch budget and the path cap steer the number of paths from a few to thousands.
#[test]
fn path_counts_follow_the_options() {
    let few = GenOptions {
        branches: 2,
        ..GenOptions::default()
    };
    for seed in 0..50 {
        let paths = generate(seed, &few).paths;
        assert!((2..=4).contains(&paths), "seed {seed}: {paths} paths");
    }
    let many = GenOptions {
        branches: 16,
        max_paths: 5000,
        ..GenOptions::default()
    };
    let counts: Vec<u64> = (0..50).map(|seed| generate(seed, &many).paths).collect();
    assert!(counts.iter().all(|&p| p <= 5000));
    assert!(
        counts.iter().filter(|&&p| p >= 500).count() >= 5,
        "too few programs with many paths: {counts:?}"
    );
    let capped = GenOptions {
        branches: 30,
        max_paths: 64,
        ..GenOptions::default()
    };
    for seed in 0..50 {
        assert!(generate(seed, &capped).paths <= 64);
    }
}

/// Every feature shows up in some program, time and random numbers only when allowed (and then
/// the program says it is nondeterministic), writes only when allowed.
#[test]
fn features_follow_the_options() {
    let mut seen = BTreeSet::new();
    for seed in 0..300 {
        let generated = generate(seed, &GenOptions::default());
        assert!(!generated.nondeterministic);
        seen.extend(generated.features);
    }
    for feature in [
        "length check",
        "packet read",
        "packet store",
        "array lookup",
        "hash lookup",
        "map value read",
        "map value store",
        "atomic add on a map value",
        "map_update_elem",
        "map_delete_elem",
        "branch on helper result",
        "branch on packet byte",
        "branch on map value",
        "branch on variable",
        "computed action",
        "early return",
    ] {
        assert!(seen.contains(feature), "no program with {feature}");
    }
    let options = GenOptions {
        time_random: true,
        map_writes: false,
        packet_writes: false,
        ..GenOptions::default()
    };
    let mut nondeterministic = 0;
    for seed in 0..100 {
        let generated = generate(seed, &options);
        let f = &generated.features;
        assert_eq!(
            generated.nondeterministic,
            f.contains("ktime_get_ns") || f.contains("get_prandom_u32")
        );
        nondeterministic += usize::from(generated.nondeterministic);
        for write in ["map_update_elem", "map_delete_elem", "packet store"] {
            assert!(!f.contains(write), "seed {seed} has {write}");
        }
    }
    assert!(nondeterministic > 10);
    assert!((0..100).any(|seed| generate(seed, &options)
        .features
        .contains("branch on time/random")));
}

/// Packets are at least 14 bytes long and reach past the longest check.
#[test]
fn packets_cover_the_checked_lengths() {
    let generated = generate(3, &GenOptions::default());
    let packets = generated.packets(9, 200);
    assert!(packets.iter().all(|p| p.len() >= MIN_PACKET));
    assert!(packets
        .iter()
        .any(|p| p.len() >= generated.longest_check.max(MIN_PACKET)));
    assert_ne!(packets, generated.packets(10, 200));
}
