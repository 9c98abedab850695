//! Reading the records a program sends to user space: ring buffer maps and perf event arrays,
//! read after every test run as a consumer would, in the form of `linerate_bpf::records`.
//!
//! * **Ring buffers** (`BPF_MAP_TYPE_RINGBUF`; include/uapi/linux/bpf.h, kernel/bpf/ringbuf.c):
//!   the map is mmap'ed as libbpf does — the consumer page (`consumer_pos`, writable) at offset
//!   0, and read-only from one page on the producer page (`producer_pos`) followed by the data
//!   area mapped twice in a row, so a record that wraps reads contiguously. Each record starts
//!   at `data + (pos & (size - 1))` with an 8-byte header (`u32 len; u32 pg_off`); `len` carries
//!   `BPF_RINGBUF_BUSY_BIT` while reserved and `BPF_RINGBUF_DISCARD_BIT` if discarded; the next
//!   record follows at `round_up(len + 8, 8)`. Committed records are taken, discarded ones
//!   skipped, and `consumer_pos` is advanced past both, so every run starts with an empty ring.
//! * **Perf event arrays** (`BPF_MAP_TYPE_PERF_EVENT_ARRAY`): one `perf_event_open` event
//!   (`PERF_TYPE_SOFTWARE`, `PERF_COUNT_SW_BPF_OUTPUT`, sampling `PERF_SAMPLE_RAW`) on CPU 0,
//!   where [`crate::LoadedObject::test_run`] runs programs, its fd stored in slot 0 of the map,
//!   and its ring mmap'ed (include/uapi/linux/perf_event.h: `struct perf_event_mmap_page` with
//!   `data_head`/`data_tail`, then the data pages). Each `PERF_RECORD_SAMPLE` holds
//!   `u32 size` and `size` bytes of raw data, padded by the kernel; the record is those bytes,
//!   padding included. A `PERF_RECORD_LOST` (the ring overflowed) is an error. Slots other than
//!   CPU 0's stay empty, which is what the semantics assume.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use linerate_bpf::facts::ringbuf::{BUSY_BIT, DISCARD_BIT, HDR_SIZE};
use linerate_bpf::records::{push_record, Records};
use linerate_bpf::{MapDef, MapType};

use crate::error::KernelError;
use crate::sys::Errno;

/// Data pages of each perf event ring (a power of two): 64 KiB, room for many samples per run.
const PERF_DATA_PAGES: usize = 16;

/// `perf_event_attr` constants (include/uapi/linux/perf_event.h).
mod perf_attr {
    pub const TYPE_SOFTWARE: u32 = 1;
    pub const COUNT_SW_BPF_OUTPUT: u64 = 10;
    pub const SAMPLE_RAW: u64 = 1 << 10;
    /// `PERF_ATTR_SIZE_VER5`: the fields up to `aux_watermark`, enough for what is set here.
    pub const SIZE: usize = 112;
    pub const FLAG_FD_CLOEXEC: libc::c_ulong = 8;
    pub const RECORD_LOST: u32 = 2;
    pub const RECORD_SAMPLE: u32 = 9;
    /// Offsets of `data_head` and `data_tail` in `struct perf_event_mmap_page`.
    pub const DATA_HEAD: usize = 1024;
    pub const DATA_TAIL: usize = 1032;
}

/// A shared memory mapping, unmapped on drop.
#[derive(Debug)]
struct Mapping {
    addr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(fd: &OwnedFd, len: usize, prot: i32, offset: usize) -> Result<Mapping, Errno> {
        let offset = libc::off_t::try_from(offset).map_err(|_| Errno(libc::EINVAL))?;
        // SAFETY: a fresh shared mapping of `fd`; the kernel checks length, protection and
        // offset, and the result is only used within `len` bytes.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                offset,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(Errno::last());
        }
        Ok(Mapping {
            addr: addr.cast(),
            len,
        })
    }

    /// The 8-byte aligned counter at `offset`, shared with the kernel.
    fn counter(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset + 8 <= self.len && offset.is_multiple_of(8));
        // SAFETY: in bounds and aligned (callers pass constant offsets inside the first page;
        // mappings are page aligned); the kernel updates the counter concurrently, so it is only
        // accessed atomically.
        unsafe { &*(self.addr.add(offset) as *const AtomicU64) }
    }

    /// `len` bytes at `offset`.
    fn bytes(&self, offset: usize, len: usize) -> Option<Vec<u8>> {
        let end = offset.checked_add(len).filter(|e| *e <= self.len)?;
        // SAFETY: `offset..end` lies inside the mapping.
        Some(unsafe { std::slice::from_raw_parts(self.addr.add(offset), end - offset) }.to_vec())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `addr`/`len` are exactly what mmap returned; nothing refers to them anymore.
        unsafe {
            libc::munmap(self.addr.cast(), self.len);
        }
    }
}

// SAFETY: the mapping is plain shared memory; the counters are accessed atomically and records
// only copied out.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

/// A reader of one map's records.
#[derive(Debug)]
pub(crate) struct Reader {
    map: usize,
    name: String,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Ring {
        consumer: Mapping,
        producer: Mapping,
        size: u64,
        page: usize,
    },
    Perf {
        /// Keeps the event open; the map holds a reference too.
        _event: OwnedFd,
        ring: Mapping,
        page: usize,
    },
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page).unwrap_or(4096)
}

/// Readers for the ring buffers and perf event arrays among `maps` (`(definition, fd)` in
/// object order); perf event arrays get their event installed in slot 0.
pub(crate) fn attach<'a>(
    maps: impl Iterator<Item = (&'a MapDef, &'a OwnedFd)>,
) -> Result<Vec<Reader>, KernelError> {
    let page = page_size();
    let mut readers = Vec::new();
    for (index, (def, fd)) in maps.enumerate() {
        let fail = |what: &str, errno| {
            KernelError::syscall(format!("{what} for map `{}`", def.name), errno)
        };
        let kind = match def.map_type {
            MapType::RINGBUF => {
                let size = def.max_entries as usize;
                let consumer = Mapping::new(fd, page, libc::PROT_READ | libc::PROT_WRITE, 0)
                    .map_err(|e| fail("mmap of the ring buffer's consumer page", e))?;
                let producer = Mapping::new(fd, page + 2 * size, libc::PROT_READ, page)
                    .map_err(|e| fail("mmap of the ring buffer's data", e))?;
                Kind::Ring {
                    consumer,
                    producer,
                    size: size as u64,
                    page,
                }
            }
            MapType::PERF_EVENT_ARRAY => {
                let event = open_bpf_output_event(0).map_err(|e| fail("perf_event_open", e))?;
                let ring = Mapping::new(
                    &event,
                    page * (1 + PERF_DATA_PAGES),
                    libc::PROT_READ | libc::PROT_WRITE,
                    0,
                )
                .map_err(|e| fail("mmap of the perf event ring", e))?;
                let value = (event.as_raw_fd() as u32).to_le_bytes();
                crate::object::raw_update(fd.as_fd(), &0u32.to_le_bytes(), &value)
                    .map_err(|e| fail("installing the perf event in slot 0", e))?;
                Kind::Perf {
                    _event: event,
                    ring,
                    page,
                }
            }
            _ => continue,
        };
        readers.push(Reader {
            map: index,
            name: def.name.clone(),
            kind,
        });
    }
    Ok(readers)
}

/// A `PERF_COUNT_SW_BPF_OUTPUT` event on `cpu` that samples raw data and wakes on every sample.
fn open_bpf_output_event(cpu: i32) -> Result<OwnedFd, Errno> {
    let mut attr = [0u8; perf_attr::SIZE];
    attr[0..4].copy_from_slice(&perf_attr::TYPE_SOFTWARE.to_ne_bytes());
    attr[4..8].copy_from_slice(&(perf_attr::SIZE as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&perf_attr::COUNT_SW_BPF_OUTPUT.to_ne_bytes());
    // sample_period = 1, sample_type = PERF_SAMPLE_RAW, wakeup_events = 1.
    attr[16..24].copy_from_slice(&1u64.to_ne_bytes());
    attr[24..32].copy_from_slice(&perf_attr::SAMPLE_RAW.to_ne_bytes());
    attr[48..52].copy_from_slice(&1u32.to_ne_bytes());
    // SAFETY: `attr` is a perf_event_attr of the size it declares; pid -1 with a cpu watches
    // every task on that CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            -1 as libc::pid_t,
            cpu,
            -1 as libc::c_int,
            perf_attr::FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Takes every record the readers' maps hold, leaving them empty. Without `keep` the records
/// are dropped, and so is the note of a perf ring that overflowed (timing runs repeat a
/// program thousands of times; what they send is not reported).
pub(crate) fn take_all(readers: &[Reader], keep: bool) -> Result<Records, KernelError> {
    let mut records = Records::new();
    for reader in readers {
        let bad =
            |what: String| KernelError::InvalidArgument(format!("map `{}`: {what}", reader.name));
        match &reader.kind {
            Kind::Ring {
                consumer,
                producer,
                size,
                page,
            } => {
                let cons = consumer.counter(0);
                let mut pos = cons.load(Ordering::Acquire);
                let end = producer.counter(0).load(Ordering::Acquire);
                while pos < end {
                    let at = page + (pos & (size - 1)) as usize;
                    let header = producer
                        .bytes(at, HDR_SIZE as usize)
                        .ok_or_else(|| bad(format!("record header at {pos} outside the ring")))?;
                    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
                    if len & BUSY_BIT != 0 {
                        return Err(bad(format!("record at {pos} still reserved after the run")));
                    }
                    let data_len = len & !DISCARD_BIT;
                    if len & DISCARD_BIT == 0 {
                        let data = producer
                            .bytes(at + HDR_SIZE as usize, data_len as usize)
                            .ok_or_else(|| bad(format!("record at {pos} overruns the ring")))?;
                        push_record(&mut records, reader.map, data);
                    }
                    pos += (u64::from(data_len) + HDR_SIZE).next_multiple_of(8);
                }
                cons.store(pos, Ordering::Release);
            }
            Kind::Perf { ring, page, .. } => {
                let data_size = (page * PERF_DATA_PAGES) as u64;
                let head = ring.counter(perf_attr::DATA_HEAD).load(Ordering::Acquire);
                let tail_counter = ring.counter(perf_attr::DATA_TAIL);
                let mut tail = tail_counter.load(Ordering::Acquire);
                let read = |pos: u64, len: usize| -> Option<Vec<u8>> {
                    // The data area wraps: copy byte by byte across the end.
                    (0..len as u64)
                        .map(|i| {
                            let off = page + ((pos + i) % data_size) as usize;
                            ring.bytes(off, 1).map(|b| b[0])
                        })
                        .collect()
                };
                while tail < head {
                    let header =
                        read(tail, 8).ok_or_else(|| bad(format!("perf record at {tail}")))?;
                    let kind = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
                    let size = u16::from_ne_bytes([header[6], header[7]]);
                    if size < 8 {
                        return Err(bad(format!("perf record at {tail} of size {size}")));
                    }
                    match kind {
                        perf_attr::RECORD_SAMPLE => {
                            let raw_len = read(tail + 8, 4)
                                .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                                .ok_or_else(|| bad(format!("perf sample at {tail}")))?;
                            if u64::from(raw_len) + 12 > u64::from(size) {
                                return Err(bad(format!(
                                    "perf sample at {tail}: raw data of {raw_len} bytes in a \
                                     record of {size}"
                                )));
                            }
                            let raw = read(tail + 12, raw_len as usize)
                                .ok_or_else(|| bad(format!("perf sample at {tail}")))?;
                            push_record(&mut records, reader.map, raw);
                        }
                        perf_attr::RECORD_LOST if keep => {
                            return Err(bad("the perf event ring overflowed".into()));
                        }
                        _ => {}
                    }
                    tail += u64::from(size);
                }
                tail_counter.store(tail, Ordering::Release);
            }
        }
    }
    Ok(if keep { records } else { Records::new() })
}
