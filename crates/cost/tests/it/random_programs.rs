//! No silent zero: random verifier-valid programs using every ALU, jump, load, store and atomic
//! class cost something in every block under every shipped model, or are refused with the reason
//! the device cannot run one of their instructions — never another error.

use linerate_bpf::disasm::{format_instruction, NoNames};
use linerate_cfg::Cfg;
use linerate_conformance::random_program::{object, xdp_program};
use linerate_cost::{CostError, Model, ProgramCost};
use proptest::test_runner::{Config, TestCaseError, TestRunner};

#[test]
fn random_programs_are_priced_or_refused_with_a_reason() {
    for (target, _) in linerate_cost::model::BUILTIN {
        let model = Model::builtin(target).unwrap();
        let mut runner = TestRunner::new(Config {
            cases: 300,
            failure_persistence: None,
            ..Config::default()
        });
        let refused = std::cell::Cell::new(0);
        let priced = std::cell::Cell::new(0);
        runner
            .run(&xdp_program(40), |insns| {
                let obj = object("random", &insns);
                let cfg = Cfg::build(&obj.programs[0]).unwrap();
                match ProgramCost::new(&obj, &cfg, &model) {
                    Ok(cost) => {
                        priced.set(priced.get() + 1);
                        // Every reachable instruction is charged something, or priced at
                        // zero by an entry that says why (x86's `le64` is no instruction).
                        for block in cost.blocks.iter().filter(|b| b.reachable) {
                            for (slot, insn) in cfg.block_instructions(block.id) {
                                let charge = cost.slots.get(slot).ok_or_else(|| {
                                    TestCaseError::fail(format!("insn {slot} has no charge"))
                                })?;
                                let costs = |c: &linerate_cost::Cost| c.0.iter().any(|v| *v > 0.0);
                                let explained = charge.items.iter().all(|i| {
                                    model
                                        .file()
                                        .items
                                        .get(&i.to_string())
                                        .and_then(|p| p.note.as_ref())
                                        .is_some_and(|n| n.len() > 20)
                                });
                                let charged =
                                    costs(&charge.cost) && charge.taken.as_ref().is_none_or(costs);
                                if !charged && !explained {
                                    return Err(TestCaseError::fail(format!(
                                        "insn {slot} ({}) costs 0 without a reason",
                                        format_instruction(insn, &NoNames)
                                    )));
                                }
                            }
                        }
                        Ok(())
                    }
                    Err(CostError::Unsupported { reason, .. }) if !reason.is_empty() => {
                        refused.set(refused.get() + 1);
                        Ok(())
                    }
                    Err(e) => Err(TestCaseError::fail(e.to_string())),
                }
            })
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        let (priced, refused) = (priced.get(), refused.get());
        println!("{target}: {priced} random programs priced, {refused} refused");
        if *target == "x86" {
            assert_eq!(refused, 0, "x86 runs every instruction the kernel accepts");
        }
    }
}
