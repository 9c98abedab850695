//! Maps without keys, as the interpreter keeps them: ring buffers and perf event arrays, which
//! carry records out of a run, and queue and stack maps, which `bpf_map_push/pop/peek_elem`
//! reach. What the helpers do with them is in `linerate_sem::helpers`; these hold the state.

use std::collections::VecDeque;

use linerate_bpf::facts::ringbuf::HDR_SIZE;

/// A ring buffer's state (kernel/bpf/ringbuf.c): its positions, and the records of the current
/// run in ring order; perf event arrays use none of it. The data area itself is the map's slab
/// (`MapState::slab`), twice over as the kernel maps it, so that a record reserved across the
/// end of the ring is contiguous; it is not cleared between records, as the kernel's is not.
/// The reader consumes every record after each run, as the kernel runner does.
#[derive(Clone, Debug, Default)]
pub struct Ring {
    pub consumer: u64,
    pub producer: u64,
    /// Bytes of the data area (a power of two); 0 for perf event arrays.
    size: u64,
    /// This run's records, in the order they were reserved or written.
    log: Vec<Entry>,
}

#[derive(Clone, Debug)]
enum Entry {
    Ready(Vec<u8>),
    Reserved { offset: usize, len: usize },
    Discarded,
}

impl Ring {
    /// A ring buffer of `size` bytes (0: a perf event array).
    pub fn new(size: u64) -> Ring {
        Ring {
            size,
            ..Ring::default()
        }
    }

    /// Where the next record's data goes in the slab, and advances the producer past it.
    fn produce(&mut self, len: usize) -> usize {
        let offset = (self.producer.wrapping_add(HDR_SIZE) & self.size.wrapping_sub(1)) as usize;
        self.producer = self
            .producer
            .wrapping_add((len as u64 + HDR_SIZE).next_multiple_of(8));
        offset
    }

    /// Writes `bytes` at `offset` of the data area, in both of its copies.
    fn mirror(&self, slab: &mut [u8], offset: usize, bytes: &[u8]) {
        let size = self.size as usize;
        for (i, b) in bytes.iter().enumerate() {
            let o = (offset + i) % size;
            for at in [o, o + size] {
                if let Some(slot) = slab.get_mut(at) {
                    *slot = *b;
                }
            }
        }
    }

    /// Commits a record written whole (`bpf_ringbuf_output`).
    pub fn output(&mut self, slab: &mut [u8], record: Vec<u8>) {
        let offset = self.produce(record.len());
        self.mirror(slab, offset, &record);
        self.log.push(Entry::Ready(record));
    }

    /// Reserves `len` bytes; returns their offset in the slab.
    pub fn reserve(&mut self, len: usize) -> usize {
        let offset = self.produce(len);
        self.log.push(Entry::Reserved { offset, len });
        offset
    }

    /// Submits or discards the record reserved at `offset`; `false` if none is.
    pub fn commit(&mut self, slab: &mut [u8], offset: usize, discard: bool) -> bool {
        let Some(i) = self
            .log
            .iter()
            .position(|e| matches!(e, Entry::Reserved { offset: o, .. } if *o == offset))
        else {
            return false;
        };
        let Entry::Reserved { len, .. } = self.log[i] else {
            return false;
        };
        let record = slab.get(offset..offset + len).unwrap_or_default().to_vec();
        self.mirror(slab, offset, &record);
        self.log[i] = if discard {
            Entry::Discarded
        } else {
            Entry::Ready(record)
        };
        true
    }

    /// Whether `offset..offset + len` lies inside a reserved record.
    pub fn covers(&self, offset: usize, len: usize) -> bool {
        self.log.iter().any(|e| match e {
            Entry::Reserved { offset: o, len: l } => *o <= offset && offset + len <= o + l,
            _ => false,
        })
    }

    /// The reader takes every committed record (discarded ones are skipped).
    pub fn take_records(&mut self) -> Vec<Vec<u8>> {
        self.consumer = self.producer;
        std::mem::take(&mut self.log)
            .into_iter()
            .filter_map(|e| match e {
                Entry::Ready(r) => Some(r),
                _ => None,
            })
            .collect()
    }
}

/// A queue (first in, first out) or stack (last in, first out) of values.
#[derive(Clone, Debug)]
pub struct Queue {
    /// Oldest first.
    values: VecDeque<Vec<u8>>,
    lifo: bool,
}

impl Queue {
    pub fn new(lifo: bool) -> Queue {
        Queue {
            values: VecDeque::new(),
            lifo,
        }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Adds `value`, first dropping the oldest element if `evict`.
    pub fn push(&mut self, value: Vec<u8>, evict: bool) {
        if evict {
            self.values.pop_front();
        }
        self.values.push_back(value);
    }

    /// The element a pop returns (oldest of a queue, newest of a stack), removed if `remove`.
    pub fn take(&mut self, remove: bool) -> Option<Vec<u8>> {
        match (self.lifo, remove) {
            (false, true) => self.values.pop_front(),
            (true, true) => self.values.pop_back(),
            (false, false) => self.values.front().cloned(),
            (true, false) => self.values.back().cloned(),
        }
    }

    /// The elements in the order pops return them, each as an entry with an empty key (the
    /// canonical listing of a queue or stack: `linerate_bpf::contents::normalize_entries`).
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let in_pop_order: Box<dyn Iterator<Item = &Vec<u8>>> = if self.lifo {
            Box::new(self.values.iter().rev())
        } else {
            Box::new(self.values.iter())
        };
        in_pop_order.map(|v| (Vec::new(), v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_and_stack_pop_in_their_orders() {
        for lifo in [false, true] {
            let mut q = Queue::new(lifo);
            q.push(vec![1], false);
            q.push(vec![2], false);
            q.push(vec![3], true);
            let first = if lifo { vec![3] } else { vec![2] };
            assert_eq!(q.entries()[0].1, first);
            assert_eq!(q.take(false), Some(first.clone()));
            assert_eq!(q.take(true), Some(first));
            assert_eq!(q.len(), 1);
        }
    }

    #[test]
    fn ring_records_keep_reservation_order() {
        let mut r = Ring::new(4096);
        let mut slab = vec![0u8; 8192];
        let at = r.reserve(3);
        assert_eq!(at, 8);
        r.output(&mut slab, vec![7]);
        let discarded = r.reserve(1);
        slab[at..at + 3].copy_from_slice(&[1, 2, 3]);
        assert!(r.covers(at, 3) && !r.covers(at, 4));
        assert!(r.commit(&mut slab, at, false));
        assert!(r.commit(&mut slab, discarded, true));
        assert!(!r.commit(&mut slab, at, false));
        assert_eq!(r.producer, 16 * 3);
        assert_eq!(r.take_records(), vec![vec![1, 2, 3], vec![7]]);
        assert_eq!(r.consumer, 48);
    }
}
