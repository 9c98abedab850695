//! The import backend (issue 13, backend (b)): profiles measured elsewhere — on a real SmartNIC
//! with its own benchmark competitors and performance counters — read from CSV and served as a
//! [`Backend`], so that training, prediction and placement run on them as on the host or the
//! simulated device.
//!
//! # CSV schema (version 1)
//!
//! One profile point per row; `#` starts a comment line; the first other line is this header,
//! exactly:
//!
//! ```text
//! nf,flows,packet_size,mtbr,mem_working_set,mem_access_rate,mem_pattern,accel,accel_queues,accel_request_time,throughput_pps,car,bandwidth,occupancy
//! ```
//!
//! * `nf`: the NF's name; `flows`, `packet_size` (bytes), `mtbr` (matches per MB): the traffic
//!   profile (§5.1).
//! * The memory competitor (mem-bench): working set (bytes), target access rate (cache-line
//!   accesses/s), pattern `stream` or `chase`; all three empty for none.
//! * The accelerator competitor: `regex` or `compression`, its queues and request time (s); all
//!   three empty for none (one per row; a point with two accelerator competitors is two
//!   accelerators columns short: not expressible in version 1).
//! * `throughput_pps`: the NF's measured throughput.
//! * The contention features observed while it ran: `car` (the competitors' cache accesses/s),
//!   `bandwidth` (bytes/s), `occupancy` (LLC bytes; empty where no counter tells). Empty `car`
//!   and `bandwidth` mean 0.
//! * On a row without competitors the same three cells hold **the NF's own counters** alone,
//!   when measured (0 or empty: not measured). Prediction needs them of every competitor; the
//!   NF's working set is taken as its occupancy (the cache bytes it holds).
//!
//! `examples/colocate/sim-flowstats.csv` is a sample in this schema (written from linerate's
//! simulated device, not from a real NIC).

use crate::error::ColocateError;
use crate::profile::{
    AccelCompetitor, AccessPattern, Backend, ContentionSetting, Features, MemoryCompetitor, Sample,
    TrafficProfile,
};
use crate::record::{Measurement, ProfileFile};
use crate::sim::AccelKind;

/// The header line of a version-1 profile CSV.
pub const CSV_HEADER: &str = "nf,flows,packet_size,mtbr,mem_working_set,mem_access_rate,mem_pattern,accel,accel_queues,accel_request_time,throughput_pps,car,bandwidth,occupancy";

/// Imported samples as a backend: a point is answered by the sample measured there.
pub struct ImportBackend {
    samples: Vec<Sample>,
    taken: usize,
}

fn format_error(source: &str, line: usize, reason: impl std::fmt::Display) -> ColocateError {
    ColocateError::Format {
        what: format!("{source}:{line}"),
        reason: reason.to_string(),
    }
}

/// Reads the samples of a profile CSV; `source` names it in errors (`file:line: cause`).
pub fn read_csv(source: &str, text: &str) -> Result<Vec<Sample>, ColocateError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let (header_line, header) = lines
        .next()
        .ok_or_else(|| format_error(source, 1, "no header line"))?;
    if header != CSV_HEADER {
        return Err(format_error(
            source,
            header_line,
            format!("the header must be `{CSV_HEADER}`"),
        ));
    }
    let columns = CSV_HEADER.split(',').count();
    let mut samples = Vec::new();
    for (line, text) in lines {
        let cells: Vec<&str> = text.split(',').map(str::trim).collect();
        if cells.len() != columns {
            return Err(format_error(
                source,
                line,
                format!("{} cells, the header has {columns}", cells.len()),
            ));
        }
        samples.push(parse_row(&cells).map_err(|e| format_error(source, line, e))?);
    }
    Ok(samples)
}

/// A number of column `name`, or `None` for an empty cell.
fn number(cells: &[&str], index: usize) -> Result<Option<f64>, String> {
    let cell = cells[index];
    if cell.is_empty() {
        return Ok(None);
    }
    let name = CSV_HEADER.split(',').nth(index).unwrap_or("?");
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
        _ => Err(format!(
            "{name} `{cell}` is not a finite non-negative number"
        )),
    }
}

fn required(cells: &[&str], index: usize) -> Result<f64, String> {
    let name = CSV_HEADER.split(',').nth(index).unwrap_or("?");
    number(cells, index)?.ok_or_else(|| format!("{name} is empty"))
}

fn parse_row(cells: &[&str]) -> Result<Sample, String> {
    if cells[0].is_empty() {
        return Err("nf is empty".into());
    }
    let traffic = TrafficProfile {
        flows: required(cells, 1)?,
        packet_size: required(cells, 2)?,
        mtbr: required(cells, 3)?,
    };
    traffic.validate().map_err(|e| e.to_string())?;
    let memory = match (number(cells, 4)?, number(cells, 5)?, cells[6]) {
        (None, None, "") => None,
        (Some(working_set), Some(access_rate), pattern) => Some(MemoryCompetitor {
            working_set,
            access_rate,
            pattern: match pattern {
                "stream" => AccessPattern::Stream,
                "chase" => AccessPattern::Chase,
                other => return Err(format!("mem_pattern `{other}` is not stream or chase")),
            },
        }),
        _ => {
            return Err("the memory competitor's three cells must all be given or all empty".into())
        }
    };
    let accelerators = match (cells[7], number(cells, 8)?, number(cells, 9)?) {
        ("", None, None) => Vec::new(),
        (kind, Some(queues), Some(request_time)) => {
            let kind = match kind {
                "regex" => AccelKind::Regex,
                "compression" => AccelKind::Compression,
                other => return Err(format!("accel `{other}` is not regex or compression")),
            };
            if queues.fract() != 0.0 || queues < 1.0 || queues > f64::from(u32::MAX) {
                return Err(format!(
                    "accel_queues `{}` is not a positive integer",
                    cells[8]
                ));
            }
            vec![AccelCompetitor {
                kind,
                queues: queues as u32,
                request_time,
            }]
        }
        _ => {
            return Err(
                "the accelerator competitor's three cells must all be given or all empty".into(),
            )
        }
    };
    let throughput = required(cells, 10)?;
    if throughput <= 0.0 {
        return Err("throughput_pps must be positive".into());
    }
    Ok(Sample {
        nf: cells[0].to_string(),
        traffic,
        setting: ContentionSetting {
            memory,
            accelerators,
        },
        throughput,
        features: Features {
            access_rate: number(cells, 11)?.unwrap_or(0.0),
            bandwidth: number(cells, 12)?.unwrap_or(0.0),
            working_set: memory.map_or(0.0, |m| m.working_set),
            occupancy: number(cells, 13)?,
        },
        solo_beside: None,
    })
}

/// One CSV row of `sample` (the inverse of [`read_csv`]'s rows).
pub fn csv_row(sample: &Sample) -> String {
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let m = sample.setting.memory;
    let a = sample.setting.accelerators.first();
    let t = &sample.traffic;
    [
        sample.nf.clone(),
        t.flows.to_string(),
        t.packet_size.to_string(),
        t.mtbr.to_string(),
        opt(m.map(|m| m.working_set)),
        opt(m.map(|m| m.access_rate)),
        m.map_or(String::new(), |m| match m.pattern {
            AccessPattern::Stream => "stream".into(),
            AccessPattern::Chase => "chase".into(),
        }),
        a.map_or(String::new(), |a| a.kind.name().to_string()),
        opt(a.map(|a| f64::from(a.queues))),
        opt(a.map(|a| a.request_time)),
        sample.throughput.to_string(),
        sample.features.access_rate.to_string(),
        sample.features.bandwidth.to_string(),
        opt(sample.features.occupancy),
    ]
    .join(",")
}

/// The profile file of `nf`'s rows (a plan-less profile, [`crate::train::fit_unplanned`]):
/// every row a profile point, every row without competitors also the NF's solo measurement
/// with its own counters (see the schema) and, as a point, no competitors' features.
pub fn profile_file(nf: &str, samples: &[Sample]) -> Result<ProfileFile, ColocateError> {
    let mut measurements = Vec::new();
    for sample in samples.iter().filter(|s| s.nf == nf) {
        let mut point = sample.clone();
        if sample.setting.is_solo() {
            let own = sample.features;
            let measured = own.access_rate > 0.0 || own.bandwidth > 0.0;
            measurements.push(Measurement::NfAlone {
                traffic: sample.traffic,
                counters: measured.then_some(Features {
                    working_set: own.occupancy.unwrap_or(0.0),
                    ..own
                }),
                throughput: sample.throughput,
            });
            point.features = Features::default();
        }
        measurements.push(Measurement::Point(point));
    }
    if measurements.is_empty() {
        let mut names: Vec<&str> = samples.iter().map(|s| s.nf.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        return Err(ColocateError::Backend {
            backend: "import".into(),
            reason: format!("no rows of {nf} (NFs in the file: {})", names.join(", ")),
        });
    }
    Ok(ProfileFile::new("import", nf, None, measurements))
}

impl ImportBackend {
    pub fn new(samples: Vec<Sample>) -> ImportBackend {
        ImportBackend { samples, taken: 0 }
    }

    /// The imported samples.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }
}

impl Backend for ImportBackend {
    /// The NF's name, as in the CSV.
    type Nf = String;

    fn profile_one(
        &mut self,
        nf: &String,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<Sample, ColocateError> {
        let found = self
            .samples
            .iter()
            .find(|s| &s.nf == nf && &s.traffic == traffic && &s.setting == setting)
            .cloned()
            .map(|mut s| {
                // A solo row's counters are the NF's own, not competitors'.
                if s.setting.is_solo() {
                    s.features = Features::default();
                }
                s
            })
            .ok_or_else(|| ColocateError::Backend {
                backend: "import".into(),
                reason: format!(
                    "no sample of {nf} at {} flows, {} B, {} matches/MB under this setting",
                    traffic.flows, traffic.packet_size, traffic.mtbr
                ),
            })?;
        self.taken = self.taken.saturating_add(1);
        Ok(found)
    }

    fn samples_taken(&self) -> usize {
        self.taken
    }

    fn name(&self) -> &str {
        "import"
    }
}
