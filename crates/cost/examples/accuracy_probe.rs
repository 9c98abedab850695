//! Scratch: per executed example packet, kernel time and the model's charge by item class.
use linerate_bpf::contents::MapMode;
use linerate_cfg::Cfg;
use linerate_conformance::examples::load_all;
use linerate_cost::item::Item;
use linerate_cost::{Model, ProgramCost};
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;
use std::collections::BTreeMap;

fn class(item: &Item) -> String {
    match item {
        Item::Alu { op, .. } => match op {
            linerate_bpf::insn::AluOp::Mov => "mov".into(),
            linerate_bpf::insn::AluOp::Mul => "mul".into(),
            linerate_bpf::insn::AluOp::Div
            | linerate_bpf::insn::AluOp::Mod
            | linerate_bpf::insn::AluOp::SDiv
            | linerate_bpf::insn::AluOp::SMod => "div".into(),
            _ => "alu".into(),
        },
        Item::Endian { .. } => "alu".into(),
        Item::LoadImm64 => "mov".into(),
        Item::Load { region, .. } => format!("load.{}", region.name()),
        Item::Store { .. } => "store".into(),
        Item::Atomic { .. } => "atomic".into(),
        Item::Ja => "jump".into(),
        Item::Jump { taken, .. } => {
            if *taken {
                "jump.t".into()
            } else {
                "jump.n".into()
            }
        }
        Item::MayGoto { .. } => "jump.n".into(),
        Item::CallLocal | Item::Exit => "call".into(),
        Item::Helper(_) | Item::Map { .. } | Item::TailCall | Item::MapDispatch(_) => {
            format!("helper:{item}")
        }
    }
}

use linerate_bpf::insn::{CallTarget, Instruction, Operand};
/// (registers read, registers written, stack slot read, stack slot written) of one instruction.
fn du(i: &Instruction) -> (Vec<u8>, Vec<u8>, Option<i16>, Option<i16>) {
    let op = |o: &Operand| match o {
        Operand::Reg(r) => vec![*r],
        _ => vec![],
    };
    match i {
        Instruction::Alu {
            op: linerate_bpf::insn::AluOp::Mov,
            dst,
            src,
            ..
        } => (op(src), vec![*dst], None, None),
        Instruction::Alu { dst, src, .. } => {
            let mut u = op(src);
            u.push(*dst);
            (u, vec![*dst], None, None)
        }
        Instruction::Endian { dst, .. } => (vec![*dst], vec![*dst], None, None),
        Instruction::LoadImm64 { dst, .. } => (vec![], vec![*dst], None, None),
        Instruction::Load { dst, src, off, .. } => (
            vec![*src],
            vec![*dst],
            if *src == 10 { Some(*off) } else { None },
            None,
        ),
        Instruction::Store { dst, src, off, .. } => {
            let mut u = op(src);
            u.push(*dst);
            (u, vec![], None, if *dst == 10 { Some(*off) } else { None })
        }
        Instruction::Atomic {
            dst, src, fetch, ..
        } => (
            vec![*dst, *src],
            if *fetch { vec![*src] } else { vec![] },
            None,
            None,
        ),
        Instruction::Jump { dst, src, .. } => {
            let mut u = op(src);
            u.push(*dst);
            (u, vec![], None, None)
        }
        Instruction::Call(CallTarget::Helper(_)) | Instruction::Call(_) => {
            (vec![1, 2, 3, 4, 5], vec![0, 1, 2, 3, 4, 5], None, None)
        }
        Instruction::Exit => (vec![0], vec![], None, None),
        _ => (vec![], vec![], None, None),
    }
}

fn main() {
    let model = Model::builtin("x86").unwrap();
    let pp = model.per_packet().0[0];
    for example in load_all().unwrap() {
        let program = &example.object.programs[example.entry];
        let cfg = Cfg::build(program).unwrap();
        let cost = ProgramCost::new(&example.object, &cfg, &model).unwrap();
        let options = VmOptions {
            record_steps: true,
            ..Default::default()
        };
        let mut vm = Driver::new(&example.object, &example.seed, options, MapMode::Fresh).unwrap();
        let mut loaded =
            linerate_kernel::drive::Driver::new(&example.object, &example.seed, MapMode::Fresh)
                .unwrap();
        for (i, packet) in example.packets.iter().enumerate() {
            let out = vm.run(example.entry, &packet.bytes, &[]).unwrap();
            if out.steps.iter().any(|s| s.program != example.entry) {
                continue;
            }
            let mut cnt: BTreeMap<String, (usize, f64)> = BTreeMap::new();
            let steps = &out.steps;
            for (k, s) in steps.iter().enumerate() {
                let Some(ch) = cost.slots.get(&s.slot) else {
                    continue;
                };
                let Some(item) = ch.items.first() else {
                    continue;
                };
                let mut c = class(item);
                let mut cy = ch.cost.0[0];
                if let Some(t) = &ch.taken {
                    let next = steps.get(k + 1).map(|n| n.slot);
                    if next != Some(s.slot + 1) {
                        cy = t.0[0];
                        c = "jump.t".into();
                    } else {
                        c = "jump.n".into();
                    }
                }
                let e = cnt.entry(c).or_default();
                e.0 += 1;
                e.1 += cy;
            }
            // global critical path: ready time per register / stack slot; branches do not wait
            let insns: std::collections::HashMap<usize, Instruction> =
                program.decode().unwrap().into_iter().collect();
            let mut ready = [0f64; 11];
            let mut stack: std::collections::HashMap<i16, f64> = Default::default();
            let mut cp = 0f64;
            // per block local chain
            let mut local_sum = 0f64;
            let mut lready = [0f64; 11];
            let mut lstack: std::collections::HashMap<i16, f64> = Default::default();
            let mut lmax = 0f64;
            let mut nonbranch_local = 0f64;
            let mut lmax_nb = 0f64;
            for s in steps.iter() {
                let Some(ins) = insns.get(&s.slot) else {
                    continue;
                };
                if cfg
                    .block_of(s.slot)
                    .map(|b| cfg.blocks()[b].first == s.slot)
                    .unwrap_or(false)
                {
                    local_sum += lmax;
                    nonbranch_local += lmax_nb;
                    lmax = 0.0;
                    lmax_nb = 0.0;
                    lready = [0.0; 11];
                    lstack.clear();
                }
                let lat = cost.slots.get(&s.slot).map(|c| c.cost.0[0]).unwrap_or(0.0);
                let (u, d, sr, sw) = du(ins);
                let mut start = u.iter().map(|r| ready[*r as usize]).fold(0.0, f64::max);
                if let Some(o) = sr {
                    start = start.max(*stack.get(&o).unwrap_or(&0.0));
                }
                let end = start + lat;
                let mut lstart = u.iter().map(|r| lready[*r as usize]).fold(0.0, f64::max);
                if let Some(o) = sr {
                    lstart = lstart.max(*lstack.get(&o).unwrap_or(&0.0));
                }
                let lend = lstart + lat;
                let is_branch = matches!(ins, Instruction::Jump { .. });
                if !is_branch {
                    cp = cp.max(end);
                    lmax_nb = lmax_nb.max(lend);
                }
                lmax = lmax.max(lend);
                for r in d {
                    ready[r as usize] = end;
                    lready[r as usize] = lend;
                }
                if let Some(o) = sw {
                    stack.insert(o, end);
                    lstack.insert(o, lend);
                }
            }
            local_sum += lmax;
            nonbranch_local += lmax_nb;
            cnt.insert("zcp".into(), (0, cp));
            cnt.insert("zlocal".into(), (0, local_sum));
            cnt.insert("zlocalnb".into(), (0, nonbranch_local));
            let mut ts: Vec<f64> = (0..5)
                .map(|_| {
                    loaded
                        .run(example.entry, &packet.bytes, &[], 20000)
                        .unwrap()
                        .duration_ns as f64
                })
                .collect();
            ts.sort_by(|a, b| a.total_cmp(b));
            let cats: Vec<String> = cnt
                .iter()
                .map(|(k, (n, c))| format!("{k}={n}:{c:.1}"))
                .collect();
            println!(
                "{} {} {} {} {} {}",
                example.name(),
                i,
                ts[0],
                ts[2],
                pp,
                cats.join(" ")
            );
        }
    }
}
