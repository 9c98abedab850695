//! What a witness run can repeat: the inputs a path may need that a replay (the interpreter, or
//! `BPF_PROG_TEST_RUN` on freshly created maps, pinned to CPU 0) cannot set up.
//!
//! The engine keeps such inputs open, since a guarantee covers them: time, random numbers, the
//! CPU, a ring buffer whose reader lags. The checker first asks for a model with the values a
//! replay has ([`preferences`]); what the path still needs otherwise is listed in the witness
//! ([`unrepeatable`]), which the tests then check in the interpreter only, or not at all.

use linerate_bpf::contents::{hex, MapSeed};
use linerate_bpf::facts::test_run_buffer::HEADROOM;
use linerate_bpf::{MapType, Object};
use z3::ast::{Bool, BV};
use z3::Model;

use crate::checker::WitnessRoute;
use crate::machine::{Env, State};

/// Name of the CPU source (`HelperMachine::source`), which replays run as CPU 0.
pub(crate) const PROCESSOR_ID: &str = "bpf_get_smp_processor_id";

/// Name of the indicator that a device `bpf_check_mtu` asked about is as a replay sees it
/// (the loopback device alone): 1 where it is.
pub(crate) const DEVICE_AS_REPLAYED: &str = "bpf_check_mtu (a device as a replay sees it)";

/// Whether source `what` is one of a device's properties, which [`DEVICE_AS_REPLAYED`] covers.
fn device_property(what: &str) -> bool {
    what.starts_with("bpf_check_mtu (device")
}

/// Conditions under which a replay repeats the path's inputs: every ring buffer empty at
/// position 0, the CPU 0, the inner maps the object places statically in their slots.
pub(crate) fn preferences(state: &State) -> Vec<Bool> {
    let mut out: Vec<Bool> = state
        .maps
        .iter()
        .filter_map(|m| m.ring.as_ref().map(|r| r.fresh()))
        .collect();
    out.extend(
        state
            .maps
            .iter()
            .flat_map(|m| m.placement.iter().map(|(differs, _)| differs.not())),
    );
    out.extend(state.sources.iter().filter_map(|s| match s.what {
        PROCESSOR_ID => Some(s.bv.eq(BV::from_u64(0, 64))),
        DEVICE_AS_REPLAYED => Some(s.bv.eq(BV::from_u64(1, 64))),
        _ => None,
    }));
    out
}

/// The value `model` gives `bv` (0 where it leaves it open).
pub(crate) fn model_u64(model: &Model, bv: &BV) -> u64 {
    model.eval(bv, true).and_then(|v| v.as_u64()).unwrap_or(0)
}

/// The input a replay gives a run: what `model` makes of the run's symbolic packet, initial map
/// contents and context fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayInput {
    pub packet: Vec<u8>,
    pub maps: MapSeed,
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
}

/// The input under `model` of a run of `object` that ended in `state`.
pub(crate) fn replay_input(object: &Object, state: &State, model: &Model) -> ReplayInput {
    let value = |bv: &BV| model_u64(model, bv);
    let len = value(&state.inputs.packet_len);
    let packet = (0..len)
        .map(|i| value(&state.packet.peek_initial(HEADROOM + i).zero_ext(56)) as u8)
        .collect();
    let mut maps = MapSeed::new();
    for (i, map) in state.maps.iter().enumerate() {
        for (key, val) in map.witness(&object.maps[i], model) {
            maps.push(i, key, val);
        }
    }
    ReplayInput {
        packet,
        maps,
        ingress_ifindex: value(&state.inputs.ingress_ifindex) as u32,
        rx_queue_index: value(&state.inputs.rx_queue_index) as u32,
    }
}

/// What one routing lookup of the path needs under `model`: the destination and, if the lookup
/// finds a route, where the route leads.
struct LookupAnswer {
    pc: usize,
    destination: std::net::IpAddr,
    route: Option<(u32, [u8; 6], [u8; 6])>,
}

fn lookup_answers(state: &State, model: &Model) -> Vec<LookupAnswer> {
    let value = |bv: &BV| model_u64(model, bv);
    let bytes = |bvs: &[BV]| bvs.iter().map(|b| value(b) as u8).collect::<Vec<u8>>();
    let mac = |bvs: &[BV]| -> [u8; 6] { bytes(bvs).try_into().unwrap_or([0; 6]) };
    state
        .fib_lookups
        .iter()
        .map(|l| {
            let dst = bytes(&l.dst);
            let destination = match (
                l.ipv6,
                <[u8; 16]>::try_from(&dst[..]),
                <[u8; 4]>::try_from(&dst[..]),
            ) {
                (true, Ok(v6), _) => std::net::IpAddr::from(v6),
                (_, _, Ok(v4)) => std::net::IpAddr::from(v4),
                _ => std::net::IpAddr::from([0u8; 4]),
            };
            LookupAnswer {
                pc: l.pc,
                destination,
                route: (value(&l.found) == 1)
                    .then(|| (value(&l.ifindex) as u32, mac(&l.smac), mac(&l.dmac))),
            }
        })
        .collect()
}

/// The routes a replay needs for the path's routing lookups under `model`: a host route to each
/// destination a lookup finds a route to, leading where the path needs it. `Err` names two
/// lookups of one destination that need different answers, which no routing table gives.
pub(crate) fn routes(state: &State, model: &Model) -> Result<Vec<WitnessRoute>, String> {
    routes_answering(&lookup_answers(state, model))
}

/// [`routes`] for the lookups' answers.
fn routes_answering(answers: &[LookupAnswer]) -> Result<Vec<WitnessRoute>, String> {
    let mut out = Vec::new();
    for (i, a) in answers.iter().enumerate() {
        if let Some(earlier) = answers[..i].iter().find(|e| e.destination == a.destination) {
            if earlier.route != a.route {
                return Err(format!(
                    "bpf_fib_lookup at insns {} and {} answering differently for {}, which no \
                     routing table does",
                    earlier.pc, a.pc, a.destination
                ));
            }
            continue;
        }
        if let Some((ifindex, smac, dmac)) = a.route {
            out.push(WitnessRoute {
                destination: a.destination,
                ifindex,
                smac,
                dmac,
            });
        }
    }
    Ok(out)
}

/// The values from outside the program the path relies on under `model` that a replay does not
/// give: `"bpf_get_prandom_u32 at insn 7 = 5"`. Routing lookups are told one line each, with the
/// route they need, when one routing table can answer them all ([`routes`]).
pub(crate) fn unrepeatable(env: &Env, state: &State, model: &Model) -> Vec<String> {
    let value = |bv: &BV| model_u64(model, bv);
    let answers = lookup_answers(state, model);
    let routable = routes_answering(&answers);
    let mut out: Vec<String> = state
        .sources
        .iter()
        .filter(|s| !device_property(s.what))
        .filter(|s| routable.is_err() || !s.what.starts_with("bpf_fib_lookup"))
        .filter(|s| match s.what {
            PROCESSOR_ID => value(&s.bv) != 0,
            DEVICE_AS_REPLAYED => value(&s.bv) != 1,
            _ => true,
        })
        .map(|s| match s.what {
            DEVICE_AS_REPLAYED => format!(
                "a device bpf_check_mtu asks about at insn {} other than a replay's loopback",
                s.pc
            ),
            _ => format!("{} at insn {} = {}", s.what, s.pc, value(&s.bv)),
        })
        .collect();
    match routable {
        Ok(_) => out.extend(answers.iter().map(|a| match a.route {
            Some((ifindex, smac, dmac)) => format!(
                "bpf_fib_lookup at insn {}: a route to {} via ifindex {ifindex}, source MAC {}, \
                 destination MAC {}",
                a.pc,
                a.destination,
                hex(&smac),
                hex(&dmac)
            ),
            None => format!(
                "bpf_fib_lookup at insn {}: no route to {}",
                a.pc, a.destination
            ),
        })),
        Err(why) => out.push(why),
    }
    for (differs, why) in state.maps.iter().flat_map(|m| &m.placement) {
        if model.eval(differs, true).and_then(|b| b.as_bool()) == Some(true) {
            out.push(why.clone());
        }
    }
    for (map, def) in state.maps.iter().zip(&env.object.maps) {
        // An AF_XDP socket map's slot holds a socket, which user space creates: a replay in the
        // kernel gets no such entry from a seed (its update refuses anything but a socket fd).
        if def.map_type == MapType::XSKMAP {
            let slots: Vec<String> = map
                .witness(def, model)
                .into_iter()
                .filter_map(|(key, _)| {
                    let index: [u8; 4] = key.get(..4)?.try_into().ok()?;
                    Some(u32::from_le_bytes(index).to_string())
                })
                .collect();
            if !slots.is_empty() {
                out.push(format!(
                    "an AF_XDP socket in slot {} of map `{}`, which only user space can put there",
                    slots.join(", "),
                    def.name
                ));
            }
        }
        if let Some(why) = map
            .ring
            .as_ref()
            .and_then(|r| r.unrepeatable(&def.name, model))
        {
            out.push(why);
        }
    }
    out
}
