//! Symbolic state of the maps without keys: ring buffers (their positions and the records the
//! path reserved) and queue and stack maps (their elements). What the helpers do with them is
//! written once in `linerate_sem::helpers::records`; this is what they act on.
//!
//! A guarantee holds for every state these may be in when a packet arrives:
//!
//! - A ring buffer's reader may lag: its consumer and producer positions are unknown, 8-byte
//!   aligned (every record is), the producer at most the ring's size minus one ahead
//!   (`__bpf_ringbuf_reserve`, kernel/bpf/ringbuf.c). What records hold is never read back by
//!   the program, so only the positions matter. A witness prefers an empty ring at position 0
//!   (a freshly created map, as a replay creates it); a path that needs unread data in the ring
//!   says so ([`Ring::unrepeatable`]).
//! - A queue or stack holds up to `max_entries` unknown elements, oldest first, which a witness
//!   installs by pushing them in that order (as map contents are written).

use z3::ast::{Ast, Bool, BV};
use z3::Model;

/// Queues and stacks with more elements than this are not modelled (every element is a term
/// of the formula).
pub const MAX_QUEUE: u32 = 64;

/// A ring buffer's positions and this path's reservations.
#[derive(Clone, Debug)]
pub struct Ring {
    /// Positions at the start of the run.
    pub consumer0: BV,
    pub producer0: BV,
    /// The producer position now (the consumer does not move during a run).
    pub producer: BV,
    /// Bytes of each record the path reserved, by slot.
    pub reserved: Vec<u64>,
    /// Where the next record is produced: under this condition only (the helper's checks,
    /// carried out as a weak update rather than chosen), or always (`None`).
    pub guard: Option<Bool>,
}

impl Ring {
    /// A ring buffer `size` bytes long, map `index` of the object; the constraints its initial
    /// positions satisfy.
    pub fn new(index: usize, size: u32) -> (Ring, Bool) {
        let consumer0 = BV::new_const(format!("map{index}_consumer"), 64);
        // The producer is the consumer plus what is unread, a number of 8-byte units below the
        // ring's size: built that way, every room check the helpers make (`producer + len -
        // consumer` against the size) simplifies to a sum of small numbers the solver sees are
        // small, instead of a difference of two 64-bit unknowns (a path of nine records to a
        // full ring took 7-12 s to refute that way).
        let bits = (64 - u64::from(size.max(1)).leading_zeros()).max(4);
        let units = BV::new_const(format!("map{index}_unread_units"), bits - 3);
        let ahead = units.concat(BV::from_u64(0, 3)).zero_ext(64 - bits);
        let producer0 = consumer0.bvadd(&ahead);
        let c = |v: u64| BV::from_u64(v, 64);
        // Positions count bytes since the map was created: far from wrapping around.
        let axioms = Bool::and(&[
            &consumer0.bvult(c(1 << 48)),
            &ahead.bvule(c(u64::from(size).saturating_sub(1))),
            &consumer0.bvand(c(7)).eq(c(0)),
        ]);
        let ring = Ring {
            producer: producer0.clone(),
            consumer0,
            producer0,
            reserved: Vec::new(),
            guard: None,
        };
        (ring, axioms)
    }

    /// Advances the producer past a record of `len` bytes (with its 8-byte header, rounded up
    /// to 8 bytes, as `linerate_bpf::facts::ringbuf` describes it), where the guard holds.
    pub fn produce(&mut self, len: u64) {
        let padded = (len + linerate_bpf::facts::ringbuf::HDR_SIZE).next_multiple_of(8);
        let advanced = self.producer.bvadd(BV::from_u64(padded, 64));
        self.producer = match self.guard.take() {
            Some(guard) => guard.ite(&advanced, &self.producer),
            None => advanced,
        }
        .simplify();
    }

    /// The ring as a fresh map holds it: empty, at position 0.
    pub fn fresh(&self) -> Bool {
        let zero = BV::from_u64(0, 64);
        Bool::and(&[&self.consumer0.eq(&zero), &self.producer0.eq(&zero)])
    }

    /// Why a run of the witness cannot repeat what the path needs of the ring, if it does not
    /// start empty at position 0.
    pub fn unrepeatable(&self, name: &str, model: &Model) -> Option<String> {
        let value = |bv: &BV| model.eval(bv, true).and_then(|v| v.as_u64()).unwrap_or(0);
        let (consumer, producer) = (value(&self.consumer0), value(&self.producer0));
        (consumer != 0 || producer != 0).then(|| {
            format!(
                "ring buffer `{name}` at consumer position {consumer} and producer position \
                 {producer} ({} bytes unread)",
                producer.wrapping_sub(consumer)
            )
        })
    }
}

/// One element of a queue or stack: whether it is there, and its bytes.
#[derive(Clone, Debug)]
struct Element {
    present: Bool,
    bytes: Vec<BV>,
}

/// A queue or stack map's elements, oldest first: the initial ones (the first `len0` of
/// `capacity` variables), then those the path pushed.
#[derive(Clone, Debug)]
pub struct Queue {
    lifo: bool,
    /// Elements at the start of the run.
    pub len0: BV,
    initial: Vec<Vec<BV>>,
    elements: Vec<Element>,
}

impl Queue {
    /// Queue (`lifo`: stack) map `index` of the object, of `capacity` elements of `value_size`
    /// bytes; the constraint its initial length satisfies.
    pub fn new(index: usize, lifo: bool, capacity: u32, value_size: u32) -> (Queue, Bool) {
        let len0 = BV::new_const(format!("map{index}_length"), 64);
        let axiom = len0.bvule(BV::from_u64(u64::from(capacity), 64));
        let initial: Vec<Vec<BV>> = (0..capacity)
            .map(|k| {
                (0..value_size)
                    .map(|b| BV::new_const(format!("map{index}_element{k}@{b}"), 8))
                    .collect()
            })
            .collect();
        let elements = initial
            .iter()
            .enumerate()
            .map(|(k, bytes)| Element {
                present: BV::from_u64(k as u64, 64).bvult(&len0),
                bytes: bytes.clone(),
            })
            .collect();
        let queue = Queue {
            lifo,
            len0,
            initial,
            elements,
        };
        (queue, axiom)
    }

    /// The number of elements now.
    pub fn len(&self) -> BV {
        let (one, zero) = (BV::from_u64(1, 64), BV::from_u64(0, 64));
        self.elements
            .iter()
            .fold(zero.clone(), |n, e| n.bvadd(e.present.ite(&one, &zero)))
            .simplify()
    }

    /// For each element, whether it is the first present one in the order given.
    fn firsts<'a>(elements: impl Iterator<Item = &'a Element>) -> Vec<Bool> {
        let mut before = Bool::from_bool(false);
        let mut out = Vec::new();
        for e in elements {
            out.push(Bool::and(&[&e.present, &before.not()]).simplify());
            before = Bool::or(&[&before, &e.present]).simplify();
        }
        out
    }

    /// Adds `bytes` as the newest element, first dropping the oldest where `evict` holds.
    pub fn push(&mut self, bytes: Vec<BV>, evict: &Bool) {
        let firsts = Queue::firsts(self.elements.iter());
        for (e, first) in self.elements.iter_mut().zip(firsts) {
            let dropped = Bool::and(&[evict, &first]);
            e.present = Bool::and(&[&e.present, &dropped.not()]).simplify();
        }
        self.elements.push(Element {
            present: Bool::from_bool(true),
            bytes,
        });
    }

    /// The element a pop returns (the oldest of a queue, the newest of a stack), removed where
    /// `remove`; the caller has established that there is one.
    pub fn take(&mut self, remove: bool, value_size: u32) -> Vec<BV> {
        let order: Vec<usize> = if self.lifo {
            (0..self.elements.len()).rev().collect()
        } else {
            (0..self.elements.len()).collect()
        };
        let firsts = Queue::firsts(order.iter().map(|&i| &self.elements[i]));
        let mut out: Vec<BV> = (0..value_size).map(|_| BV::from_u64(0, 8)).collect();
        for (&i, first) in order.iter().zip(&firsts).rev() {
            for (o, b) in out.iter_mut().zip(&self.elements[i].bytes) {
                *o = first.ite(b, o);
            }
        }
        if remove {
            for (&i, first) in order.iter().zip(&firsts) {
                let e = &mut self.elements[i];
                e.present = Bool::and(&[&e.present, &first.not()]).simplify();
            }
        }
        out.into_iter().map(|b| b.simplify()).collect()
    }

    /// The initial elements in `model`, oldest first: pushed in this order, they make the map
    /// the path started from.
    pub fn witness(&self, model: &Model) -> Vec<Vec<u8>> {
        let value = |bv: &BV| model.eval(bv, true).and_then(|v| v.as_u64()).unwrap_or(0);
        let len = value(&self.len0) as usize;
        self.initial
            .iter()
            .take(len)
            .map(|bytes| bytes.iter().map(|b| value(b) as u8).collect())
            .collect()
    }
}
