//! The refutation attack (`linerate_bound::attack`): on every example and on generated
//! programs, no run of the interpreter takes a path, a prefix or an edge set the search called
//! impossible, nor leaves the prepared graph; and a false claim is caught, with the input that
//! breaks it. The long run is `bench/refute`.

use std::time::Duration;

use linerate_bound::attack::{self, attack, campaign, Campaign, Guide};
use linerate_bound::prepare::{prepare, Options};
use linerate_bound::solve::{guarantee, GuaranteeOptions};
use linerate_bound::ssp::{self, Claim, ClaimReason};
use linerate_conformance::examples::load_all;
use linerate_conformance::random_program::paths::{generate, GenOptions};
use linerate_cost::Model;

fn x86() -> Model {
    Model::builtin("x86").expect("shipped model")
}

/// A short campaign: a search of a few seconds asking for several paths (more refutations and
/// witnesses than the SSP alone), a few reached prefixes, `runs` runs.
fn short(runs: u64) -> Campaign {
    Campaign {
        search: ssp::Options {
            paths: 8,
            timeout: Some(Duration::from_secs(3)),
            threads: 2,
            ..ssp::Options::default()
        },
        reach: attack::Reach {
            limit: 8,
            budget: Duration::from_secs(3),
            check_timeout: Duration::from_secs(5),
        },
        baseline: false,
        attack: attack::Options {
            runs,
            seed: 7,
            timeout: Some(Duration::from_secs(20)),
        },
    }
}

/// The search for the `paths` slowest satisfiable paths, its claims recorded.
fn search_options(paths: usize) -> GuaranteeOptions {
    GuaranteeOptions {
        search: ssp::Options {
            paths,
            threads: 2,
            record_claims: true,
            ..ssp::Options::default()
        },
        exhaustive: false,
        check_timeout: Some(Duration::from_secs(20)),
        learn: true,
    }
}

fn describe(report: &attack::Report) -> String {
    report
        .findings
        .iter()
        .map(|f| {
            let shown = &f.packet[..f.packet.len().min(64)];
            format!(
                "{} — a {}-byte packet {}… — {} decisions, the last {:?} — claim {:?}",
                f.what,
                f.packet.len(),
                linerate_bpf::contents::hex(shown),
                f.decisions.len(),
                &f.decisions[f.decisions.len().saturating_sub(3)..],
                f.claim.as_ref().map(|c| (&c.path, &c.edges))
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_run_of_an_example_takes_what_the_search_refuted() {
    let model = x86();
    let mut claims = 0;
    let mut approached = 0;
    for example in load_all().expect("examples") {
        let Ok(prepared) = prepare(&example.object, example.entry, &model, &Options::default())
        else {
            continue;
        };
        let done = campaign(
            &example.object,
            example.entry,
            &prepared,
            &model,
            &short(600),
        )
        .expect("campaign");
        let report = &done.attack;
        assert!(
            report.findings.is_empty(),
            "{}: {} findings\n{}",
            example.name(),
            report.findings.len(),
            describe(report)
        );
        claims += report.claims;
        approached += report.approached;
    }
    assert!(claims > 100, "only {claims} claims over the examples");
    assert!(approached > 0, "no run came near a refuted path");
}

/// On loop-free generated programs every path is searched (`paths` beyond their count), so
/// every refutation is made and attacked.
#[test]
fn no_run_of_a_generated_program_takes_what_the_search_refuted() {
    let model = x86();
    let mut claims = 0;
    for seed in 0..24 {
        let options = GenOptions {
            branches: 8,
            max_paths: 256,
            ..GenOptions::default()
        };
        let generated = generate(seed, &options);
        let object = &generated.object;
        let Ok(prepared) = prepare(object, 0, &model, &Options::default()) else {
            continue;
        };
        let mut plan = short(400);
        plan.search.paths = 1000;
        let done = campaign(object, 0, &prepared, &model, &plan).expect("campaign");
        assert!(
            done.attack.findings.is_empty(),
            "seed {seed} ({}): {}",
            generated.description,
            describe(&done.attack)
        );
        claims += done.attack.claims;
    }
    assert!(
        claims > 50,
        "only {claims} claims over the generated programs"
    );
}

/// A claim that a satisfiable path is impossible is caught by the run of its own witness, and
/// the finding carries that witness's packet.
#[test]
fn a_false_claim_is_caught_with_the_input_that_breaks_it() {
    let model = x86();
    let examples = load_all().expect("examples");
    let example = examples
        .iter()
        .find(|e| e.name() == "xdp_firewall.o")
        .expect("xdp_firewall");
    let prepared =
        prepare(&example.object, example.entry, &model, &Options::default()).expect("prepares");
    let found = guarantee(
        &example.object,
        example.entry,
        &prepared,
        &model,
        &search_options(1),
        |_| {},
    )
    .expect("search");
    let ssp = found.outcome.found.first().expect("an SSP");
    let witness = ssp.witness.as_ref().expect("a witness");
    let false_claim = Claim {
        edges: ssp.path.edges.clone(),
        why: ClaimReason::Refuted,
        path: ssp.decisions.clone(),
    };
    let report = attack(
        &example.object,
        example.entry,
        &prepared,
        std::slice::from_ref(&false_claim),
        &[Guide::from_witness(witness)],
        &attack::Options {
            runs: 20,
            ..attack::Options::default()
        },
    );
    assert_eq!(report.findings.len(), 1, "{}", describe(&report));
    let finding = &report.findings[0];
    assert_eq!(finding.claim.as_ref(), Some(&false_claim));
    assert_eq!(finding.packet, witness.packet);
    assert_eq!(finding.decisions, ssp.decisions);
}

/// A loop too long to unroll (1,100 iterations, summarised) that ends by its counter only on
/// packets of more than 1,114 bytes, as xdp-tutorial's `experiment01-tailgrow` walks to the
/// packet's end. The checker gets no decisions for a summary's middle iterations, so it checks a
/// path through them as a run of two iterations; that no such run ends by the counter proves
/// nothing, and the search must not refute (or prune by) the path. A 1,200-byte packet takes it.
#[test]
fn a_path_through_a_summarised_loop_is_not_refuted_for_its_two_iteration_run() {
    use linerate_bpf::insn::build::{
        add64, add64_reg, exit, ja, jmp, jmp_reg, ldx, mov64, mov64_reg,
    };
    use linerate_bpf::insn::{Cond, Size};
    let insns = [
        mov64(3, 0),                // 0: i = 0
        ldx(Size::W, 2, 1, 0),      // 1: r2 = data
        ldx(Size::W, 1, 1, 4),      // 2: r1 = data_end
        mov64_reg(4, 2),            // 3: loop: r4 = data
        add64_reg(4, 3),            // 4: r4 += i
        add64(4, 14),               // 5
        mov64(0, 2),                // 6: r0 = XDP_PASS
        jmp_reg(Cond::Gt, 4, 1, 4), // 7: if data + i + 14 > data_end goto 12
        add64(3, 1),                // 8: i++
        jmp(Cond::Eq, 3, 1100, 1),  // 9: if i == 1100 goto 11
        ja(-8),                     // 10: goto 3
        mov64(0, 1),                // 11: r0 = XDP_DROP
        exit(),                     // 12
    ];
    let object = linerate_bpf::Object::single("long_loop", &insns, Vec::new());
    let model = x86();
    let prepared = prepare(&object, 0, &model, &Options::default()).expect("prepares");
    assert!(
        prepared
            .dag
            .edges
            .iter()
            .any(|e| matches!(e.step, linerate_bound::dag::Step::Loop { .. })),
        "the loop is summarised"
    );
    let mut plan = short(10);
    plan.search.paths = 100;
    let done = campaign(&object, 0, &prepared, &model, &plan).expect("campaign");
    assert!(
        done.attack.findings.is_empty(),
        "{}",
        describe(&done.attack)
    );
    let found =
        guarantee(&object, 0, &prepared, &model, &search_options(100), |_| {}).expect("search");
    let long = Guide {
        input: linerate_smt::ReplayInput {
            packet: vec![0; 1200],
            maps: linerate_bpf::contents::MapSeed::new(),
            ingress_ifindex: 1,
            rx_queue_index: 0,
        },
        fib: Vec::new(),
    };
    let report = attack(
        &object,
        0,
        &prepared,
        &found.outcome.claims,
        &[long],
        &attack::Options {
            runs: 2,
            ..attack::Options::default()
        },
    );
    assert!(report.findings.is_empty(), "{}", describe(&report));
    assert_eq!(
        report.distinct_paths, 2,
        "the long packet's path and a random one"
    );
}
