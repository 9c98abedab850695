//! The environment the interpreter gives helpers: what `linerate_sem::helpers` leaves to a machine.
//!
//! What each helper does is defined once, in `linerate_sem::helpers`; this file supplies the
//! concrete world it acts on — the map store ([`crate::maps`]), the packet buffer, the clock and
//! random source of [`crate::VmOptions`], the routing table ([`FibRoute`]), and the records of
//! redirects and `bpf_trace_printk` lines. Every condition a helper asks about is decided by
//! evaluating it.

use linerate_bpf::facts::mtu;
use linerate_bpf::program::{MapDef, MapType};
use linerate_bpf::records::push_record;
use linerate_sem::helpers::{
    Device, FibAnswer, Frags, HelperMachine, PacketBounds, RedirectTo, Source, WalkPosition,
    WalkedElement, Whereabouts,
};
use linerate_sem::{HelperOutcome, Machine};

use crate::error::VmError;
use crate::machine::{Execution, Redirect};
use crate::memory::{pointer, split, CALLBACK_KEY_REGION, FUNCTION_REGION, MAP_VALUE_REGION};

/// A route `bpf_fib_lookup` returns: destinations within `prefix/prefix_len` leave through
/// `ifindex` with the given MAC addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FibRoute {
    /// IPv6 route (otherwise IPv4, in the first 4 bytes of `prefix`).
    pub ipv6: bool,
    pub prefix: [u8; 16],
    pub prefix_len: u8,
    pub ifindex: u32,
    pub smac: [u8; 6],
    pub dmac: [u8; 6],
}

/// Helpers the interpreter implements, by number.
pub const SUPPORTED: &[u32] = linerate_sem::helpers::SUPPORTED;

/// Bytes of `values` (each the value of one byte).
fn to_bytes(values: &[u64]) -> Vec<u8> {
    values.iter().map(|v| *v as u8).collect()
}

/// Calls `f` with the bytes of `values`, without allocating for up to 64 bytes (map keys, looked
/// up on the interpreter's hot path, and small writes such as a kfunc iterator's state).
fn with_bytes<R>(values: &[u64], f: impl FnOnce(&[u8]) -> R) -> R {
    let mut small = [0u8; 64];
    match small.get_mut(..values.len()) {
        Some(buf) => {
            for (b, v) in buf.iter_mut().zip(values) {
                *b = *v as u8;
            }
            f(buf)
        }
        None => f(&to_bytes(values)),
    }
}

impl HelperMachine for Execution<'_> {
    fn constant_of(&mut self, value: &u64) -> Option<u64> {
        Some(*value)
    }

    fn unknown(&mut self, pc: usize) -> Result<u64, Box<VmError>> {
        Err(Box::new(VmError::MemoryFault {
            program: self.program_name(),
            pc,
            what: "a helper result the interpreter cannot compute".into(),
        }))
    }

    #[inline]
    fn decide(&mut self, _pc: usize, cond: &bool) -> Result<bool, Box<VmError>> {
        Ok(*cond)
    }

    fn byte_count(
        &mut self,
        _pc: usize,
        _helper: u32,
        size: &u64,
        max: u64,
    ) -> Result<u64, Box<VmError>> {
        Ok((*size).min(max))
    }

    fn read_bytes(&mut self, pc: usize, addr: &u64, len: u64) -> Result<Vec<u64>, Box<VmError>> {
        let bytes = self.read_memory(pc, *addr, len as usize)?;
        Ok(bytes.iter().map(|b| u64::from(*b)).collect())
    }

    fn locate(
        &mut self,
        _pc: usize,
        addr: &u64,
        len: u64,
    ) -> Result<Whereabouts<u64, bool>, Box<VmError>> {
        Ok(Whereabouts {
            held: self.holds(*addr, len as usize),
            number: self.is_number(*addr),
            value: *addr,
        })
    }

    fn write_bytes(&mut self, pc: usize, addr: &u64, bytes: &[u64]) -> Result<(), Box<VmError>> {
        with_bytes(bytes, |b| self.write_memory(pc, *addr, b))
    }

    fn map_of(&mut self, pc: usize, helper: u32, handle: &u64) -> Result<usize, Box<VmError>> {
        self.map_of_handle(pc, helper, *handle)
    }

    fn map_def(&self, map: usize) -> &MapDef {
        &self.vm.maps[map].def
    }

    fn map_lookup(&mut self, _pc: usize, map: usize, key: &[u64]) -> Result<u64, Box<VmError>> {
        Ok(match with_bytes(key, |key| self.vm.maps[map].lookup(key)) {
            Some(slot) => self.value_pointer(map, slot),
            None => 0,
        })
    }

    /// The key is copied out of memory into a buffer on the stack (keys up to 64 bytes; longer
    /// ones into a vector) rather than into one value per byte.
    fn map_lookup_at(
        &mut self,
        pc: usize,
        map: usize,
        key_addr: &u64,
    ) -> Result<u64, Box<VmError>> {
        let key_size = self.vm.maps[map].def.key_size as usize;
        // A 4-byte key (every array's) on the stack or in the packet, read where it lies: the
        // lookup some programs make per byte they process.
        if key_size == 4 {
            if let Some(key) = self.fast_word(*key_addr) {
                return Ok(match self.vm.maps[map].lookup(&key) {
                    Some(slot) => self.value_pointer(map, slot),
                    None => 0,
                });
            }
        }
        let mut small = [0u8; 64];
        let mut large = Vec::new();
        let key: &mut [u8] = match small.get_mut(..key_size) {
            Some(buf) => buf,
            None => {
                large.resize(key_size, 0);
                &mut large
            }
        };
        key.copy_from_slice(self.read_memory(pc, *key_addr, key_size)?);
        Ok(match self.vm.maps[map].lookup(key) {
            Some(slot) => self.value_pointer(map, slot),
            None => 0,
        })
    }

    fn map_update(
        &mut self,
        _pc: usize,
        map: usize,
        key: &[u64],
        value: &[u64],
        flags: &u64,
    ) -> Result<u64, Box<VmError>> {
        let value = to_bytes(value);
        Ok(with_bytes(key, |key| self.vm.maps[map].update(key, &value, *flags)) as u64)
    }

    fn inner_map(&mut self, pc: usize, outer: usize, slot: &u64) -> Result<u64, Box<VmError>> {
        self.inner_map_handle(pc, outer, *slot)
    }

    fn map_delete(&mut self, _pc: usize, map: usize, key: &[u64]) -> Result<u64, Box<VmError>> {
        Ok(with_bytes(key, |key| self.vm.maps[map].delete(key)) as u64)
    }

    fn packet_bounds(&mut self) -> PacketBounds<u64> {
        let p = &self.vm.scratch.packet;
        PacketBounds {
            data_meta: p.data_meta as u64,
            data: p.data as u64,
            data_end: p.data_end as u64,
        }
    }

    fn set_packet_bounds(
        &mut self,
        _pc: usize,
        bounds: PacketBounds<u64>,
    ) -> Result<(), Box<VmError>> {
        self.vm.scratch.packet.set_bounds(
            bounds.data_meta as usize,
            bounds.data as usize,
            bounds.data_end as usize,
        );
        Ok(())
    }

    fn packet_frags(&mut self) -> Frags<u64> {
        let p = &self.vm.scratch.packet;
        Frags {
            len: p.frags_len() as u64,
            last: p.last_frag_len() as u64,
        }
    }

    fn set_frags_len(&mut self, _pc: usize, len: &u64) -> Result<(), Box<VmError>> {
        self.vm.scratch.packet.set_frags_len(*len as usize);
        Ok(())
    }

    fn read_packet(&mut self, pc: usize, offset: &u64, len: u64) -> Result<Vec<u64>, Box<VmError>> {
        let mut bytes = vec![0u8; len as usize];
        if !self.vm.scratch.packet.read_at(*offset as usize, &mut bytes) {
            return Err(self.outside_packet(pc, *offset, len));
        }
        Ok(bytes.iter().map(|b| u64::from(*b)).collect())
    }

    fn write_packet(&mut self, pc: usize, offset: &u64, bytes: &[u64]) -> Result<(), Box<VmError>> {
        if !self
            .vm
            .scratch
            .packet
            .write_at(*offset as usize, &to_bytes(bytes))
        {
            return Err(self.outside_packet(pc, *offset, bytes.len() as u64));
        }
        Ok(())
    }

    fn source(&mut self, _pc: usize, source: Source) -> Result<u64, Box<VmError>> {
        Ok(match source {
            Source::MonotonicNs | Source::BootNs => self.vm.next_ktime(),
            Source::Random32 => self.vm.next_prandom() as u64,
            // BPF_PROG_TEST_RUN runs the program on the CPU it is called from; the kernel runner
            // pins itself to CPU 0.
            Source::ProcessorId => 0,
            // The kernel's cookies hash under a boot-time secret: the interpreter draws them
            // from its generator. A SYN without an MSS option of 1300 or more encodes 536, the
            // table's first entry, as in the kernel; and no ACK carries a cookie the
            // interpreter issued, so checks fail, as the kernel's do for any other ACK.
            Source::SynCookie => self.vm.next_prandom() as u64,
            Source::SynCookieMss | Source::SynCookieValid => 0,
            // The interpreter holds no kernel memory but what it models (see `Execution::holds`):
            // a read of any other address in the kernel half fails, as at an unmapped one
            // (`-EFAULT`, the destination zeroed).
            Source::KernelRead => 1,
            Source::KernelByte => 0,
        })
    }

    fn tail_calls_made(&mut self) -> u32 {
        self.tail_calls
    }

    fn tail_call(
        &mut self,
        _pc: usize,
        go: &bool,
        _map: usize,
        program: &u64,
    ) -> Result<HelperOutcome, Box<VmError>> {
        let target = *program as usize;
        let Some(def) = self.vm.object().programs.get(target).filter(|_| *go) else {
            return Ok(HelperOutcome::Return);
        };
        // The kernel keeps other program kinds out of an XDP program's arrays.
        if !self.vm.is_xdp(target) {
            def.require_xdp("a tail call", "reaches XDP programs only")
                .map_err(|e| Box::new(VmError::NotXdp(e)))?;
        }
        self.tail_calls += 1;
        self.program = target;
        Ok(HelperOutcome::TailCall)
    }

    fn redirect(&mut self, _pc: usize, to: RedirectTo<u64>) -> Result<(), Box<VmError>> {
        self.redirect = Some(match to {
            RedirectTo::Ifindex(ifindex) => Redirect::Ifindex(ifindex as u32),
            RedirectTo::Map { map, key } => Redirect::Map {
                map,
                key: key as u32,
            },
        });
        Ok(())
    }

    fn fib_route(
        &mut self,
        _pc: usize,
        ipv6: bool,
        dst: &[u64],
    ) -> Result<FibAnswer<u64, bool>, Box<VmError>> {
        let dst = to_bytes(dst);
        let best = self
            .vm
            .options
            .fib
            .iter()
            .filter(|r| {
                r.ipv6 == ipv6 && prefix_matches(&r.prefix[..dst.len()], &dst, r.prefix_len)
            })
            .max_by_key(|r| r.prefix_len);
        let widen = |mac: &[u8; 6]| mac.map(u64::from);
        Ok(match best {
            Some(route) => FibAnswer {
                found: true,
                ifindex: u64::from(route.ifindex),
                smac: widen(&route.smac),
                dmac: widen(&route.dmac),
            },
            None => FibAnswer {
                found: false,
                ifindex: 0,
                smac: [0; 6],
                dmac: [0; 6],
            },
        })
    }

    fn trace(&mut self, _pc: usize, line: String) {
        self.trace.push(line);
    }

    fn ring_positions(&mut self, pc: usize, map: usize) -> Result<(u64, u64), Box<VmError>> {
        let ring = self.ring(pc, map)?;
        Ok((ring.consumer, ring.producer))
    }

    fn emit_record(&mut self, pc: usize, map: usize, record: Vec<u64>) -> Result<(), Box<VmError>> {
        let record = to_bytes(&record);
        let is_ring = self.vm.maps[map].def.map_type == MapType::RINGBUF;
        if let (true, Some((ring, data))) = (is_ring, self.vm.maps[map].ring_and_data()) {
            ring.output(data, record);
            return Ok(());
        }
        self.ring(pc, map)?;
        push_record(self.records, map, record);
        Ok(())
    }

    fn ring_reserve(&mut self, pc: usize, map: usize, size: u64) -> Result<u64, Box<VmError>> {
        let offset = self.ring(pc, map)?.reserve(size as usize);
        Ok(pointer(MAP_VALUE_REGION + map as u64, offset as u64))
    }

    fn ring_commit(&mut self, pc: usize, record: &u64, discard: bool) -> Result<(), Box<VmError>> {
        let (region, offset) = split(*record);
        let map = region.wrapping_sub(MAP_VALUE_REGION) as usize;
        let committed = region >= MAP_VALUE_REGION
            && self
                .vm
                .maps
                .get_mut(map)
                .and_then(|m| m.ring_and_data())
                .is_some_and(|(ring, data)| ring.commit(data, offset as usize, discard));
        if committed {
            Ok(())
        } else {
            Err(Box::new(VmError::MemoryFault {
                program: self.program_name(),
                pc,
                what: format!("{record:#x} is not a reserved ring buffer record"),
            }))
        }
    }

    fn queue_len(&mut self, pc: usize, map: usize) -> Result<u64, Box<VmError>> {
        Ok(self.queue(pc, map)?.len() as u64)
    }

    fn queue_push(
        &mut self,
        pc: usize,
        map: usize,
        value: Vec<u64>,
        evict: &bool,
    ) -> Result<(), Box<VmError>> {
        self.queue(pc, map)?.push(to_bytes(&value), *evict);
        Ok(())
    }

    fn queue_take(
        &mut self,
        pc: usize,
        map: usize,
        remove: bool,
    ) -> Result<Vec<u64>, Box<VmError>> {
        let value = self.queue(pc, map)?.take(remove).unwrap_or_default();
        Ok(value.into_iter().map(u64::from).collect())
    }

    fn device(&mut self, _pc: usize, ifindex: &u64) -> Result<Device<u64, bool>, Box<VmError>> {
        // A test run's packet arrives on the loopback device, the only device the interpreter
        // knows.
        let exists = *ifindex == 0 || *ifindex == mtu::LOOPBACK_IFINDEX;
        Ok(Device {
            exists,
            mtu: mtu::LOOPBACK_MTU,
            hard_header_len: mtu::LOOPBACK_HARD_HEADER_LEN,
        })
    }

    fn function_of(&mut self, pc: usize, helper: u32, value: &u64) -> Result<usize, Box<VmError>> {
        let (region, slot) = split(*value);
        if region != FUNCTION_REGION {
            return Err(Box::new(VmError::BadHelperArgument {
                program: self.program_name(),
                pc,
                helper,
                reason: format!("{value:#x} is not a function address"),
            }));
        }
        Ok(slot as usize)
    }

    fn callback_key(&mut self, pc: usize, key: &[u64]) -> Result<u64, Box<VmError>> {
        // The callback runs one frame deeper than the helper's caller.
        let depth = self.frames().len() + 1;
        let Some(slot) = self.vm.scratch.callback_keys.get_mut(depth) else {
            return Err(linerate_sem::SemError::CallDepth { pc }.into());
        };
        slot.clear();
        slot.extend(key.iter().map(|v| *v as u8));
        Ok(pointer(CALLBACK_KEY_REGION + depth as u64, 0))
    }

    fn map_next_element(
        &mut self,
        _pc: usize,
        map: usize,
        after: Option<WalkPosition>,
    ) -> Result<Option<WalkedElement<u64>>, Box<VmError>> {
        // Positions are (bucket, age) ([`crate::hash_order`]); buckets fit in 32 bits.
        let after = after.map(|(bucket, age)| (bucket as u32, age));
        let Some((key, slot, (bucket, age))) = self.vm.maps[map].next_in_visit_order(after) else {
            return Ok(None);
        };
        Ok(Some(WalkedElement {
            key: key.iter().map(|b| u64::from(*b)).collect(),
            value: self.value_pointer(map, slot),
            position: (u64::from(bucket), age),
        }))
    }
}

impl Execution<'_> {
    fn ring(&mut self, pc: usize, map: usize) -> Result<&mut crate::keyless::Ring, Box<VmError>> {
        let program = self.program_name();
        self.vm.maps[map].ring_mut().ok_or_else(|| {
            Box::new(VmError::MemoryFault {
                program,
                pc,
                what: format!("map {map} is not a ring buffer or perf event array"),
            })
        })
    }

    fn queue(&mut self, pc: usize, map: usize) -> Result<&mut crate::keyless::Queue, Box<VmError>> {
        let program = self.program_name();
        self.vm.maps[map].queue_mut().ok_or_else(|| {
            Box::new(VmError::MemoryFault {
                program,
                pc,
                what: format!("map {map} is not a queue or stack"),
            })
        })
    }
}

impl Execution<'_> {
    /// The fault of a packet helper's range the semantics let through but the buffer does not
    /// hold (the semantics checks every range first, so this is a bug, reported as one).
    fn outside_packet(&self, pc: usize, offset: u64, len: u64) -> Box<VmError> {
        let p = &self.vm.scratch.packet;
        Box::new(VmError::MemoryFault {
            program: self.program_name(),
            pc,
            what: format!(
                "{len} packet bytes at offset {offset} from data, past the packet's {} bytes",
                p.packet().len() + p.frags_len()
            ),
        })
    }
}

/// Whether the first `bits` bits of `prefix` and `addr` agree.
fn prefix_matches(prefix: &[u8], addr: &[u8], bits: u8) -> bool {
    (0..bits as usize).all(|bit| {
        let mask = 0x80u8 >> (bit % 8);
        match (prefix.get(bit / 8), addr.get(bit / 8)) {
            (Some(a), Some(b)) => a & mask == b & mask,
            _ => false,
        }
    })
}
