//! Paths in order of overall throughput (paper 000 §5.3, §5.4): one [`Search`] per (component,
//! distinct minimum packet size), interleaved.
//!
//! A path's throughput is the minimum of each component's rate on its cost and a limit that does
//! not depend on cost (the device's packet rate, the line rate), all at its minimum packet size
//! `s` (the largest `min_packet` of its edges). The instance of component `c` and size `s` walks
//! every path whose edges admit `s` in non-increasing cost of `c`; it keeps only the paths whose
//! slowest component is `c` and whose own minimum packet size is `s`, so each path is produced
//! once. For a kept path the throughput is `min(rate_c(cost_c, s), limit(s))`, which cannot fall
//! as the instance's cost falls: `min(rate_c(next cost), limit(s))` bounds every path the
//! instance will still keep from below. Each instance either holds its next kept path (an exact
//! value) or only that bound; the enumerator advances the instance with the lowest figure until
//! the lowest is an exact one, and produces it. So paths come out in non-decreasing order of the
//! value they are reported with — including when a limit, not a cost, decides it.
//!
//! Packet sizes here are the path graph's per-edge lower bounds, so reported rates are lower
//! bounds too. A caller that learns a path's true size later (the solver's witness) may improve
//! that path's figure, and the improved figure is final once [`Enumerator::next_bound`] has
//! reached it: no path still to come is slower.

use linerate_cost::{Cost, Model};

use super::{validate, EnumerateError, Forbidden, Next, Search};
use crate::dag::{EdgeId, PathDag};

/// How cost becomes throughput, in the unit paths are ordered by.
pub trait Rates {
    /// The rate component `component` allows a path whose program cost in that component is
    /// `cost` (per-packet work outside the program not included), on packets of `size` bytes;
    /// +∞ when the component does not limit it. Must not increase when `cost` grows.
    fn component_rate(&self, component: usize, cost: f64, size: u32) -> f64;

    /// The rate limit on packets of `size` bytes that holds whatever the cost; +∞ for none.
    fn limit(&self, size: u32) -> f64;
}

/// What "throughput" means when ordering paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Packets per second.
    PacketRate,
    /// Bits per second: packets per second × the bits of a frame of the path's minimum packet
    /// size (never below the device's minimum frame).
    BitRate,
}

/// [`Rates`] of a device model, with the model's per-packet work added to every path.
#[derive(Clone, Copy, Debug)]
pub struct ModelRates<'m> {
    model: &'m Model,
    metric: Metric,
}

impl<'m> ModelRates<'m> {
    /// The rates `model` gives, in `metric`.
    pub fn new(model: &'m Model, metric: Metric) -> ModelRates<'m> {
        ModelRates { model, metric }
    }

    /// Checks that `dag`'s cost components are the model's, in the same order.
    pub fn check(&self, dag: &PathDag) -> Result<(), EnumerateError> {
        let model: Vec<&str> = self
            .model
            .components()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        if model == dag.components {
            Ok(())
        } else {
            Err(EnumerateError::Components {
                model: model.join(", "),
                graph: dag.components.join(", "),
            })
        }
    }

    /// Bytes a frame of a `size`-byte packet counts for.
    fn frame_bytes(&self, size: u32) -> f64 {
        f64::from(size.max(self.model.limits().min_frame_bytes))
    }

    fn in_metric(&self, pps: f64, size: u32) -> f64 {
        match self.metric {
            Metric::PacketRate => pps,
            Metric::BitRate => pps * 8.0 * self.frame_bytes(size),
        }
    }
}

impl Rates for ModelRates<'_> {
    fn component_rate(&self, component: usize, cost: f64, size: u32) -> f64 {
        let Some(c) = self.model.components().get(component) else {
            return f64::INFINITY;
        };
        let total = cost
            + self
                .model
                .per_packet()
                .0
                .get(component)
                .copied()
                .unwrap_or(0.0);
        // As `Model::packet_rate`: a component with nothing to do does not limit.
        let pps = if total > 0.0 {
            c.capacity_per_s / total
        } else {
            f64::INFINITY
        };
        self.in_metric(pps, size)
    }

    fn limit(&self, size: u32) -> f64 {
        let limits = self.model.limits();
        let mut pps = limits.max_packet_rate_pps.unwrap_or(f64::INFINITY);
        if let Some(line) = limits.line_rate_bps {
            let wire = self.frame_bytes(size) + f64::from(limits.wire_overhead_bytes);
            pps = pps.min(line / (wire * 8.0));
        }
        self.in_metric(pps, size)
    }
}

/// A path with its throughput.
#[derive(Clone, Debug, PartialEq)]
pub struct RankedPath {
    /// Edges from the source to the sink.
    pub edges: Vec<EdgeId>,
    /// The program's cost along it (the edges' sum; per-packet work not included).
    pub cost: Cost,
    /// Its minimum packet size: the largest `min_packet` of its edges.
    pub min_packet: u32,
    /// Its throughput in the enumeration's unit: the lowest component rate or the limit.
    pub rate: f64,
    /// Its slowest component (the lowest index among equals): the instance that produced it.
    pub component: usize,
    /// Whether the cost-independent limit is below every component's rate, so `rate` is the
    /// limit's.
    pub limited: bool,
}

/// Counts of an enumeration's work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Paths produced.
    pub produced: u64,
    /// Paths an instance found that another instance produces (or produced): a different
    /// slowest component or a smaller own minimum packet size.
    pub discarded: u64,
    /// Queue pops and walked edges over all instances.
    pub work: u64,
}

/// One search instance and what the enumerator knows of its next kept path.
#[derive(Debug)]
struct Instance {
    search: Search,
    /// Its next kept path, once found.
    pending: Option<RankedPath>,
}

/// Every path of a [`PathDag`], slowest first, each once.
#[derive(Debug)]
pub struct Enumerator<'d, R: Rates> {
    dag: &'d PathDag,
    rates: R,
    instances: Vec<Instance>,
    forbidden: Forbidden,
    stats: Stats,
}

impl<'d, 'm> Enumerator<'d, ModelRates<'m>> {
    /// The enumeration of `dag` by the throughput `model` gives, in `metric`.
    pub fn with_model(
        dag: &'d PathDag,
        model: &'m Model,
        metric: Metric,
    ) -> Result<Self, EnumerateError> {
        let rates = ModelRates::new(model, metric);
        rates.check(dag)?;
        Enumerator::new(dag, rates)
    }
}

impl<'d, R: Rates> Enumerator<'d, R> {
    /// The enumeration of `dag` by `rates`.
    pub fn new(dag: &'d PathDag, rates: R) -> Result<Self, EnumerateError> {
        validate(dag)?;
        let mut sizes: Vec<u32> = dag.edges.iter().map(|e| e.min_packet).collect();
        if sizes.is_empty() {
            // The source is the sink: the one path has no edges and size 0.
            sizes.push(0);
        }
        sizes.sort_unstable();
        sizes.dedup();
        let mut instances = Vec::with_capacity(dag.components.len() * sizes.len());
        for component in 0..dag.components.len() {
            for &size in &sizes {
                instances.push(Instance {
                    search: Search::new(dag, component, size)?,
                    pending: None,
                });
            }
        }
        Ok(Enumerator {
            dag,
            rates,
            instances,
            forbidden: Forbidden::new(dag.edges.len()),
            stats: Stats::default(),
        })
    }

    /// The number of search instances: components × distinct minimum packet sizes.
    pub fn instances(&self) -> usize {
        self.instances.len()
    }

    /// Work counts so far.
    pub fn stats(&self) -> Stats {
        Stats {
            work: self.instances.iter().map(|i| i.search.work()).sum(),
            ..self.stats
        }
    }

    /// The throughput of `edges` as a path, with its slowest component.
    fn rank(&self, edges: Vec<EdgeId>) -> RankedPath {
        rank(self.dag, &self.rates, edges)
    }

    /// Lowest figure of instance `i`: its pending path's rate, or the bound on its next kept
    /// path; `None` when it has nothing left.
    fn figure(&mut self, i: usize) -> Option<f64> {
        let instance = &mut self.instances[i];
        if let Some(p) = &instance.pending {
            return Some(p.rate);
        }
        let cost = instance.search.peek()?;
        let (c, s) = (instance.search.component(), instance.search.size());
        Some(
            self.rates
                .component_rate(c, cost, s)
                .min(self.rates.limit(s)),
        )
    }

    /// A lower bound of the throughput of every path not produced yet; `None` when none is
    /// left.
    pub fn next_bound(&mut self) -> Option<f64> {
        (0..self.instances.len())
            .filter_map(|i| self.figure(i))
            .min_by(f64::total_cmp)
    }

    /// The next slowest path.
    pub fn next_path(&mut self) -> Option<RankedPath> {
        self.next_path_within(u64::MAX).unwrap_or(None)
    }

    /// [`Enumerator::next_path`], pausing (`Err(Paused)`) once a search has skipped `budget`
    /// forbidden paths in a row, or `budget` paths of another instance were discarded: where
    /// learned conflicts forbid most of the slowest paths, the
    /// next allowed one may be far, and the caller must get to check its time and memory limits
    /// meanwhile. Calling again goes on where it paused.
    pub fn next_path_within(&mut self, budget: u64) -> Result<Option<RankedPath>, Paused> {
        let mut discarded = 0u64;
        loop {
            // The instance with the lowest figure; among equals, one whose figure is exact, then
            // the one of the larger minimum packet size. Equal rates are common where the
            // bottleneck does not depend on the path's branches (an NFP path's DRAM reads), and
            // the order among them decides how many impossible paths the search checks before a
            // possible one: the analysis raises the sizes of paths it follows precisely (a
            // header it knows was read), which impossible paths of the same rate often are not
            // (`xdp_quic_lb_nfp_v6` on the NFP: its 68-byte slowest path behind hundreds of
            // impossible 63-byte ones, each a second to refute, in size-ascending order).
            let mut lowest: Option<(usize, f64, bool, u32)> = None;
            for i in 0..self.instances.len() {
                let Some(f) = self.figure(i) else { continue };
                let exact = self.instances[i].pending.is_some();
                let size = self.instances[i].search.size();
                let better = match lowest {
                    None => true,
                    Some((_, g, g_exact, g_size)) => {
                        f < g || (f == g && (exact, size) > (g_exact, g_size))
                    }
                };
                if better {
                    lowest = Some((i, f, exact, size));
                }
            }
            let Some((i, _, _, _)) = lowest else {
                return Ok(None);
            };
            if let Some(path) = self.instances[i].pending.take() {
                self.stats.produced += 1;
                return Ok(Some(path));
            }
            let edges = match self.instances[i]
                .search
                .next_path(&mut self.forbidden, budget)
            {
                Next::Path(edges, _) => edges,
                Next::Exhausted => continue,
                Next::Paused => return Err(Paused),
            };
            let path = self.rank(edges);
            let search = &self.instances[i].search;
            if path.component == search.component() && path.min_packet == search.size() {
                self.instances[i].pending = Some(path);
            } else {
                self.stats.discarded += 1;
                discarded += 1;
                if discarded >= budget {
                    return Err(Paused);
                }
            }
        }
    }

    /// From now on, no path containing all of `edges` is produced (paths already produced are
    /// not affected). A single edge is removed from every instance's graph; the empty set ends
    /// the enumeration.
    pub fn forbid(&mut self, edges: Vec<EdgeId>) -> Result<(), EnumerateError> {
        if let Some(&edge) = edges.iter().find(|&&e| e >= self.dag.edges.len()) {
            return Err(EnumerateError::NoSuchEdge {
                edge,
                edges: self.dag.edges.len(),
            });
        }
        if let Some(edge) = self.forbidden.add(edges) {
            for instance in &mut self.instances {
                instance.search.remove(edge);
            }
        }
        for instance in &mut self.instances {
            if let Some(p) = &instance.pending {
                if self.forbidden.first_violation(&p.edges).is_some() {
                    instance.pending = None;
                }
            }
        }
        Ok(())
    }

    /// Approximate bytes held by the enumeration's structures, for a memory cap.
    pub fn memory_bytes(&self) -> usize {
        self.forbidden.memory_bytes()
            + self
                .instances
                .iter()
                .map(|i| {
                    i.search.memory_bytes()
                        + i.pending.as_ref().map_or(0, |p| {
                            p.edges.capacity() * std::mem::size_of::<EdgeId>()
                                + p.cost.0.capacity() * std::mem::size_of::<f64>()
                        })
                })
                .sum::<usize>()
    }
}

impl<R: Rates> Iterator for Enumerator<'_, R> {
    type Item = RankedPath;

    fn next(&mut self) -> Option<RankedPath> {
        self.next_path()
    }
}

/// [`Enumerator::next_path_within`] stopped before finding the next path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paused;

/// The naive bound (paper 000 §5): the slowest path of `dag` by `rates`, satisfiable or not;
/// `None` when the graph has no path.
pub fn naive<R: Rates>(dag: &PathDag, rates: R) -> Result<Option<RankedPath>, EnumerateError> {
    Ok(Enumerator::new(dag, rates)?.next_path())
}

/// The throughput of `edges`, a source-to-sink path of `dag`, under `rates`, with its slowest
/// component: as the enumeration ranks the paths it produces.
pub fn rank<R: Rates>(dag: &PathDag, rates: &R, edges: Vec<EdgeId>) -> RankedPath {
    let cost = dag.path_cost(&edges);
    let min_packet = dag.path_min_packet(&edges);
    let mut component = 0;
    let mut rate = f64::INFINITY;
    for (c, &amount) in cost.0.iter().enumerate() {
        let r = rates.component_rate(c, amount, min_packet);
        if r < rate {
            rate = r;
            component = c;
        }
    }
    let limit = rates.limit(min_packet);
    RankedPath {
        edges,
        cost,
        min_packet,
        rate: rate.min(limit),
        component,
        limited: limit < rate,
    }
}

/// A path's throughput under `model` in both units: packets per second (its cost plus the
/// model's per-packet work, through [`Model::packet_rate`]), bits per second of frames of its
/// minimum packet size (at least the model's minimum frame), and what limits it. What `bound`
/// reports and `measure` compares with its measurement.
pub fn model_rates(model: &Model, path: &RankedPath) -> (f64, f64, String) {
    let mut total = path.cost.clone();
    total.add(model.per_packet());
    let rate = model.packet_rate(&total, path.min_packet);
    let frame = path.min_packet.max(model.limits().min_frame_bytes);
    (rate.pps, rate.pps * 8.0 * f64::from(frame), rate.bottleneck)
}
