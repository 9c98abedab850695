//! Model files: their schema (format `linerate-cost-model`, version 1), validation, and prices.
//!
//! A model names its components (what can become the bottleneck: processing time, memory-engine
//! operations of each kind, ...) with a capacity per second, the device's fixed limits, the cost of
//! the per-packet work outside the program, and a price for every [`Item`]. A price is a cost vector
//! over components, a reference to another item's price (`same_as`), or an explicit statement that
//! the device cannot run the item (`unsupported`, with the reason). Items that block until memory
//! answers name a *gap*: the device needs a minimum distance (in one component's units) between two
//! such operations, which [`crate::ProgramCost`] over-approximates per edge. The schema is
//! documented in `docs/cost-models.md`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use linerate_bpf::program::MapType;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::item::{self, Item};

/// The `format` field of every model file.
pub const FORMAT: &str = "linerate-cost-model";
/// The schema version this build reads and writes.
pub const VERSION: u32 = 1;

/// The share of this host's moments a calibrated x86 price holds in: a shared host runs the same
/// program at different speeds from moment to moment, and a price is the item's uncontended time
/// times how much slower than uncontended its family ran at this quantile of the calibration's
/// runs (`linerate_calibrate`); `linerate measure` compares an estimate with the path's time at
/// this quantile of trials spread over time.
pub const SLOW_QUANTILE: f64 = 0.9;

/// A cost vector as written in files: component name to amount.
pub type CostMap = BTreeMap<String, f64>;

/// A model file as stored (see `docs/cost-models.md`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Schema version, [`VERSION`].
    pub version: u32,
    /// The name `--target` selects (`x86`, `nfp`).
    pub target: String,
    /// One line on what the model describes.
    pub description: String,
    /// Where the figures come from (papers with sections, calibration runs with date and host).
    pub source: String,
    /// The device the figures belong to.
    pub device: Device,
    /// Components that can become the bottleneck.
    pub components: Vec<Component>,
    /// Fixed, program-independent limits.
    pub limits: Limits,
    /// Cost of the work done for every packet outside the program.
    pub per_packet: CostMap,
    /// Minimum distances between blocking operations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
    /// Price of every item, by item key (map operations by `map.<op>.<type>.k<key size>`).
    pub items: BTreeMap<String, ItemPrice>,
}

/// The device a model describes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    /// Product or host name.
    pub name: String,
    /// Processor model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Clock frequency of the processing cores, Hz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_hz: Option<f64>,
    /// Processing cores running the program in parallel.
    pub cores: u32,
    /// Kernel release the figures were measured on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The host the figures were calibrated on (x86 models written by `linerate calibrate`);
    /// `None` for models of other devices and for models written before fingerprints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<crate::fingerprint::Fingerprint>,
    /// When `linerate calibrate` measured the figures, seconds since the Unix epoch (UTC);
    /// `None` for models of other devices and for models written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated_unix: Option<u64>,
}

/// A component that can become the bottleneck.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// Name used in cost vectors.
    pub name: String,
    /// Unit of its costs (`cycles`, `ns`, `ops`).
    pub unit: String,
    /// Units the device supplies per second (all cores together).
    pub capacity_per_s: f64,
    /// How the capacity was obtained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Fixed device limits.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Maximum packet rate of the MAC / driver, packets per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_packet_rate_pps: Option<f64>,
    /// Line rate over all ports, bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_rate_bps: Option<f64>,
    /// Minimum frame size without CRC, bytes.
    pub min_frame_bytes: u32,
    /// Bytes each frame occupies on the wire beyond its size as counted here (Ethernet: 4 CRC +
    /// 8 preamble + 12 inter-frame gap = 24), for the line-rate limit.
    #[serde(default)]
    pub wire_overhead_bytes: u32,
    /// Where the limits come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A minimum distance between two blocking operations of one kind.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gap {
    /// Name items refer to.
    pub name: String,
    /// The component the distance is measured in, and charged to when it is not met.
    pub component: String,
    /// Minimum distance from one such operation to the next.
    pub min: f64,
    /// What the distance is measured from: the previous operation of this kind (`same_kind`, the
    /// default) or of any gap kind (`any_kind`).
    #[serde(default, skip_serializing_if = "GapOrigin::is_same_kind")]
    pub measured_from: GapOrigin,
    /// Where the figure comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where the distance of a [`Gap`] starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GapOrigin {
    /// The previous blocking operation of the same gap kind.
    #[default]
    SameKind,
    /// The previous blocking operation of any gap kind.
    AnyKind,
}

impl GapOrigin {
    fn is_same_kind(&self) -> bool {
        *self == GapOrigin::SameKind
    }
}

/// The price of one item: exactly one of `cost`, `same_as`, `unsupported`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemPrice {
    /// Cost vector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostMap>,
    /// The item costs what this other item costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    /// The device cannot run the item, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
    /// The item blocks until memory answers; names a [`Gap`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap: Option<String>,
    /// Calibration: the measured cost in ns, at the clock of `device.frequency_hz`, uncontended
    /// (the fast runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns: Option<f64>,
    /// Calibration: the contention factor of the item's family on the calibration host (how much
    /// slower than uncontended its programs ran a tenth of the time); the price is `ns` times
    /// this, in cycles of the clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<f64>,
    /// Calibration: relative spread (max − min) / median of the repeated measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
    /// How the price was derived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A cost vector indexed like [`Model::components`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost(pub Vec<f64>);

impl Cost {
    /// The zero vector over `n` components.
    pub fn zero(n: usize) -> Cost {
        Cost(vec![0.0; n])
    }

    /// Adds `other` component-wise.
    pub fn add(&mut self, other: &Cost) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a += b;
        }
    }

    /// Raises each component to at least `other`'s.
    pub fn max_with(&mut self, other: &Cost) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a = a.max(*b);
        }
    }
}

/// What an item costs after resolving `same_as`.
#[derive(Clone, Debug, PartialEq)]
pub struct Price {
    /// Cost vector.
    pub cost: Cost,
    /// Index into [`Model::gaps`] when the item blocks.
    pub gap: Option<usize>,
}

/// A validated model, ready to price items.
#[derive(Clone, Debug)]
pub struct Model {
    file: ModelFile,
    prices: HashMap<String, Result<Price, String>>,
    /// Map-operation families: key sizes priced, ascending.
    map_sizes: HashMap<String, Vec<u32>>,
    per_packet: Cost,
}

/// The models shipped with linerate: (target, file contents).
pub const BUILTIN: &[(&str, &str)] = &[
    ("x86", include_str!("../models/x86.json")),
    ("nfp", include_str!("../models/nfp.json")),
    ("hxdp", include_str!("../models/hxdp.json")),
];

impl Model {
    /// The shipped model of `target`.
    pub fn builtin(target: &str) -> Result<Model, ModelError> {
        Model::new(
            Model::builtin_file(target)?,
            &format!("builtin model {target}"),
        )
    }

    /// The shipped model file of `target`, parsed but not validated: a calibration measuring
    /// only some items completes its result with this file's other items, and the file may lack
    /// exactly the items being measured for the first time.
    pub fn builtin_file(target: &str) -> Result<ModelFile, ModelError> {
        let (_, text) = BUILTIN.iter().find(|(t, _)| *t == target).ok_or_else(|| {
            ModelError::UnknownTarget {
                target: target.into(),
                known: BUILTIN
                    .iter()
                    .map(|(t, _)| *t)
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?;
        Model::parse(text, &format!("builtin model {target}"))
    }

    /// Reads and validates a model file.
    pub fn read(path: &Path) -> Result<Model, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Model::from_json(&text, &path.display().to_string())
    }

    /// Parses and validates model text; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Model, ModelError> {
        Model::new(Model::parse(text, origin)?, origin)
    }

    fn parse(text: &str, origin: &str) -> Result<ModelFile, ModelError> {
        serde_json::from_str(text).map_err(|e| ModelError::Invalid {
            origin: origin.into(),
            message: format!("line {} column {}: {e}", e.line(), e.column()),
        })
    }

    /// Validates a model: format and version, components and gaps referenced exist, every item key
    /// is known, every item of [`item::universe`] and every map family is priced, and `same_as`
    /// chains end in a price.
    pub fn new(file: ModelFile, origin: &str) -> Result<Model, ModelError> {
        let invalid = |message: String| ModelError::Invalid {
            origin: origin.into(),
            message,
        };
        if file.format != FORMAT {
            return Err(invalid(format!(
                "format is `{}`, expected `{FORMAT}`",
                file.format
            )));
        }
        if file.version != VERSION {
            return Err(invalid(format!(
                "schema version {} is not supported (this linerate reads version {VERSION})",
                file.version
            )));
        }
        if file.components.is_empty() {
            return Err(invalid("no components".into()));
        }
        for c in &file.components {
            if !(c.capacity_per_s.is_finite() && c.capacity_per_s > 0.0) {
                return Err(invalid(format!(
                    "component `{}` has capacity {} (must be positive)",
                    c.name, c.capacity_per_s
                )));
            }
        }
        let component_index = |name: &str| file.components.iter().position(|c| c.name == name);
        let vector = |what: &str, map: &CostMap| -> Result<Cost, ModelError> {
            let mut cost = Cost::zero(file.components.len());
            for (name, amount) in map {
                let i = component_index(name)
                    .ok_or_else(|| invalid(format!("{what} names unknown component `{name}`")))?;
                if !(amount.is_finite() && *amount >= 0.0) {
                    return Err(invalid(format!(
                        "{what} has cost {amount} for `{name}` (must be finite and not negative)"
                    )));
                }
                cost.0[i] = *amount;
            }
            Ok(cost)
        };
        for gap in &file.gaps {
            if component_index(&gap.component).is_none() {
                return Err(invalid(format!(
                    "gap `{}` is measured in unknown component `{}`",
                    gap.name, gap.component
                )));
            }
        }
        let per_packet = vector("per_packet", &file.per_packet)?;

        let universe: Vec<String> = item::universe().iter().map(|i| i.to_string()).collect();
        let families: Vec<String> = item::map_families()
            .into_iter()
            .map(|(op, t)| item::family_key(op, t))
            .collect();
        let failed_families: Vec<String> = item::failed_families()
            .into_iter()
            .map(|(op, t)| item::failed_family_key(op, t))
            .collect();
        let map_in_map: Vec<String> = item::MAP_IN_MAP_FAMILIES
            .into_iter()
            .map(|(op, t)| item::family_key(op, t))
            .collect();
        let mut map_sizes: HashMap<String, Vec<u32>> = HashMap::new();
        for key in file.items.keys() {
            if universe.contains(key) || families.contains(key) {
                continue;
            }
            if map_in_map.contains(key) {
                if file.items[key].unsupported.is_none() {
                    return Err(invalid(format!(
                        "`{key}` may only be marked unsupported (otherwise a map of maps takes \
                         its storage's prices)"
                    )));
                }
                continue;
            }
            let sized = key.rsplit_once(".k").and_then(|(family, size)| {
                let size: u32 = size.parse().ok()?;
                let family = family.to_string();
                (families.contains(&family) || failed_families.contains(&family))
                    .then_some((family, size))
            });
            match sized {
                Some((family, size)) => map_sizes.entry(family).or_default().push(size),
                None => return Err(invalid(format!("unknown item `{key}`"))),
            }
        }
        for sizes in map_sizes.values_mut() {
            sizes.sort_unstable();
        }
        for key in &universe {
            if !file.items.contains_key(key) {
                return Err(invalid(format!("item `{key}` has no price")));
            }
        }
        for family in &families {
            let family_entry = file.items.get(family);
            if family_entry.is_some() && map_sizes.contains_key(family) {
                return Err(invalid(format!(
                    "`{family}` is priced both as a family and per key size"
                )));
            }
            if family_entry.is_none() && !map_sizes.contains_key(family) {
                return Err(invalid(format!(
                    "map operation `{family}` has no price (give `{family}.k<key size>` entries \
                     or mark `{family}` unsupported)"
                )));
            }
            if let Some(entry) = family_entry {
                if entry.unsupported.is_none() {
                    return Err(invalid(format!(
                        "`{family}` without a key size may only be marked unsupported"
                    )));
                }
            }
        }

        let mut prices = HashMap::new();
        for key in file.items.keys() {
            let mut seen = vec![key.as_str()];
            let mut entry = &file.items[key];
            let price = loop {
                let fields = [
                    entry.cost.is_some(),
                    entry.same_as.is_some(),
                    entry.unsupported.is_some(),
                ];
                if fields.iter().filter(|f| **f).count() != 1 {
                    return Err(invalid(format!(
                        "item `{}` must have exactly one of cost, same_as, unsupported",
                        seen.last().unwrap()
                    )));
                }
                if let Some(reason) = &entry.unsupported {
                    break Err(reason.clone());
                }
                if let Some(cost) = &entry.cost {
                    let gap = match &entry.gap {
                        None => None,
                        Some(g) => {
                            Some(file.gaps.iter().position(|x| &x.name == g).ok_or_else(|| {
                                invalid(format!("item `{key}` names unknown gap `{g}`"))
                            })?)
                        }
                    };
                    break Ok(Price {
                        cost: vector(&format!("item `{key}`"), cost)?,
                        gap,
                    });
                }
                let target = entry.same_as.as_deref().unwrap();
                if seen.contains(&target) {
                    return Err(invalid(format!(
                        "item `{key}`: same_as cycle through `{target}`"
                    )));
                }
                seen.push(target);
                entry = file.items.get(target).ok_or_else(|| {
                    invalid(format!("item `{key}` is same_as unknown item `{target}`"))
                })?;
            };
            prices.insert(key.clone(), price);
        }
        Ok(Model {
            file,
            prices,
            map_sizes,
            per_packet,
        })
    }

    /// The stored form.
    pub fn file(&self) -> &ModelFile {
        &self.file
    }

    /// The target name.
    pub fn target(&self) -> &str {
        &self.file.target
    }

    /// The components, in cost-vector order.
    pub fn components(&self) -> &[Component] {
        &self.file.components
    }

    /// The gaps, indexed by [`Price::gap`].
    pub fn gaps(&self) -> &[Gap] {
        &self.file.gaps
    }

    /// Fixed limits.
    pub fn limits(&self) -> &Limits {
        &self.file.limits
    }

    /// Cost of the per-packet work outside the program.
    pub fn per_packet(&self) -> &Cost {
        &self.per_packet
    }

    /// The price of an item; the reason when the device cannot run it.
    ///
    /// Map operations at a key size the model has no entry for take the entry of the next larger
    /// priced size (costs grow with the key); above the largest, they extrapolate linearly from the
    /// two largest sizes (or scale the only one proportionally), never below the largest price.
    pub fn price(&self, item: &Item) -> Result<Price, String> {
        let key = item.to_string();
        if let Some(p) = self.prices.get(&key) {
            return p.clone();
        }
        let (map_type, key_size, family) = match (*item, item.family()) {
            (
                Item::Map {
                    map_type, key_size, ..
                }
                | Item::MapFailed {
                    map_type, key_size, ..
                },
                Some(family),
            ) => (map_type, key_size, family),
            _ => return Err(format!("no price for `{key}`")),
        };
        let storage = item::priced_as(map_type);
        if storage != map_type {
            if let Some(p) = self.prices.get(&family) {
                return p.clone();
            }
            return self.price(&item.on_map_type(storage));
        }
        let key_size = &key_size;
        if let Some(p) = self.prices.get(&family) {
            return p.clone();
        }
        let Some(sizes) = self.map_sizes.get(&family) else {
            return Err(format!("no price for `{family}`"));
        };
        let at = |size: u32| self.prices[&format!("{family}.k{size}")].clone();
        if let Some(&size) = sizes.iter().find(|&&s| s >= *key_size) {
            return at(size);
        }
        let largest = *sizes.last().expect("families have at least one size");
        let top = at(largest)?;
        let slope: Vec<f64> = match sizes.len() {
            1 => top.cost.0.iter().map(|c| c / largest as f64).collect(),
            n => {
                let below = sizes[n - 2];
                let low = at(below)?;
                top.cost
                    .0
                    .iter()
                    .zip(&low.cost.0)
                    .map(|(t, l)| ((t - l) / (largest - below) as f64).max(0.0))
                    .collect()
            }
        };
        let extra = (*key_size - largest) as f64;
        Ok(Price {
            cost: Cost(
                top.cost
                    .0
                    .iter()
                    .zip(&slope)
                    .map(|(t, s)| t + s * extra)
                    .collect(),
            ),
            gap: top.gap,
        })
    }

    /// Whether the model prices a map type at all (some sizes or a family entry).
    pub fn prices_map_type(&self, map_type: MapType) -> bool {
        item::map_families()
            .iter()
            .filter(|(_, t)| *t == map_type)
            .any(|&(op, t)| {
                let family = item::family_key(op, t);
                self.map_sizes.contains_key(&family) || self.prices.contains_key(&family)
            })
    }

    /// Packets per second a path of cost `cost` (including per-packet work) sustains: the minimum
    /// over components of capacity / cost, capped by the packet-rate limit and, for frames of
    /// `frame_bytes`, by the line rate.
    pub fn packet_rate(&self, cost: &Cost, frame_bytes: u32) -> Rate {
        let mut best = Rate {
            pps: f64::INFINITY,
            bottleneck: "none".into(),
        };
        for (c, amount) in self.file.components.iter().zip(&cost.0) {
            if *amount > 0.0 {
                let pps = c.capacity_per_s / amount;
                if pps < best.pps {
                    best = Rate {
                        pps,
                        bottleneck: c.name.clone(),
                    };
                }
            }
        }
        if let Some(limit) = self.file.limits.max_packet_rate_pps {
            if limit < best.pps {
                best = Rate {
                    pps: limit,
                    bottleneck: "max_packet_rate".into(),
                };
            }
        }
        if let Some(line) = self.file.limits.line_rate_bps {
            // In f64: a frame of u32::MAX bytes plus the overhead must not overflow.
            let bytes = f64::from(frame_bytes.max(self.file.limits.min_frame_bytes))
                + f64::from(self.file.limits.wire_overhead_bytes);
            let pps = line / (bytes * 8.0);
            if pps < best.pps {
                best = Rate {
                    pps,
                    bottleneck: "line_rate".into(),
                };
            }
        }
        best
    }

    /// The named cost vector of a [`Cost`].
    pub fn named(&self, cost: &Cost) -> CostMap {
        self.file
            .components
            .iter()
            .zip(&cost.0)
            .map(|(c, v)| (c.name.clone(), *v))
            .collect()
    }
}

/// A packet rate and what limits it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// Packets per second.
    pub pps: f64,
    /// The component or limit that bounds the rate.
    pub bottleneck: String,
}
