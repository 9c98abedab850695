//! The cost of every block and edge of a program under a model.
//!
//! Each instruction is classified into the [`Item`]s it could be (one, unless the region of a
//! memory access or the map of a map call is unknown, in which case every possibility) and charged
//! the component-wise maximum of their prices. A kfunc call could be any helper: it is charged
//! the maximum over every helper the model prices. A block costs the sum of its instructions except a
//! final conditional jump; an edge costs its source block plus that jump's `taken`/`not_taken`
//! price plus the stalls of blocking operations. A local call adds the callee's worst case.
//!
//! Stalls (paper 000 §4.2, §5.2): a blocking operation of gap kind `g` stalls until `g.min` units of
//! `g.component` have passed since the previous one (of kind `g`, or of any kind when the gap is
//! `measured_from: any_kind`). Costs must be per edge, so the distance is the
//! least one over every path reaching the operation: a forward analysis keeps, per block entry, the
//! minimum over incoming edges of the distance since the last operation of each kind (0 at function
//! entry and after calls, where the history is unknown). Summing edges therefore never
//! underestimates a path.

use std::collections::HashMap;

use linerate_bpf::insn::{CallTarget, Instruction, Operand};
use linerate_bpf::program::Object;
use linerate_cfg::{BlockId, Cfg, EdgeKind};

use crate::error::CostError;
use crate::item::{Item, MapOp, Region};
use crate::model::{Cost, GapOrigin, Model};
use crate::outcome;
use linerate_analysis::{Analysis, Fact};
use linerate_bpf::facts::helper;

/// What one instruction is charged.
#[derive(Clone, Debug)]
struct Charge {
    cost: Cost,
    /// Gap kinds the instruction may belong to (indices into [`Model::gaps`]).
    gaps: Vec<usize>,
    /// After the instruction, nothing is known about past blocking operations (a local call).
    forgets_history: bool,
}

/// Cost of one block.
#[derive(Clone, Debug)]
pub struct BlockCost {
    /// Block id.
    pub id: BlockId,
    /// Slot of its first instruction.
    pub first_insn: usize,
    /// Number of instructions.
    pub insns: usize,
    /// Cost of its instructions except a final conditional jump, stalls and callees included.
    pub cost: Cost,
    /// Whether the block is reachable from its function's entry (unreachable blocks get no stall
    /// analysis and appear on no path).
    pub reachable: bool,
}

/// Cost of leaving a block by one edge.
#[derive(Clone, Debug)]
pub struct EdgeCost {
    /// Source block.
    pub from: BlockId,
    /// Target block.
    pub to: BlockId,
    /// How the edge is taken.
    pub kind: EdgeKind,
    /// Source block plus the final jump's price for this outcome.
    pub cost: Cost,
}

/// Block and edge costs of a program under a model.
#[derive(Clone, Debug)]
pub struct ProgramCost {
    /// By block id.
    pub blocks: Vec<BlockCost>,
    /// By edge id.
    pub edges: Vec<EdgeCost>,
    /// Worst case of each function (component-wise maximum over its paths), `None` for functions
    /// with loops (their worst case needs the loops unrolled).
    pub function_worst: Vec<Option<Cost>>,
    /// What each instruction is charged, by slot, before stalls (a local call without its callee).
    pub slots: std::collections::HashMap<usize, SlotCharge>,
    /// Whether calls and callback-calling helpers include what they call.
    pub callees: Callees,
}

/// Prices that replace a model's for one program: for a device whose cost is not a sum of
/// instruction prices, such as the hXDP core, where an edge costs the rows its compiled schedule
/// executes (`linerate-hxdp`).
#[derive(Clone, Debug, PartialEq)]
pub struct PriceOverride {
    /// The cost of each block, by block id (what a path ending in the block pays for it).
    pub blocks: Vec<Cost>,
    /// The cost of leaving each block by each edge, by edge id (the block included).
    pub edges: Vec<Cost>,
}

/// The price one instruction was given.
#[derive(Clone, Debug)]
pub struct SlotCharge {
    /// Cost (a conditional jump's when not taken).
    pub cost: Cost,
    /// A conditional jump's cost when taken.
    pub taken: Option<Cost>,
    /// Gap kinds the instruction may belong to (indices into [`Model::gaps`]).
    pub gaps: Vec<usize>,
    /// The items the instruction may be (several when its region or map is not known).
    pub items: Vec<Item>,
}

struct Pricer<'a> {
    model: &'a Model,
    object: &'a Object,
    cfg: &'a Cfg,
    analysis: &'a Analysis,
    /// Whether a local call and a helper calling callbacks include what they call.
    callees: Callees,
}

/// What a local call and a helper calling callbacks (`bpf_loop`, `bpf_for_each_map_elem`) are
/// charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callees {
    /// Their own price plus the callee's worst case (as many times as the helper calls it): every
    /// block's cost is complete, and a callee with a loop is refused (its worst case needs the
    /// loop unrolled).
    Included,
    /// Their own price only (`call.local`, the helper's item): for a caller that prices the
    /// callees' paths itself (the prepared path graph of `linerate-bound` inlines calls and
    /// summarises callbacks). Callees with loops are priced like any function, and
    /// [`ProgramCost::function_worst`] of a function with calls lacks its callees.
    Apart,
}

impl Pricer<'_> {
    fn function_name(&self, slot: usize) -> String {
        self.cfg
            .block_of(slot)
            .and_then(|b| self.cfg.function_of(b))
            .map_or_else(|| self.cfg.name().to_string(), |f| f.name.clone())
    }

    fn program_error(&self, slot: usize, message: String) -> CostError {
        CostError::Program {
            function: self.function_name(slot),
            slot,
            message,
        }
    }

    /// The regions of the cost model a region the analysis found may be: global data is a map
    /// value reached through a 64-bit immediate, priced as its own region.
    fn priced_regions(&self, region: linerate_analysis::Region) -> Vec<Region> {
        use linerate_analysis::Region as R;
        match region {
            R::Ctx => vec![Region::Ctx],
            R::Packet | R::PacketMeta | R::PacketEnd => vec![Region::Packet],
            R::Stack { .. } => vec![Region::Stack],
            R::MapValue { map: Some(m) } => match self.object.maps.get(m).map(|d| &d.origin) {
                Some(linerate_bpf::program::MapOrigin::GlobalData { .. }) => vec![Region::Global],
                _ => vec![Region::MapValue],
            },
            R::MapValue { map: None } => vec![Region::MapValue, Region::Global],
            R::MapHandle { .. } | R::Function => Vec::new(),
        }
    }

    /// The items an instruction may be (a conditional jump's are priced per edge instead).
    fn candidates(&self, slot: usize, insn: &Instruction) -> Result<Vec<Item>, CostError> {
        let regions = |fact: Option<Fact>, allowed: &dyn Fn(Region) -> bool| -> Vec<Region> {
            let known = match fact {
                Some(Fact::Memory(Some(r))) => self.priced_regions(r),
                _ => Vec::new(),
            };
            if known.is_empty() {
                Region::ALL.into_iter().filter(|r| allowed(*r)).collect()
            } else {
                known
            }
        };
        let fact = self.analysis.fact(slot);
        let priced_in = |allowed: &dyn Fn(Region) -> bool| -> Vec<Item> {
            regions(fact, allowed)
                .into_iter()
                .filter_map(|region| Item::of_instruction(insn, Some(region)))
                .collect()
        };
        Ok(match *insn {
            Instruction::Alu { .. }
            | Instruction::Endian { .. }
            | Instruction::LoadImm64 { .. }
            | Instruction::Ja { .. }
            | Instruction::Exit => Item::of_instruction(insn, None).into_iter().collect(),
            Instruction::Load { .. } => priced_in(&|_| true),
            Instruction::Store { .. } => priced_in(&|r| r != Region::Ctx),
            Instruction::Atomic { .. } => {
                priced_in(&|r| matches!(r, Region::Stack | Region::MapValue | Region::Global))
            }
            Instruction::Jump { .. } | Instruction::MayGoto { .. } => Vec::new(),
            Instruction::Call(CallTarget::Local(_)) => vec![Item::CallLocal],
            Instruction::Call(CallTarget::Helper(helper::TAIL_CALL)) => vec![Item::TailCall],
            Instruction::Call(CallTarget::Helper(id)) => match MapOp::of_helper(id) {
                Some(op) => {
                    let maps: Vec<usize> = match fact {
                        Some(Fact::MapCall(Some(m))) => vec![m],
                        _ => (0..self.object.maps.len()).collect(),
                    };
                    if maps.is_empty() {
                        return Err(self.program_error(
                            slot,
                            format!(
                                "{} without a map in the object",
                                linerate_bpf::helpers::helper_name(id)
                            ),
                        ));
                    }
                    maps.into_iter()
                        .map(|m| {
                            let def = &self.object.maps[m];
                            Item::Map {
                                op,
                                map_type: def.map_type,
                                key_size: def.key_size,
                            }
                        })
                        .collect()
                }
                None if crate::item::costed_helpers().any(|h| h == id) => vec![Item::Helper(id)],
                None => {
                    return Err(self.program_error(
                        slot,
                        format!(
                            "helper {id} ({}) has no cost model",
                            linerate_bpf::helpers::helper_name(id)
                        ),
                    ))
                }
            },
            // A kernel function is priced as a helper of unknown cost: the most expensive helper
            // the device prices (its call and return are those of a helper call), leaving out
            // `perf_event_output`, whose price is the perf ring's wake-up of user space (about
            // 5 µs on x86), which no kfunc an XDP program may call does.
            Instruction::Call(CallTarget::Kfunc(_)) => crate::item::costed_helpers()
                .filter(|&id| id != linerate_bpf::facts::helper::PERF_EVENT_OUTPUT)
                .map(Item::Helper)
                .collect(),
            Instruction::LegacyPacketLoad { .. } => {
                return Err(self.program_error(
                    slot,
                    "LD_ABS/LD_IND packet loads exist only for socket-buffer programs".into(),
                ))
            }
        })
    }

    /// The helper, if the instruction is a map helper call that several maps (or a map the
    /// analysis cannot name) may reach: the kernel's generic helper then dispatches through the
    /// map's operations ([`Item::MapDispatch`]).
    fn dispatched(&self, slot: usize, insn: &Instruction) -> Option<u32> {
        match *insn {
            Instruction::Call(CallTarget::Helper(id))
                if linerate_bpf::helpers::BOUND_TO_MAP_OPS.contains(&id)
                    && !matches!(self.analysis.fact(slot), Some(Fact::MapCall(Some(_)))) =>
            {
                Some(id)
            }
            _ => None,
        }
    }

    /// Charges the alternatives: component-wise maximum of the prices the device supports.
    fn charge(&self, slot: usize, items: &[Item]) -> Result<Charge, CostError> {
        let mut charge = Charge {
            cost: Cost::zero(self.model.components().len()),
            gaps: Vec::new(),
            forgets_history: false,
        };
        let mut refusal = None;
        let mut priced = false;
        for item in items {
            match self.model.price(item) {
                Ok(price) => {
                    priced = true;
                    charge.cost.max_with(&price.cost);
                    if let Some(g) = price.gap {
                        if !charge.gaps.contains(&g) {
                            charge.gaps.push(g);
                        }
                    }
                }
                Err(reason) => refusal = refusal.or(Some((item.to_string(), reason))),
            }
        }
        if priced {
            return Ok(charge);
        }
        let (item, reason) = refusal.unwrap_or_else(|| ("?".into(), "no item".into()));
        Err(CostError::Unsupported {
            target: self.model.target().into(),
            function: self.function_name(slot),
            slot,
            item,
            reason,
        })
    }
}

/// Distances since the last blocking operation of each gap kind.
type Distances = Vec<f64>;

impl ProgramCost {
    /// Costs every block and edge of the program whose CFG is `cfg`, one of `object`'s programs (the
    /// object supplies its maps).
    pub fn new(object: &Object, cfg: &Cfg, model: &Model) -> Result<ProgramCost, CostError> {
        ProgramCost::with_analysis(object, cfg, &Analysis::run(object, cfg), model)
    }

    /// [`ProgramCost::new`] with calls and callbacks charged apart: the pricing
    /// [`crate::trace::run_cost`] prices runs with.
    pub fn for_runs(object: &Object, cfg: &Cfg, model: &Model) -> Result<ProgramCost, CostError> {
        let analysis = Analysis::run(object, cfg);
        ProgramCost::with_callees(object, cfg, &analysis, model, Callees::Apart)
    }

    /// [`ProgramCost::new`] with the program's analysis already run (`Analysis::run(object,
    /// cfg)`), e.g. to price one program under several models.
    pub fn with_analysis(
        object: &Object,
        cfg: &Cfg,
        analysis: &Analysis,
        model: &Model,
    ) -> Result<ProgramCost, CostError> {
        ProgramCost::with_callees(object, cfg, analysis, model, Callees::Included)
    }

    /// [`ProgramCost::with_analysis`] with calls and callbacks charged as `callees` says.
    pub fn with_callees(
        object: &Object,
        cfg: &Cfg,
        analysis: &Analysis,
        model: &Model,
        callees: Callees,
    ) -> Result<ProgramCost, CostError> {
        let pricer = Pricer {
            model,
            object,
            cfg,
            analysis,
            callees,
        };
        let n = model.components().len();
        let mut out = ProgramCost {
            blocks: cfg
                .blocks()
                .iter()
                .map(|b| BlockCost {
                    id: b.id,
                    first_insn: b.first,
                    insns: b.insn_count,
                    cost: Cost::zero(n),
                    reachable: false,
                })
                .collect(),
            edges: cfg
                .edges()
                .iter()
                .map(|e| EdgeCost {
                    from: e.from,
                    to: e.to,
                    kind: e.kind,
                    cost: Cost::zero(n),
                })
                .collect(),
            function_worst: vec![None; cfg.functions().len()],
            slots: Default::default(),
            callees,
        };
        if cfg.has_recursion() {
            return Err(CostError::Program {
                function: cfg.name().into(),
                slot: 0,
                message: "recursive BPF-to-BPF calls".into(),
            });
        }
        // Callees before callers.
        let mut order = Vec::new();
        let mut seen = vec![false; cfg.functions().len()];
        fn visit(cfg: &Cfg, f: usize, seen: &mut Vec<bool>, order: &mut Vec<usize>) {
            if seen[f] {
                return;
            }
            seen[f] = true;
            for callee in cfg.callees(f) {
                visit(cfg, callee, seen, order);
            }
            order.push(f);
        }
        for f in 0..cfg.functions().len() {
            visit(cfg, f, &mut seen, &mut order);
        }
        for f in order {
            out.cost_function(&pricer, f)?;
        }
        Ok(out)
    }

    /// The cost of a helper that calls a callback (`helper` being the helper's own price): plus
    /// as many calls, each a `callback.<helper>` with the callback's worst case, as the analysis says one
    /// execution makes at most — `nr_loops` for `bpf_loop` with a known count (2^23 where
    /// unknown), `max_entries` for `bpf_for_each_map_elem`.
    fn callback_calls(
        &self,
        p: &Pricer<'_>,
        slot: usize,
        helper_id: u32,
        helper: &Cost,
    ) -> Result<Cost, CostError> {
        let cfg = p.cfg;
        let ((lo, hi), max_calls) = match p.analysis.fact(slot) {
            Some(Fact::Callback {
                starts: Some(starts),
                max_calls,
            }) => (starts, max_calls),
            // The analysis reaches no execution of the helper.
            None => return Ok(helper.clone()),
            Some(_) => {
                return Err(p.program_error(
                    slot,
                    "the analysis does not know which callback the helper calls".into(),
                ))
            }
        };
        // The worst of the functions the call site may pass (one, unless it joins several).
        let mut worst: Option<Cost> = None;
        for callee in cfg
            .functions()
            .iter()
            .filter(|f| (lo..=hi).contains(&f.start))
        {
            let callee_worst = self.function_worst[callee.index].as_ref().ok_or_else(|| {
                p.program_error(
                    slot,
                    format!(
                        "callback `{}` has a loop: its worst case needs the loop unrolled",
                        callee.name
                    ),
                )
            })?;
            match &mut worst {
                Some(w) => w.max_with(callee_worst),
                None => worst = Some(callee_worst.clone()),
            }
        }
        let worst = worst.ok_or_else(|| {
            p.program_error(slot, format!("no function starts at slots {lo}..={hi}"))
        })?;
        let mut once = p.charge(slot, &[Item::Callback(helper_id)])?.cost;
        once.add(&worst);
        let mut total = Cost(once.0.iter().map(|c| c * max_calls as f64).collect());
        total.add(helper);
        Ok(total)
    }

    fn cost_function(&mut self, p: &Pricer<'_>, f: usize) -> Result<(), CostError> {
        let cfg = p.cfg;
        let func = &cfg.functions()[f];
        let gaps = p.model.gaps();
        let gap_component: Vec<usize> = gaps
            .iter()
            .map(|g| {
                p.model
                    .components()
                    .iter()
                    .position(|c| c.name == g.component)
                    .expect("validated")
            })
            .collect();
        // Charges of every instruction of every block (the final conditional jump excluded).
        let mut charges: Vec<Vec<Charge>> = Vec::new();
        // Blocks ending in a test of a map operation's outcome: the edge taken on success, what
        // it adds, and the operation's items ([`crate::outcome`]).
        let mut on_success: HashMap<BlockId, (EdgeKind, Cost, Vec<Item>)> = HashMap::new();
        for b in func.blocks.clone() {
            let mut list = Vec::new();
            for (slot, insn) in cfg.block_instructions(b) {
                let items = p.candidates(*slot, insn)?;
                if items.is_empty() {
                    continue;
                }
                let mut charge = p.charge(*slot, &items)?;
                let mut charged_items = items.clone();
                if let Some((op, failed)) = outcome::failed_items(&items) {
                    // Only where the model prices every failure (a refused one would drop out
                    // of the charge's maximum).
                    let test = outcome::outcome_test(cfg, *slot, op)
                        .filter(|t| !on_success.contains_key(&t.block))
                        .filter(|_| failed.iter().all(|i| p.model.price(i).is_ok()));
                    if let (Some(test), Ok(fail)) = (test, p.charge(*slot, &failed)) {
                        let rest = Cost(
                            charge
                                .cost
                                .0
                                .iter()
                                .zip(&fail.cost.0)
                                .map(|(ok, failed)| (ok - failed).max(0.0))
                                .collect(),
                        );
                        charge.cost = fail.cost;
                        charged_items = failed;
                        on_success.insert(test.block, (test.success, rest, items.clone()));
                    }
                }
                if let Some(id) = p.dispatched(*slot, insn) {
                    charge
                        .cost
                        .add(&p.charge(*slot, &[Item::MapDispatch(id)])?.cost);
                }
                self.slots.insert(
                    *slot,
                    SlotCharge {
                        cost: charge.cost.clone(),
                        taken: None,
                        gaps: charge.gaps.clone(),
                        items: charged_items,
                    },
                );
                if let (Instruction::Call(CallTarget::Local(_)), Callees::Apart) = (insn, p.callees)
                {
                    // The callee's blocking operations are not tracked across the call.
                    charge.forgets_history = true;
                } else if let Instruction::Call(CallTarget::Local(_)) = insn {
                    let callee = cfg
                        .calls()
                        .iter()
                        .find(|c| c.slot == *slot)
                        .map(|c| c.callee)
                        .expect("every local call is a call site");
                    let worst = self.function_worst[callee].as_ref().ok_or_else(|| {
                        p.program_error(
                            *slot,
                            format!(
                                "callee `{}` has a loop: its worst case needs the loop unrolled",
                                cfg.functions()[callee].name
                            ),
                        )
                    })?;
                    charge.cost.add(worst);
                    // The callee's blocking operations are not tracked across the call.
                    charge.forgets_history = true;
                }
                if let Instruction::Call(CallTarget::Helper(
                    id @ (helper::LOOP | helper::FOR_EACH_MAP_ELEM),
                )) = *insn
                {
                    if p.callees == Callees::Included {
                        charge.cost = self.callback_calls(p, *slot, id, &charge.cost)?;
                    }
                    charge.forgets_history = true;
                }
                list.push(charge);
            }
            charges.push(list);
        }
        let local = |b: BlockId| b - func.blocks.start;
        // A block's final conditional jump, priced per edge (with the rest of a map operation
        // on its success edge): its item, its charge, and the map operation's items there.
        type Branch = Option<(Item, Charge, Vec<Item>)>;
        let branch = |b: BlockId, kind: EdgeKind| -> Result<Branch, CostError> {
            let block = &cfg.blocks()[b];
            let Some((slot, last)) = cfg.block_instructions(b).last() else {
                return Ok(None);
            };
            debug_assert_eq!(*slot, block.last);
            let taken = kind == EdgeKind::Taken;
            let item = match *last {
                Instruction::Jump {
                    wide, cond, src, ..
                } => Item::Jump {
                    wide,
                    cond,
                    imm: matches!(src, Operand::Imm(_)),
                    taken,
                },
                Instruction::MayGoto { .. } => Item::MayGoto { taken },
                _ => return Ok(None),
            };
            let mut charge = p.charge(*slot, &[item])?;
            let mut operation = Vec::new();
            if let Some((success, rest, items)) = on_success.get(&b) {
                if *success == kind {
                    charge.cost.add(rest);
                    operation.clone_from(items);
                }
            }
            Ok(Some((item, charge, operation)))
        };

        // Runs a block from an entry distance state: its cost (stalls included) and exit state.
        let run = |b: BlockId, mut dist: Distances| -> (Cost, Distances) {
            let mut cost = Cost::zero(p.model.components().len());
            for charge in &charges[local(b)] {
                let mut stall = vec![0.0f64; cost.0.len()];
                for &g in &charge.gaps {
                    let need = (gaps[g].min - dist[g]).max(0.0);
                    let c = gap_component[g];
                    stall[c] = stall[c].max(need);
                }
                let mut spent = charge.cost.clone();
                spent.add(&Cost(stall));
                cost.add(&spent);
                for (g, d) in dist.iter_mut().enumerate() {
                    let resets = charge.gaps.contains(&g)
                        || (gaps[g].measured_from == GapOrigin::AnyKind && !charge.gaps.is_empty());
                    if charge.forgets_history || resets {
                        *d = 0.0;
                    } else {
                        *d = (*d + spent.0[gap_component[g]]).min(gaps[g].min);
                    }
                }
            }
            (cost, dist)
        };
        let advance = |dist: &Distances, extra: &Cost| -> Distances {
            dist.iter()
                .enumerate()
                .map(|(g, d)| (d + extra.0[gap_component[g]]).min(gaps[g].min))
                .collect()
        };

        // Least distances at block entries, to a fixed point: they only decrease, within
        // [0, gap.min], and converge after one pass around each loop.
        let mut entry: Vec<Option<Distances>> = vec![None; func.blocks.len()];
        entry[local(func.entry)] = Some(vec![0.0; gaps.len()]);
        let mut work = vec![func.entry];
        let mut budget = 100 * (func.blocks.len() + 1);
        while let Some(b) = work.pop() {
            if budget == 0 {
                // A guard only: fall back to the most pessimistic history everywhere.
                for &r in func.topological_order() {
                    entry[local(r)] = Some(vec![0.0; gaps.len()]);
                }
                break;
            }
            budget -= 1;
            let (_, exit) = run(b, entry[local(b)].clone().expect("queued with a state"));
            for &e in &cfg.blocks()[b].succs {
                let edge = cfg.edges()[e];
                let out = match branch(b, edge.kind)? {
                    Some((_, c, _)) => advance(&exit, &c.cost),
                    None => exit.clone(),
                };
                let slot = &mut entry[local(edge.to)];
                let merged = match slot {
                    Some(old) => old.iter().zip(&out).map(|(a, b)| a.min(*b)).collect(),
                    None => out,
                };
                if slot.as_ref() != Some(&merged) {
                    *slot = Some(merged);
                    work.push(edge.to);
                }
            }
        }

        for b in func.blocks.clone() {
            let state = entry[local(b)].clone();
            let reachable = state.is_some();
            let (cost, _) = run(b, state.unwrap_or_else(|| vec![0.0; gaps.len()]));
            for &e in &cfg.blocks()[b].succs {
                let mut edge_cost = cost.clone();
                let kind = cfg.edges()[e].kind;
                if let Some((item, c, operation)) = branch(b, kind)? {
                    edge_cost.add(&c.cost);
                    let slot = self
                        .slots
                        .entry(cfg.blocks()[b].last)
                        .or_insert(SlotCharge {
                            cost: Cost::zero(c.cost.0.len()),
                            taken: None,
                            gaps: Vec::new(),
                            items: Vec::new(),
                        });
                    slot.items.push(item);
                    slot.items.extend(operation);
                    if kind == EdgeKind::Taken {
                        slot.taken = Some(c.cost);
                    } else {
                        slot.cost = c.cost;
                    }
                }
                self.edges[e].cost = edge_cost;
            }
            self.blocks[b].cost = cost;
            self.blocks[b].reachable = reachable;
        }
        self.function_worst[f] = self.worst_case(cfg, f);
        Ok(())
    }

    /// Component-wise maximum over the function's entry-to-exit paths, if it has no loop.
    fn worst_case(&self, cfg: &Cfg, f: usize) -> Option<Cost> {
        let func = &cfg.functions()[f];
        if !func.is_loop_free() {
            return None;
        }
        let n = self.blocks.first().map_or(0, |b| b.cost.0.len());
        let mut best: Vec<Option<Cost>> = vec![None; cfg.blocks().len()];
        for &b in func.topological_order().iter().rev() {
            let block = &cfg.blocks()[b];
            let mut here: Option<Cost> = if block.succs.is_empty() {
                Some(self.blocks[b].cost.clone())
            } else {
                None
            };
            for &e in &block.succs {
                let Some(rest) = &best[cfg.edges()[e].to] else {
                    continue;
                };
                let mut through = self.edges[e].cost.clone();
                through.add(rest);
                match &mut here {
                    Some(h) => h.max_with(&through),
                    None => here = Some(through),
                }
            }
            best[b] = here;
        }
        Some(best[func.entry].clone().unwrap_or_else(|| Cost::zero(n)))
    }

    /// Replaces every block's and edge's cost by `prices` (which must cover them all, in the
    /// model's components); the per-function worst cases, made of the replaced prices, are dropped.
    pub fn replace_prices(&mut self, prices: &PriceOverride, model: &Model) -> Result<(), String> {
        let n = model.components().len();
        if prices.blocks.len() != self.blocks.len() || prices.edges.len() != self.edges.len() {
            return Err(format!(
                "prices for {} blocks and {} edges, but the program has {} and {}",
                prices.blocks.len(),
                prices.edges.len(),
                self.blocks.len(),
                self.edges.len()
            ));
        }
        if let Some(bad) = prices
            .blocks
            .iter()
            .chain(&prices.edges)
            .find(|c| c.0.len() != n)
        {
            return Err(format!(
                "a price has {} components, the model {n}",
                bad.0.len()
            ));
        }
        for (block, cost) in self.blocks.iter_mut().zip(&prices.blocks) {
            block.cost = cost.clone();
        }
        for (edge, cost) in self.edges.iter_mut().zip(&prices.edges) {
            edge.cost = cost.clone();
        }
        for worst in &mut self.function_worst {
            *worst = None;
        }
        Ok(())
    }

    /// The slowest entry-to-exit path of the program, per-packet work included (each component's
    /// maximum over the paths, feasible or not); `None` if the entry function has loops.
    pub fn worst_cost(&self, model: &Model) -> Option<Cost> {
        let mut cost = model.per_packet().clone();
        cost.add(self.function_worst.first()?.as_ref()?);
        Some(cost)
    }

    /// Cost of running the blocks `path` in order, per-packet work included: the edges between
    /// consecutive blocks (the costlier one where two edges connect them) plus the last block
    /// (without its final conditional jump).
    pub fn path_cost(&self, cfg: &Cfg, model: &Model, path: &[BlockId]) -> Result<Cost, String> {
        let mut cost = model.per_packet().clone();
        cost.add(&self.blocks_cost(cfg, path)?);
        Ok(cost)
    }

    /// [`ProgramCost::path_cost`] without the per-packet work: one function's blocks as run.
    pub(crate) fn blocks_cost(&self, cfg: &Cfg, path: &[BlockId]) -> Result<Cost, String> {
        let Some(&last) = path.last() else {
            return Err("empty path".into());
        };
        for &b in path {
            if b >= self.blocks.len() {
                return Err(format!(
                    "no block {b} (the program has {})",
                    self.blocks.len()
                ));
            }
        }
        let mut cost = Cost::zero(self.blocks[last].cost.0.len());
        for pair in path.windows(2) {
            let mut step: Option<Cost> = None;
            for &e in &cfg.blocks()[pair[0]].succs {
                if self.edges[e].to == pair[1] {
                    match &mut step {
                        Some(s) => s.max_with(&self.edges[e].cost),
                        None => step = Some(self.edges[e].cost.clone()),
                    }
                }
            }
            let step =
                step.ok_or_else(|| format!("no edge from block {} to block {}", pair[0], pair[1]))?;
            cost.add(&step);
        }
        cost.add(&self.blocks[last].cost);
        Ok(cost)
    }
}
