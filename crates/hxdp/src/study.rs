//! The paper's compiler studies on any program: VLIW rows as the lane count varies (the shape of
//! Fig. 8) and the contribution of each pass (Figs. 7 and 9), each compiled afresh.

use linerate_bpf::Object;
use serde::Serialize;

use crate::compile::{compile, CompileOptions};
use crate::passes::PASS_NAMES;
use crate::HxdpError;

/// Rows at one lane count.
#[derive(Clone, Debug, Serialize)]
pub struct LanePoint {
    pub lanes: usize,
    pub rows: usize,
    pub static_ipc: f64,
}

/// Rows at each lane count of `lanes`, the rest of `base` unchanged. A program too long for the
/// instruction memory is studied anyway (the limit is the device's, not the compiler's).
pub fn lanes_sweep(
    object: &Object,
    program: usize,
    base: &CompileOptions,
    lanes: impl IntoIterator<Item = usize>,
) -> Result<Vec<LanePoint>, HxdpError> {
    lanes
        .into_iter()
        .map(|n| {
            let mut options = *base;
            options.schedule.lanes = n;
            options.imem_rows = usize::MAX;
            let c = compile(object, program, &options)?;
            Ok(LanePoint {
                lanes: n,
                rows: c.schedule.rows.len(),
                static_ipc: c.schedule.static_ipc(),
            })
        })
        .collect()
}

/// One configuration of the ablation.
#[derive(Clone, Debug, Serialize)]
pub struct Ablation {
    /// `all`, `no_<pass>` for each pass or scheduling step, or `none`.
    pub config: String,
    /// Instructions left after the passes.
    pub instructions: usize,
    pub rows: usize,
}

/// `base` with everything on (`all`), with each pass and scheduling step off in turn
/// (`no_<name>`), and with everything off (`none`): the configurations of the ablation.
pub fn variants(base: &CompileOptions) -> Vec<(String, CompileOptions)> {
    let mut configs: Vec<(String, CompileOptions)> = vec![("all".into(), *base)];
    for name in PASS_NAMES {
        let mut o = *base;
        o.passes.set(name, false);
        configs.push((format!("no_{name}"), o));
    }
    let mut o = *base;
    o.schedule.parallel_branching = false;
    configs.push(("no_parallel_branching".into(), o));
    let mut o = *base;
    o.rename = false;
    configs.push(("no_rename".into(), o));
    let mut o = *base;
    o.code_motion = false;
    configs.push(("no_code_motion".into(), o));
    let mut o = *base;
    o.passes = crate::passes::PassOptions::none();
    o.schedule.parallel_branching = false;
    o.rename = false;
    o.code_motion = false;
    configs.push(("none".into(), o));
    configs
}

/// Instructions and rows in each configuration of [`variants`].
pub fn ablation(
    object: &Object,
    program: usize,
    base: &CompileOptions,
) -> Result<Vec<Ablation>, HxdpError> {
    variants(base)
        .into_iter()
        .map(|(config, mut options)| {
            options.imem_rows = usize::MAX;
            let c = compile(object, program, &options)?;
            Ok(Ablation {
                config,
                instructions: c.lowered.len(),
                rows: c.schedule.rows.len(),
            })
        })
        .collect()
}
