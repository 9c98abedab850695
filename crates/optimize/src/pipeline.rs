//! From searched stages to a checked result: the final checks of a candidate against the input
//! (interpreter, then the kernel's checker and the kernel, on the generated packets and on path
//! witnesses with their maps, then whole-program equivalence in Z3 where it decides), and the
//! fallback that drops the culprit rewrite of a rejected candidate and tries again, down to
//! earlier passes' results (issue 10 items 2 and 5).

use std::time::Instant;

use linerate_bpf::contents::MapSeed;
use linerate_bpf::Object;
use linerate_smt::{check_equivalence, Equivalence, EquivalenceCounterexample, EquivalenceOptions};
use linerate_vm::VmOptions;

use crate::verify::{in_kernel, in_vm, in_vm_with, Rejection};
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
    /// What the whole-program equivalence check said of it.
    pub proof: Proof,
}

/// The whole-program equivalence check's verdict on the result.
#[derive(Clone, Debug, PartialEq)]
pub enum Proof {
    /// The result is the input: nothing to prove.
    Unchanged,
    /// Not asked for.
    Skipped,
    /// Equal on every input (packet, context, initial maps): `pairs` pairs of paths compared.
    Equivalent { pairs: usize, seconds: f64 },
    /// Not decided (a feature the check does not model, or out of time); the differential test
    /// in the interpreter and the kernel stands alone.
    Unknown { reason: String, seconds: f64 },
}

impl Proof {
    /// The verdict's name in `--json`.
    pub fn verdict(&self) -> &'static str {
        match self {
            Proof::Unchanged => "unchanged",
            Proof::Skipped => "skipped",
            Proof::Equivalent { .. } => "equivalent",
            Proof::Unknown { .. } => "unknown",
        }
    }
}

/// An input the equivalence check found the programs to differ on, as the interpreter replays it.
struct Counterexample {
    packet: Vec<u8>,
    maps: MapSeed,
    vm: VmOptions,
}

impl Counterexample {
    fn of(found: &EquivalenceCounterexample) -> Counterexample {
        Counterexample {
            packet: found.packet.clone(),
            maps: found.maps.clone(),
            vm: VmOptions {
                ingress_ifindex: found.ingress_ifindex,
                rx_queue_index: found.rx_queue_index,
                ..VmOptions::default()
            },
        }
    }

    /// Whether the interpreter gives `candidate` the original's outcome on this input.
    fn agrees(&self, original: &Object, candidate: &Object, program: usize) -> bool {
        in_vm_with(
            original,
            candidate,
            program,
            &self.maps,
            std::slice::from_ref(&self.packet),
            &self.vm,
        )
        .is_ok()
    }
}

/// Proves `candidate` equal to `original`: a counterexample the interpreter replays is a
/// rejection (and a new test input); one it does not replay leaves the question open.
fn prove(
    original: &Object,
    candidate: &Object,
    program: usize,
    options: &EquivalenceOptions,
    found: &mut Vec<Counterexample>,
) -> Result<Proof, Rejection> {
    let started = Instant::now();
    let verdict = check_equivalence(original, candidate, program, options);
    let seconds = started.elapsed().as_secs_f64();
    match verdict {
        Ok(Equivalence::Equivalent { paths }) => Ok(Proof::Equivalent {
            pairs: paths,
            seconds,
        }),
        Ok(Equivalence::Unknown(reason)) => Ok(Proof::Unknown { reason, seconds }),
        Err(e) => Ok(Proof::Unknown {
            reason: e.to_string(),
            seconds,
        }),
        Ok(Equivalence::Different(cex)) => {
            let input = Counterexample::of(&cex);
            if input.agrees(original, candidate, program) {
                let why = if cex.unrepeatable.is_empty() {
                    String::new()
                } else {
                    format!(", it relies on {}", cex.unrepeatable.join(", "))
                };
                return Ok(Proof::Unknown {
                    reason: format!(
                        "a counterexample (a different {}) that the interpreter does not \
                         replay{why}",
                        cex.differs.join(", ")
                    ),
                    seconds,
                });
            }
            found.push(input);
            Err(Rejection::NotEquivalent {
                differs: cex.differs.clone(),
            })
        }
    }
}

/// The result that passes the final checks: the last stage's rewrites with culprits dropped one
/// at a time until the program passes, an earlier stage's result once none is left. With
/// `prove`, a result must also not be proven different from the input by whole-program
/// equivalence; the counterexamples found join the inputs every later candidate is run on.
pub fn checked(
    object: &Object,
    program: usize,
    mut stages: Vec<Stage>,
    seed: &MapSeed,
    inputs: &TestInputs,
    prove_with: Option<&EquivalenceOptions>,
    discarded: &mut Vec<Discarded>,
) -> Result<Passed, CheckError> {
    let mut counterexamples: Vec<Counterexample> = Vec::new();
    while let Some(mut last) = stages.pop() {
        while !last.rewrites.is_empty() {
            let (candidate, assembled) = apply(&last.input, program, &last.rewrites)?;
            let verdict = counterexamples
                .iter()
                .find(|c| !c.agrees(object, &candidate, program))
                .map_or(Ok(()), |_| {
                    Err(Rejection::NotEquivalent {
                        differs: vec!["outcome on an earlier counterexample".into()],
                    })
                })
                .and_then(|()| final_check(object, &candidate, program, seed, inputs))
                .and_then(|()| match prove_with {
                    Some(options) => {
                        prove(object, &candidate, program, options, &mut counterexamples)
                    }
                    None => Ok(Proof::Skipped),
                });
            let rejection = match verdict {
                Ok(proof) => {
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
                        proof,
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
            // whose removal alone makes the interpreter agree (on the packets and on every
            // counterexample), or else the last one.
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
                            counterexamples
                                .iter()
                                .all(|x| x.agrees(object, &c, program))
                                && in_vm(object, &c, program, seed, &inputs.packets).is_ok()
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
        proof: Proof::Unchanged,
    })
}

pub fn entry_len(object: &Object, program: usize) -> usize {
    object.programs[program]
        .functions
        .first()
        .map_or(0, |f| f.len)
}
