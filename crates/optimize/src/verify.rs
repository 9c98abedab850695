//! The final checks of an optimized program against its original, before anything is written
//! (issue 10 item 5): the same packets, in order, with the same seeded maps, through the
//! interpreter and then through the kernel (whose checker must accept the program first); the
//! action, the output packet (metadata included) and every map after the run must be identical.

use linerate_bpf::contents::{MapContents, MapMode, MapSeed};
use linerate_bpf::Object;
use linerate_kernel::drive::Driver as KernelDriver;
use linerate_vm::drive::Driver as VmDriver;
use linerate_vm::VmOptions;

/// How an optimized program failed its final checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// The kernel's checker refused it; the slot it stopped at, when its log names one.
    Verifier {
        slot: Option<usize>,
        log_tail: String,
    },
    /// It behaved differently from the original on packet `packet`.
    Behaviour {
        engine: &'static str,
        packet: usize,
        what: String,
    },
    /// The maps differ after the run.
    Maps { engine: &'static str },
    /// The engine could not run one of the two programs (not the candidate's fault alone).
    Engine { engine: &'static str, error: String },
    /// The equivalence check found an input on which the two differ, and the interpreter
    /// replays it so.
    NotEquivalent { differs: Vec<String> },
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Verifier { slot, log_tail } => match slot {
                Some(s) => write!(f, "the kernel's checker refused it at insn {s}: {log_tail}"),
                None => write!(f, "the kernel's checker refused it: {log_tail}"),
            },
            Rejection::Behaviour {
                engine,
                packet,
                what,
            } => {
                write!(f, "{engine}: packet {packet} gives a different {what}")
            }
            Rejection::Maps { engine } => write!(f, "{engine}: the maps differ after the run"),
            Rejection::Engine { engine, error } => write!(f, "{engine}: {error}"),
            Rejection::NotEquivalent { differs } => write!(
                f,
                "the equivalence check found an input giving a different {} (replayed in the \
                 interpreter)",
                differs.join(", ")
            ),
        }
    }
}

/// One packet's observable result.
#[derive(PartialEq, Eq)]
struct Observed {
    action: u64,
    packet: Vec<u8>,
    meta: Vec<u8>,
}

fn compare(
    engine: &'static str,
    a: &[Observed],
    b: &[Observed],
    maps: (&MapContents, &MapContents),
) -> Result<(), Rejection> {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let what = if x.action != y.action {
            "action"
        } else if x.packet != y.packet {
            "packet"
        } else if x.meta != y.meta {
            "metadata"
        } else {
            continue;
        };
        return Err(Rejection::Behaviour {
            engine,
            packet: i,
            what: what.into(),
        });
    }
    if maps.0 != maps.1 {
        return Err(Rejection::Maps { engine });
    }
    Ok(())
}

/// Runs both objects' program `program` on `packets` in the interpreter, maps kept from packet to
/// packet, and compares.
pub fn in_vm(
    original: &Object,
    candidate: &Object,
    program: usize,
    seed: &MapSeed,
    packets: &[Vec<u8>],
) -> Result<(), Rejection> {
    in_vm_with(
        original,
        candidate,
        program,
        seed,
        packets,
        &VmOptions::default(),
    )
}

/// [`in_vm`] with the interpreter's settings given (the context's interface and queue).
pub fn in_vm_with(
    original: &Object,
    candidate: &Object,
    program: usize,
    seed: &MapSeed,
    packets: &[Vec<u8>],
    vm_options: &VmOptions,
) -> Result<(), Rejection> {
    let run = |object: &Object| -> Result<(Vec<Observed>, MapContents), String> {
        let mut d = VmDriver::new(object, seed, vm_options.clone(), MapMode::Persist)
            .map_err(|e| e.to_string())?;
        let runs = d.run_packets(program, packets, &[]).map_err(|e| match e {
            linerate_vm::drive::DriveError::Packet { index, source } => {
                format!("packet {index}: {source}")
            }
            e => e.to_string(),
        })?;
        let observed = runs
            .outcomes
            .into_iter()
            .map(|o| Observed {
                action: o.return_value,
                packet: o.packet,
                meta: o.meta,
            })
            .collect();
        Ok((observed, runs.final_maps))
    };
    let (a, ma) = run(original).map_err(|error| Rejection::Engine {
        engine: "interpreter",
        error,
    })?;
    // The candidate failing where the original runs is the candidate's fault.
    let (b, mb) = run(candidate).map_err(|error| Rejection::Behaviour {
        engine: "interpreter",
        packet: 0,
        what: format!("outcome: it stops ({error})"),
    })?;
    compare("interpreter", &a, &b, (&ma, &mb))
}

/// Loads both objects in the kernel (the candidate must pass its checker), runs program
/// `program` on `packets` with maps kept from packet to packet, and compares.
pub fn in_kernel(
    original: &Object,
    candidate: &Object,
    program: usize,
    seed: &MapSeed,
    packets: &[Vec<u8>],
) -> Result<(), Rejection> {
    let run =
        |object: &Object, is_candidate: bool| -> Result<(Vec<Observed>, MapContents), Rejection> {
            let mut d = KernelDriver::new(object, seed, MapMode::Persist)
                .map_err(|e| refused(e, is_candidate))?;
            let runs = d
                .run_packets(program, packets, &[], 1)
                .map_err(|e| refused(e, is_candidate))?;
            let observed = runs
                .outcomes
                .into_iter()
                .map(|o| Observed {
                    action: o.retval as u64,
                    packet: o.packet,
                    meta: o.meta,
                })
                .collect();
            Ok((observed, runs.final_maps))
        };
    let (b, mb) = run(candidate, true)?;
    let (a, ma) = run(original, false)?;
    compare("kernel", &a, &b, (&ma, &mb))
}

/// A kernel failure as a rejection: the checker's refusal of the candidate names the slot.
fn refused(e: linerate_kernel::drive::DriveError, is_candidate: bool) -> Rejection {
    match (e.verifier_log(), is_candidate) {
        (Some(log), true) => Rejection::Verifier {
            slot: failing_slot(log),
            log_tail: log
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string(),
        },
        _ => Rejection::Engine {
            engine: "kernel",
            error: e.to_string(),
        },
    }
}

/// The instruction the checker's log last reports (`N: (op) ...` lines), where it stopped.
pub fn failing_slot(log: &str) -> Option<usize> {
    log.lines().rev().find_map(|l| {
        let (n, rest) = l.split_once(": (")?;
        rest.get(..2)
            .filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()))?;
        n.trim().parse().ok()
    })
}
