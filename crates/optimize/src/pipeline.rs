//! From searched stages to a checked result: the final checks of a candidate against the input
//! (interpreter, then the kernel's checker and the kernel, on the generated packets and on path
//! witnesses with their maps), and the fallback that drops the culprit rewrite of a rejected
//! candidate and tries again, down to earlier passes' results (issue 10 item 5).

use linerate_bpf::contents::MapSeed;
use linerate_bpf::Object;

use crate::verify::{in_kernel, in_vm, Rejection};
use crate::{apply, compose, OptimizeError, Rewrite, Stage};

/// Why the final checks could not judge a candidate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// An engine cannot run the input itself.
    #[error("{engine} cannot run the programs: {error}")]
    Engine { engine: &'static str, error: String },
    #[error(transparent)]
    Optimize(#[from] OptimizeError),
}

/// The packets of the differential test: given ones, generated ones, and the bound's witnesses
/// (each with its own maps).
pub struct TestInputs {
    pub packets: Vec<Vec<u8>>,
    pub witnesses: Vec<(Vec<u8>, MapSeed)>,
}

/// A rejected candidate and why.
pub struct Discarded {
    /// Rewrites the rejected candidate held.
    pub rewrites: usize,
    pub reason: String,
    /// The rewrite dropped for it.
    pub dropped: Option<Rewrite>,
}

/// The verdict of the final checks on `candidate` against `original`.
pub fn final_check(
    original: &Object,
    candidate: &Object,
    program: usize,
    seed: &MapSeed,
    inputs: &TestInputs,
) -> Result<(), Rejection> {
    in_vm(original, candidate, program, seed, &inputs.packets)?;
    for (p, s) in &inputs.witnesses {
        in_vm(original, candidate, program, s, std::slice::from_ref(p))?;
    }
    in_kernel(original, candidate, program, seed, &inputs.packets)?;
    for (p, s) in &inputs.witnesses {
        in_kernel(original, candidate, program, s, std::slice::from_ref(p))?;
    }
    Ok(())
}

/// A result that passed the final checks.
pub struct Passed {
    pub object: Object,
    /// Where each slot of the input's entry function went.
    pub slot_map: Vec<Option<usize>>,
    /// The rewrites of each stage kept.
    pub rewrites: Vec<Vec<Rewrite>>,
}

/// The result that passes the final checks: the last stage's rewrites with culprits dropped one
/// at a time until the program passes, an earlier stage's result once none is left.
pub fn checked(
    object: &Object,
    program: usize,
    mut stages: Vec<Stage>,
    seed: &MapSeed,
    inputs: &TestInputs,
    discarded: &mut Vec<Discarded>,
) -> Result<Passed, CheckError> {
    while let Some(mut last) = stages.pop() {
        while !last.rewrites.is_empty() {
            let (candidate, assembled) = apply(&last.input, program, &last.rewrites)?;
            let rejection = match final_check(object, &candidate, program, seed, inputs) {
                Ok(()) => {
                    let mut map: Vec<Option<usize>> =
                        (0..entry_len(object, program)).map(Some).collect();
                    for s in &stages {
                        let (_, a) = apply(&s.input, program, &s.rewrites)?;
                        map = compose(&map, &a.slot_map);
                    }
                    map = compose(&map, &assembled.slot_map);
                    let mut kept: Vec<Vec<Rewrite>> =
                        stages.into_iter().map(|s| s.rewrites).collect();
                    kept.push(last.rewrites);
                    return Ok(Passed {
                        object: candidate,
                        slot_map: map,
                        rewrites: kept,
                    });
                }
                Err(Rejection::Engine { engine, error }) => {
                    return Err(CheckError::Engine { engine, error })
                }
                Err(r) => r,
            };
            discarded.push(Discarded {
                rewrites: last.rewrites.len(),
                reason: rejection.to_string(),
                dropped: None,
            });
            // The culprit: the rewrite around the slot the checker stopped at, or else the one
            // whose removal alone makes the interpreter agree, or else the last one.
            let culprit = match &rejection {
                Rejection::Verifier { slot: Some(s), .. } => {
                    let old = assembled
                        .slot_map
                        .iter()
                        .position(|n| n.is_some_and(|n| n >= *s));
                    old.and_then(|o| last.rewrites.iter().rposition(|r| r.start <= o))
                }
                _ => None,
            };
            let culprit = culprit.or_else(|| {
                (0..last.rewrites.len()).find(|&i| {
                    let mut fewer = last.rewrites.clone();
                    fewer.remove(i);
                    apply(&last.input, program, &fewer)
                        .ok()
                        .is_some_and(|(c, _)| {
                            in_vm(object, &c, program, seed, &inputs.packets).is_ok()
                        })
                })
            });
            let i = culprit.unwrap_or(last.rewrites.len() - 1);
            let dropped = last.rewrites.remove(i);
            if let Some(d) = discarded.last_mut() {
                d.dropped = Some(dropped);
            }
        }
    }
    Ok(Passed {
        object: object.clone(),
        slot_map: (0..entry_len(object, program)).map(Some).collect(),
        rewrites: Vec::new(),
    })
}

pub fn entry_len(object: &Object, program: usize) -> usize {
    object.programs[program]
        .functions
        .first()
        .map_or(0, |f| f.len)
}
