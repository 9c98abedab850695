//! Maps without keys, as the interpreter keeps them: ring buffers and perf event arrays, which
//! carry records out of a run, and queue and stack maps, which `bpf_map_push/pop/peek_elem`
//! reach. What the helpers do with them is in `linerate_sem::helpers`; these hold the state.

use std::collections::VecDeque;

use linerate_bpf::facts::ringbuf::HDR_SIZE;

/// A ring buffer's positions (kernel/bpf/ringbuf.c `consumer_pos`, `producer_pos`); perf event
/// arrays keep none. The records themselves are output of the run that wrote them
/// (`RunOutcome::records`); the reader consumes them after each run, as the kernel runner does.
#[derive(Clone, Debug, Default)]
pub struct Ring {
    pub consumer: u64,
    pub producer: u64,
}

impl Ring {
    /// Accounts for a committed record of `len` bytes: its header and the record, rounded up to
    /// 8 bytes.
    pub fn produce(&mut self, len: u64) {
        self.producer = self
            .producer
            .wrapping_add((len + HDR_SIZE).next_multiple_of(8));
    }

    /// The reader took every record.
    pub fn consume_all(&mut self) {
        self.consumer = self.producer;
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
    fn ring_records_take_header_and_alignment() {
        let mut r = Ring::default();
        r.produce(1);
        r.produce(8);
        assert_eq!(r.producer, 16 + 16);
        r.consume_all();
        assert_eq!(r.consumer, 32);
    }
}
