//! From timings to prices: per-bench fits (time minus baseline, per item, minus the glue at its
//! own fitted price), the items derived from several benches, and the plan saying how each item
//! of a complete model is priced.

use std::collections::{HashMap, HashSet};

use crate::measure::Samples;
use crate::programs::{
    dispatch_bench, kernel_read_key, map_cases, Bench, DispatchCase, Role, Suite, CTX_FIELDS,
    JUMP_PLACEMENTS, KERNEL_READ_SIZES, QUEUE_TARGETS, REDIRECT_TARGETS,
};
use crate::CalibrateError;
use linerate_bpf::facts::helper;
use linerate_cost::item::{self, Item, MapOp, FAILURE_PRICED_MAP_TYPES};

/// Spreads of figures below this many ns are taken relative to it (a zero-cost item's spread
/// would otherwise be infinite).
pub const SPREAD_FLOOR_NS: f64 = 0.1;

/// How one item of the model is priced.
#[derive(Clone, Debug)]
pub(crate) enum Pricing {
    /// The bench of this key.
    Bench(String),
    /// The most expensive of several benches.
    Max { of: Vec<String>, what: String },
    /// Independently loaded copies of one bench: the upper median of their figures (the JIT
    /// places each copy at a random offset; a rare placement can be pathologically slow).
    Placements { of: Vec<String> },
    /// `max(overwrite, pair − lookup)`: an update either overwrites (measured) or inserts (bounded
    /// like a delete, from an insert+delete pair minus a lookup); `pair` is the dearer of
    /// `pairs` (the map populated and empty).
    Update {
        overwrite: String,
        pairs: Vec<String>,
        lookup: String,
    },
    /// `of − less`, `of` the dearest of its benches: a bench that also does another bench's unit
    /// of work, less that work.
    Less {
        of: Vec<String>,
        less: String,
        what: String,
    },
    /// Shares another item's price.
    SameAs { target: String, note: String },
    /// Costs nothing beyond other items.
    Zero(String),
}

impl Pricing {
    /// Whether the item is measured directly (by its bench, or by copies of its bench).
    pub fn is_direct(&self) -> bool {
        matches!(self, Pricing::Bench(_) | Pricing::Placements { .. })
    }

    /// The benches it needs.
    pub fn deps(&self) -> Vec<String> {
        match self {
            Pricing::Bench(b) => vec![b.clone()],
            Pricing::Max { of, .. } | Pricing::Placements { of } => of.clone(),
            Pricing::Less { of, less, .. } => of.iter().chain([less]).cloned().collect(),
            Pricing::Update {
                overwrite,
                pairs,
                lookup,
            } => [overwrite]
                .into_iter()
                .chain(pairs)
                .chain([lookup])
                .cloned()
                .collect(),
            Pricing::SameAs { .. } | Pricing::Zero(_) => Vec::new(),
        }
    }
}

/// Every item a complete x86 model prices, and how.
pub(crate) fn plan() -> Vec<(String, Pricing)> {
    let mut out = Vec::new();
    for it in item::universe() {
        let key = it.to_string();
        let pricing = match it {
            Item::Load {
                region: linerate_cost::Region::Ctx,
                access,
            } => {
                if access.bytes == 4 && !access.signed {
                    Pricing::Max {
                        of: CTX_FIELDS
                            .iter()
                            .map(|(f, _, _)| format!("aux.ctx.{f}"))
                            .collect(),
                        what: "the slowest `xdp_md` field".into(),
                    }
                } else {
                    Pricing::SameAs {
                        target: "load.ctx.u32".into(),
                        note: format!(
                            "the verifier refuses {access} loads from `xdp_md` (every field is a \
                             u32 read at its exact size), so no program contains one; priced as \
                             the u32 load"
                        ),
                    }
                }
            }
            Item::Exit => Pricing::Zero(
                "a function's return is included in `call.local` (the callee's `exit` is timed \
                 with the call) and the program's own in `per_packet`"
                    .into(),
            ),
            Item::TailCall => Pricing::Max {
                of: vec![
                    "aux.tail_call.direct".into(),
                    "aux.tail_call.indirect".into(),
                ],
                what: "the slower of a direct (constant slot) and an indirect tail call".into(),
            },
            Item::Helper(helper::REDIRECT_MAP) => Pricing::Max {
                of: REDIRECT_TARGETS
                    .iter()
                    .map(|(_, name)| format!("aux.redirect_map.{name}"))
                    .collect(),
                what: "the dearest target map type (devmap, devmap_hash, cpumap; xskmap needs an \
                       AF_XDP socket and is not timed)"
                    .into(),
            },
            Item::Helper(id @ (helper::PROBE_READ_KERNEL | helper::PROBE_READ_KERNEL_STR)) => {
                Pricing::Max {
                    of: KERNEL_READ_SIZES
                        .iter()
                        .map(|&bytes| kernel_read_key(id, bytes))
                        .collect(),
                    what: format!(
                        "the dearer of {} bytes (the kernel copies 8 bytes at a time, a string a \
                         byte at a time: a read of more than {} bytes costs more than this)",
                        KERNEL_READ_SIZES.map(|b| b.to_string()).join(" and "),
                        KERNEL_READ_SIZES[KERNEL_READ_SIZES.len() - 1]
                    ),
                }
            }
            Item::Helper(helper::RINGBUF_RESERVE) => Pricing::Max {
                of: ["submit", "discard"]
                    .iter()
                    .map(|end| format!("aux.ringbuf.reserve_{end}"))
                    .collect(),
                what: "a reservation with its end, the dearer of submit and discard: the verifier \
                       makes a program end every reservation it gets with exactly one of them, \
                       which are therefore priced 0"
                    .into(),
            },
            Item::Helper(helper::RINGBUF_SUBMIT | helper::RINGBUF_DISCARD) => Pricing::Zero(
                "included in `helper.ringbuf_reserve`, which is timed with its submit or discard \
                 (the verifier makes a program end every reservation with exactly one of them)"
                    .into(),
            ),
            Item::Helper(
                id @ (helper::MAP_PUSH_ELEM | helper::MAP_POP_ELEM | helper::MAP_PEEK_ELEM),
            ) => {
                let name = linerate_bpf::helpers::helper_name(id);
                Pricing::Max {
                    of: QUEUE_TARGETS
                        .iter()
                        .map(|(_, kind)| format!("aux.{name}.{kind}"))
                        .collect(),
                    what: "the dearer of a queue and a stack".into(),
                }
            }
            Item::Helper(helper::SPIN_LOCK) => Pricing::Max {
                of: vec!["aux.spin_lock_unlock".into()],
                what: "a lock with its unlock: the verifier makes a program release every lock it \
                       takes with exactly one unlock, which is therefore priced 0"
                    .into(),
            },
            Item::Helper(helper::SPIN_UNLOCK) => Pricing::Zero(
                "included in `helper.spin_lock`, which is timed with its unlock (the verifier \
                 makes a program release every lock it takes with exactly one unlock)"
                    .into(),
            ),
            Item::Helper(id @ (helper::LOOP | helper::FOR_EACH_MAP_ELEM)) => Pricing::Less {
                of: vec![format!(
                    "aux.{}.once",
                    linerate_bpf::helpers::helper_name(id)
                )],
                less: Item::Callback(id).to_string(),
                what: "the helper's own work: a call making one callback call, less that call"
                    .into(),
            },
            Item::MapDispatch(helper::MAP_LOOKUP_ELEM) => {
                Pricing::Bench(dispatch_bench(DispatchCase::Lookup))
            }
            Item::MapDispatch(helper::REDIRECT_MAP) => {
                Pricing::Bench(dispatch_bench(DispatchCase::RedirectMap))
            }
            Item::MapDispatch(_) => Pricing::SameAs {
                target: Item::MapDispatch(helper::REDIRECT_MAP).to_string(),
                note: "an indirect call through the map's operations where a direct call of the \
                       map type's operation would be (as for `redirect_map`, not timed apart)"
                    .into(),
            },
            Item::MayGoto { taken: true } => Pricing::SameAs {
                target: Item::MayGoto { taken: false }.to_string(),
                note: "taken at most once per run, when the loop budget runs out: the same \
                       counter test, then a jump out of the loop"
                    .into(),
            },
            Item::Ja | Item::Jump { .. } => Pricing::Placements {
                of: (0..JUMP_PLACEMENTS).map(|c| format!("{key}@{c}")).collect(),
            },
            _ => Pricing::Bench(key.clone()),
        };
        out.push((key, pricing));
    }
    for case in map_cases() {
        let name = format!("{}.k{}", case.map_type.name(), case.key_size);
        let key = |op| {
            Item::Map {
                op,
                map_type: case.map_type,
                key_size: case.key_size,
            }
            .to_string()
        };
        let lookup = key(MapOp::Lookup);
        out.push((lookup.clone(), Pricing::Bench(lookup.clone())));
        if case.lookup_only() {
            continue;
        }
        let overwrite = format!("aux.map.overwrite.{name}");
        if case.map_type.is_array_like() {
            out.push((key(MapOp::Update), Pricing::Bench(overwrite)));
            out.push((key(MapOp::Delete), Pricing::Bench(key(MapOp::Delete))));
        } else {
            let pairs = vec![
                format!("aux.map.pair.{name}"),
                format!("aux.map.pair_empty.{name}"),
            ];
            out.push((
                key(MapOp::Update),
                Pricing::Update {
                    overwrite,
                    pairs: pairs.clone(),
                    lookup: lookup.clone(),
                },
            ));
            out.push((
                key(MapOp::Delete),
                Pricing::Less {
                    of: pairs,
                    less: lookup,
                    what: "a delete, bounded from above by an insert+delete pair minus a lookup \
                           (the insert does at least a lookup's work)"
                        .into(),
                },
            ));
        }
        if FAILURE_PRICED_MAP_TYPES.contains(&case.map_type) {
            for op in [MapOp::Lookup, MapOp::Update, MapOp::Delete] {
                let failed = Item::MapFailed {
                    op,
                    map_type: case.map_type,
                    key_size: case.key_size,
                }
                .to_string();
                out.push((failed.clone(), Pricing::Bench(failed)));
            }
        }
    }
    out
}

/// The bench whose unit is one cycle: a chain of dependent 64-bit register adds (one cycle of
/// latency on current x86 cores), timing the clock the core runs at.
pub(crate) const CLOCK_BENCH: &str = "aux.clock";

/// The benches needed to price `items` (their dependencies and, transitively, what those
/// subtract), always including `per_packet`.
pub(crate) fn needed_benches(suite: &Suite, items: &[&(String, Pricing)]) -> HashSet<String> {
    let minus: HashMap<&str, Vec<&str>> = suite
        .groups
        .iter()
        .flat_map(|g| &g.programs)
        .filter_map(|p| match &p.role {
            Role::Timed(Some(b)) => Some((
                b.key.as_str(),
                b.minus.iter().map(|(m, _)| m.as_str()).collect(),
            )),
            _ => None,
        })
        .collect();
    let mut needed = HashSet::new();
    let mut todo: Vec<String> = items.iter().flat_map(|(_, p)| p.deps()).collect();
    // The empty program, and the 1-cycle add chain that gives the effective clock frequency.
    todo.push("per_packet".into());
    todo.push(CLOCK_BENCH.into());
    while let Some(key) = todo.pop() {
        if needed.insert(key.clone()) {
            if let Some(ms) = minus.get(key.as_str()) {
                todo.extend(ms.iter().map(|m| m.to_string()));
            }
        }
    }
    needed
}

/// A fitted figure: the price, the per-round figures, and their spread.
#[derive(Clone, Debug)]
pub(crate) struct Fitted {
    /// ns, never negative.
    pub ns: f64,
    /// The per-round figures.
    pub rounds: Vec<f64>,
    /// `(max − min) / max(median, SPREAD_FLOOR_NS)` of the rounds.
    pub spread: f64,
}

impl Fitted {
    /// A price (clamped at 0) with the per-round figures its spread comes from.
    fn new(ns: f64, rounds: Vec<f64>) -> Fitted {
        let med = median(&rounds);
        let (lo, hi) = rounds
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        let spread = if rounds.is_empty() {
            0.0
        } else {
            (hi - lo) / med.max(SPREAD_FLOOR_NS)
        };
        Fitted {
            ns: ns.max(0.0),
            rounds,
            spread,
        }
    }
}

/// The quantile of all runs a price is taken at: the 5th percentile, the uncontended figure. On
/// a shared host the same program runs at different speeds from moment to moment (see
/// [`contention_factor`]), and which speeds a calibration window catches moves from window to
/// window; the fastest runs do not, and the 5th percentile is robust to a single freak run.
pub const FAST_QUANTILE: f64 = 0.05;

/// The quantile of a program's runs the contention factor compares with its fastest: a
/// guarantee must hold while this shared host is slow, and it is slower than this a tenth of the
/// time (the model's meaning, [`linerate_cost::model::SLOW_QUANTILE`]).
pub use linerate_cost::model::SLOW_QUANTILE;

/// Programs with fewer runs than this do not take part in the contention factor. `--quick`'s
/// looped programs run 6 times, so their 90th percentile is their slowest run: a rougher, higher
/// factor, as a rough model should be.
const CONTENTION_MIN_RUNS: usize = 6;

/// The family an item or bench key belongs to for contention: programs of one family slow down
/// alike when the host is busy (on the EPYC guest, with the sibling hyperthread busy, taken jumps
/// ran 2.2–2.5 times slower than uncontended, not-taken ones 1.4, ALU operations, loads, map
/// operations and helpers 1.25–1.35). Conditional and unconditional jumps by outcome, map
/// operations by operation, everything else by its first key segment.
pub fn contention_family(key: &str) -> String {
    // Copies of one bench at other code placements (`ja@2`) are of the bench's family.
    let key = key.split('@').next().unwrap_or(key);
    let mut parts = key.split('.');
    let first = parts.next().unwrap_or(key);
    match first {
        "jmp32" | "jmp64" | "may_goto" if key.ends_with(".not_taken") => "jump.not_taken".into(),
        "jmp32" | "jmp64" | "may_goto" | "ja" => "jump.taken".into(),
        "map" => format!("map.{}", parts.next().unwrap_or("")),
        _ => first.into(),
    }
}

/// How much slower than uncontended this host runs programs a tenth of the time, per
/// [`contention_family`]: the median over the family's timed benches of each one's
/// [`SLOW_QUANTILE`] run over its [`FAST_QUANTILE`] run; `None` for the whole calibration (under
/// key `""`), used by items of families no bench of this run measured. A price is its uncontended
/// figure times its family's factor, so that every rate holds in the host's slow moments, while
/// the uncontended figures (which repeat between calibrations) stay in the model beside it.
/// Factors are at least 1; none when too few benches ran (a partial calibration).
pub(crate) fn contention_factors(suite: &Suite, samples: &Samples) -> HashMap<String, f64> {
    let mut by_family: HashMap<String, Vec<f64>> = HashMap::new();
    for (gi, group) in suite.groups.iter().enumerate() {
        for prog in &group.programs {
            let Role::Timed(Some(bench)) = &prog.role else {
                continue;
            };
            let Some(runs) = samples.every.get(&(gi, prog.name.clone())) else {
                continue;
            };
            if runs.len() < CONTENTION_MIN_RUNS {
                continue;
            }
            let fast = quantile(runs, FAST_QUANTILE);
            if fast > 0.0 {
                let ratio = quantile(runs, SLOW_QUANTILE) / fast;
                by_family
                    .entry(contention_family(&bench.key))
                    .or_default()
                    .push(ratio);
                by_family.entry(String::new()).or_default().push(ratio);
            }
        }
    }
    by_family
        .into_iter()
        .map(|(family, ratios)| (family, median(&ratios).max(1.0)))
        .collect()
}

/// The `q` quantile of `xs` (the element at rank `floor(q × n)`).
pub(crate) fn quantile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((q * v.len() as f64) as usize).min(v.len() - 1)]
}

pub(crate) fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A bench's fit with its method.
#[derive(Clone, Debug)]
pub(crate) struct BenchFit {
    pub fitted: Fitted,
    pub note: String,
}

/// Fits every needed bench, each after the benches it subtracts: per round,
/// `(time − baseline time) / units`, minus the subtracted benches' fitted figures, divided by the
/// item's executions per unit.
pub(crate) fn fit_benches(
    suite: &Suite,
    needed: &HashSet<String>,
    samples: &Samples,
) -> Result<HashMap<String, BenchFit>, CalibrateError> {
    let mut todo: Vec<(usize, &str, &Bench)> = Vec::new();
    for (gi, group) in suite.groups.iter().enumerate() {
        for prog in &group.programs {
            if let Role::Timed(Some(bench)) = &prog.role {
                if needed.contains(&bench.key) {
                    todo.push((gi, prog.name.as_str(), bench));
                }
            }
        }
    }
    let mut out: HashMap<String, BenchFit> = HashMap::new();
    while !todo.is_empty() {
        let before = todo.len();
        let mut later = Vec::new();
        for (gi, name, bench) in todo {
            if bench.minus.iter().all(|(m, _)| out.contains_key(m)) {
                let fit = fit_bench(gi, name, bench, samples, &out)?;
                out.insert(bench.key.clone(), fit);
            } else {
                later.push((gi, name, bench));
            }
        }
        if later.len() == before {
            let keys: Vec<&str> = later.iter().map(|(_, _, b)| b.key.as_str()).collect();
            return Err(internal(format!(
                "cannot fit {} (they subtract benches that were not measured)",
                keys.join(", ")
            )));
        }
        todo = later;
    }
    Ok(out)
}

fn fit_bench(
    gi: usize,
    name: &str,
    bench: &Bench,
    samples: &Samples,
    fitted: &HashMap<String, BenchFit>,
) -> Result<BenchFit, CalibrateError> {
    let times = samples
        .times
        .get(&(gi, name.to_string()))
        .ok_or_else(|| internal(format!("no timings of `{name}`")))?;
    let base: Option<&Vec<f64>> = match &bench.baseline {
        None => None,
        Some(b) => Some(
            samples
                .times
                .get(&(gi, b.clone()))
                .ok_or_else(|| internal(format!("no timings of baseline `{b}`")))?,
        ),
    };
    let glue: f64 = bench
        .minus
        .iter()
        .map(|(m, count)| count * fitted[m].fitted.ns)
        .sum();
    let figure = |t: f64, b: f64| ((t - b) / bench.units as f64 - glue) / bench.per_unit;
    let every = |name: &str| {
        samples
            .every
            .get(&(gi, name.to_string()))
            .ok_or_else(|| internal(format!("no timings of `{name}`")))
    };
    let at = |ts: &Vec<f64>| quantile(ts, FAST_QUANTILE);
    let ns = figure(
        at(every(name)?),
        match &bench.baseline {
            Some(b) => at(every(b)?),
            None => 0.0,
        },
    );
    let rounds: Vec<f64> = times
        .iter()
        .enumerate()
        .map(|(r, t)| figure(*t, base.map_or(0.0, |b| b[r])))
        .collect();
    let mut note = bench.note.clone();
    if !bench.minus.is_empty() {
        let list: Vec<String> = bench
            .minus
            .iter()
            .map(|(m, c)| {
                if *c == 1.0 {
                    format!("`{m}`")
                } else {
                    format!("{c} × `{m}`")
                }
            })
            .collect();
        note.push_str(&format!(
            " (subtracted at their prices: {})",
            list.join(", ")
        ));
    }
    Ok(BenchFit {
        fitted: Fitted::new(ns, rounds),
        note,
    })
}

fn internal(message: String) -> CalibrateError {
    CalibrateError::Check {
        what: "calibration".into(),
        message,
    }
}

/// The price of one planned item.
#[derive(Clone, Debug)]
pub(crate) enum Priced {
    Cost { fitted: Fitted, note: String },
    SameAs { target: String, note: String },
}

/// Prices one planned item from the fitted benches.
pub(crate) fn price(
    pricing: &Pricing,
    fits: &HashMap<String, BenchFit>,
) -> Result<Priced, CalibrateError> {
    let get = |k: &String| {
        fits.get(k)
            .ok_or_else(|| internal(format!("bench `{k}` was not measured")))
    };
    let dearest = |ks: &[String]| -> Result<&BenchFit, CalibrateError> {
        let fs: Vec<&BenchFit> = ks.iter().map(get).collect::<Result<_, _>>()?;
        fs.into_iter()
            .max_by(|a, b| a.fitted.ns.total_cmp(&b.fitted.ns))
            .ok_or_else(|| internal("an item priced from no bench".into()))
    };
    let fmt = |x: f64| format!("{x:.3} ns");
    Ok(match pricing {
        Pricing::Bench(b) => {
            let f = get(b)?;
            Priced::Cost {
                fitted: f.fitted.clone(),
                note: f.note.clone(),
            }
        }
        Pricing::Max { of, what } => {
            let fs: Vec<&BenchFit> = of.iter().map(get).collect::<Result<_, _>>()?;
            let n = fs.iter().map(|f| f.fitted.rounds.len()).min().unwrap_or(0);
            let rounds: Vec<f64> = (0..n)
                .map(|r| {
                    fs.iter()
                        .map(|f| f.fitted.rounds[r])
                        .fold(f64::MIN, f64::max)
                })
                .collect();
            let parts: Vec<String> = of
                .iter()
                .zip(&fs)
                .map(|(k, f)| format!("{} {}", k.rsplit('.').next().unwrap_or(k), fmt(f.fitted.ns)))
                .collect();
            let ns = fs.iter().map(|f| f.fitted.ns).fold(0.0, f64::max);
            Priced::Cost {
                fitted: Fitted::new(ns, rounds),
                note: format!("{what} ({}); each: {}", parts.join(", "), fs[0].note),
            }
        }
        Pricing::Placements { of } => {
            let fs: Vec<&BenchFit> = of.iter().map(get).collect::<Result<_, _>>()?;
            let upper_median = |mut xs: Vec<f64>| {
                xs.sort_by(|a, b| a.total_cmp(b));
                xs[xs.len() / 2]
            };
            let n = fs.iter().map(|f| f.fitted.rounds.len()).min().unwrap_or(0);
            let rounds: Vec<f64> = (0..n)
                .map(|r| upper_median(fs.iter().map(|f| f.fitted.rounds[r]).collect()))
                .collect();
            let copies: Vec<String> = fs.iter().map(|f| format!("{:.3}", f.fitted.ns)).collect();
            Priced::Cost {
                fitted: Fitted::new(
                    upper_median(fs.iter().map(|f| f.fitted.ns).collect()),
                    rounds,
                ),
                note: format!(
                    "{}; the upper median of {} independently loaded copies ({} ns: the JIT \
                     places each program at a random offset, and front-end throughput depends on \
                     it)",
                    fs[0].note,
                    fs.len(),
                    copies.join(", ")
                ),
            }
        }
        Pricing::Less { of, less, what } => {
            let (o, l) = (dearest(of)?, get(less)?);
            let rounds = o.fitted.rounds.iter().map(|x| x - l.fitted.ns).collect();
            Priced::Cost {
                fitted: Fitted::new(o.fitted.ns - l.fitted.ns, rounds),
                note: format!(
                    "{what}: {} ({}) minus {} ({})",
                    fmt(o.fitted.ns),
                    o.note,
                    fmt(l.fitted.ns),
                    less
                ),
            }
        }
        Pricing::Update {
            overwrite,
            pairs,
            lookup,
        } => {
            let (o, p, l) = (get(overwrite)?, dearest(pairs)?, get(lookup)?);
            let n = o.fitted.rounds.len().min(p.fitted.rounds.len());
            let rounds = (0..n)
                .map(|r| o.fitted.rounds[r].max(p.fitted.rounds[r] - l.fitted.ns))
                .collect();
            let ns = o.fitted.ns.max(p.fitted.ns - l.fitted.ns);
            Priced::Cost {
                fitted: Fitted::new(ns, rounds),
                note: format!(
                    "the larger of an overwrite {} ({}) and an insert of a new key bounded by an \
                     insert+delete pair {} minus a lookup {}",
                    fmt(o.fitted.ns),
                    o.note,
                    fmt(p.fitted.ns),
                    fmt(l.fitted.ns)
                ),
            }
        }
        Pricing::SameAs { target, note } => Priced::SameAs {
            target: target.clone(),
            note: note.clone(),
        },
        Pricing::Zero(note) => Priced::Cost {
            fitted: Fitted {
                ns: 0.0,
                rounds: Vec::new(),
                spread: 0.0,
            },
            note: note.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_familys_factor_is_its_median_benchs_slow_runs_over_its_fast_ones() {
        let suite = crate::programs::suite();
        // 20 runs: 18 at 10 ns, 2 at 10 × `slow`: the 90th percentile is a slow one, the 5th a
        // fast one.
        let runs = |slow: f64| {
            let mut v = vec![10.0; 18];
            v.extend([10.0 * slow; 2]);
            v
        };
        let benches: Vec<(usize, &str, &str)> = suite
            .groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| {
                g.programs.iter().filter_map(move |p| match &p.role {
                    Role::Timed(Some(b)) => Some((gi, p.name.as_str(), b.key.as_str())),
                    _ => None,
                })
            })
            .collect();
        let of = |family: &str| {
            benches
                .iter()
                .filter(|(_, _, key)| contention_family(key) == family)
                .take(3)
                .collect::<Vec<_>>()
        };
        let mut every = HashMap::new();
        for ((gi, name, _), slow) in of("jump.taken").into_iter().zip([2.0, 2.4, 2.6]) {
            every.insert((*gi, name.to_string()), runs(slow));
        }
        for ((gi, name, _), slow) in of("alu64").into_iter().zip([1.2, 1.3, 1.5]) {
            every.insert((*gi, name.to_string()), runs(slow));
        }
        let samples = Samples {
            times: HashMap::new(),
            every,
            probes: HashMap::new(),
            forwarding: Ok(()),
            programs: 6,
        };
        let factors = contention_factors(&suite, &samples);
        let close = |family: &str, want: f64| (factors[family] - want).abs() < 1e-9;
        assert!(close("jump.taken", 2.4), "{factors:?}");
        assert!(close("alu64", 1.3), "{factors:?}");
        // Over every bench: the median of the six.
        assert!(close("", (1.5 + 2.0) / 2.0), "{factors:?}");
        assert!(!factors.contains_key("map.lookup"));
    }

    #[test]
    fn contention_families_group_what_slows_down_alike() {
        assert_eq!(contention_family("jmp64.jeq.imm.taken"), "jump.taken");
        assert_eq!(contention_family("ja"), "jump.taken");
        assert_eq!(contention_family("ja@2"), "jump.taken");
        assert_eq!(contention_family("jmp32.jlt.imm.taken@1"), "jump.taken");
        assert_eq!(
            contention_family("jmp32.jne.reg.not_taken"),
            "jump.not_taken"
        );
        assert_eq!(contention_family("map.lookup.hash.k8"), "map.lookup");
        assert_eq!(contention_family("map.update.array.k4"), "map.update");
        assert_eq!(contention_family("alu64.add.reg"), "alu64");
        assert_eq!(contention_family("per_packet"), "per_packet");
    }

    #[test]
    fn medians_and_spreads() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let xs: Vec<f64> = (0..40).map(f64::from).rev().collect();
        assert_eq!(quantile(&xs, FAST_QUANTILE), 2.0);
        assert_eq!(quantile(&xs[..6], FAST_QUANTILE), 34.0);
        let f = Fitted::new(9.0, vec![9.0, 10.0, 11.0]);
        assert_eq!(f.ns, 9.0);
        assert!((f.spread - 0.2).abs() < 1e-12);
        // Near-zero items are measured against the floor, and never priced negative.
        let z = Fitted::new(-0.01, vec![-0.01, 0.0, 0.01]);
        assert_eq!(z.ns, 0.0);
        assert!((z.spread - 0.2).abs() < 1e-12);
    }

    #[test]
    fn the_plan_prices_a_complete_model() {
        let plan = plan();
        let keys: HashSet<&str> = plan.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys.len(), plan.len());
        for it in item::universe() {
            assert!(keys.contains(it.to_string().as_str()), "{it}");
        }
        for (op, t) in item::map_families() {
            let family = item::family_key(op, t);
            assert!(
                keys.iter().any(|k| k.starts_with(&format!("{family}.k"))),
                "{family}"
            );
        }
    }
}
