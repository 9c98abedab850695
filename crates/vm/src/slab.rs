//! Where the interpreter keeps map values: fixed-stride slots in pages allocated on first write.
//!
//! A map's values live in slots of `stride` bytes (the value size rounded up to 8, as the kernel
//! lays out array elements). A pointer to a value is (map, `slot * stride + offset`), see
//! [`crate::memory`], so a slot's address must never move; slots are therefore grouped into pages
//! of a power-of-two number of slots (about [`PAGE_BYTES`] each), and a page is allocated, zeroed,
//! the first time anything is written into it. Reading a slot of a page never written reads zeros
//! from a shared zero page. An array of 2^25 counters thus costs a page table of a few hundred KiB
//! plus one page per region a program or seed wrote, not 128 MiB up front; a hash map's slots
//! are appended as entries are inserted.

/// Target size of one page (bytes): the kernel's page size, so that the pages a sparse workload
/// touches stay few and small.
pub const PAGE_BYTES: usize = 4096;

/// Where a byte range of a [`Slab`] lives: its slot and offset in the slot, and the page and byte
/// offset inside the page that hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub slot: usize,
    pub within: usize,
    page: usize,
    at: usize,
}

/// Fixed-stride slots in lazily allocated pages.
#[derive(Clone, Debug)]
pub struct Slab {
    stride: usize,
    /// `2^64 / stride` rounded up, for dividing offsets below 2^32 by a stride below 2^32 with a
    /// multiplication ([`Slab::slot_of`]); 0 where the stride is outside that range.
    reciprocal: u64,
    /// log2 of the number of slots per page.
    shift: u32,
    /// Slots that exist (`0..slots`); reads and writes beyond are refused.
    slots: usize,
    pages: Vec<Option<Box<[u8]>>>,
    /// A page of zeros, read in place of pages never written.
    zeros: Box<[u8]>,
}

impl Slab {
    /// A slab of `slots` zeroed slots of `stride` bytes (`stride > 0`), sized for up to `capacity`
    /// slots (`capacity >= slots`; it only decides the page size: no page holds more slots than
    /// the map can ever have).
    pub fn new(stride: usize, slots: usize, capacity: usize) -> Slab {
        let stride = stride.max(1);
        let per_page_target = (PAGE_BYTES / stride).max(1).min(capacity.max(1));
        // Largest power of two not above the target.
        let shift = usize::BITS - 1 - per_page_target.leading_zeros();
        let reciprocal = match u32::try_from(stride) {
            Ok(d) if d >= 2 => u64::MAX / u64::from(d) + 1,
            _ => 0,
        };
        let mut slab = Slab {
            stride,
            reciprocal,
            shift,
            slots: 0,
            pages: Vec::new(),
            zeros: vec![0; stride << shift].into_boxed_slice(),
        };
        slab.set_slots(slots);
        slab
    }

    /// Bytes per slot.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots
    }

    fn page_bytes(&self) -> usize {
        self.stride << self.shift
    }

    /// Grows (or shrinks) the slab to `slots` slots; new slots read as zeros.
    pub fn set_slots(&mut self, slots: usize) {
        self.slots = slots;
        let pages = slots.div_ceil(1 << self.shift);
        self.pages.resize(pages, None);
    }

    /// Where the `len` bytes at byte `offset` (`slot * stride + within`) live, if they stay inside
    /// one existing slot.
    #[inline(always)]
    pub fn locate(&self, offset: usize, len: usize) -> Option<Loc> {
        let slot = self.slot_of(offset);
        let within = offset - slot * self.stride;
        if slot >= self.slots || within + len > self.stride {
            return None;
        }
        let page = slot >> self.shift;
        let at = (slot & ((1 << self.shift) - 1)) * self.stride + within;
        Some(Loc {
            slot,
            within,
            page,
            at,
        })
    }

    /// `offset / stride`. Every access to a map value divides its offset by the stride, and a
    /// 64-bit division takes tens of cycles; for 32-bit operands the high half of the product
    /// with the rounded-up reciprocal is the exact quotient (Lemire, Kaser and Kurz, "Faster
    /// remainder by direct computation", 2019, theorem 1 with N = 32, F = 64).
    #[inline(always)]
    fn slot_of(&self, offset: usize) -> usize {
        match u32::try_from(offset) {
            Ok(n) if self.reciprocal != 0 => {
                ((u128::from(self.reciprocal) * u128::from(n)) >> 64) as usize
            }
            _ => offset / self.stride,
        }
    }

    /// The `len` bytes at `loc` (zeros when its page was never written).
    #[inline(always)]
    pub fn bytes(&self, loc: Loc, len: usize) -> &[u8] {
        match &self.pages[loc.page] {
            Some(page) => &page[loc.at..loc.at + len],
            None => &self.zeros[loc.at..loc.at + len],
        }
    }

    /// The `len` bytes at `loc` for writing, allocating the page on first write.
    #[inline]
    pub fn bytes_mut(&mut self, loc: Loc, len: usize) -> &mut [u8] {
        let page_bytes = self.page_bytes();
        let page =
            self.pages[loc.page].get_or_insert_with(|| vec![0; page_bytes].into_boxed_slice());
        &mut page[loc.at..loc.at + len]
    }

    /// Slot `slot`'s first `len` bytes (`len <= stride`, `slot < slots`).
    pub fn slot(&self, slot: usize, len: usize) -> &[u8] {
        match self.locate(slot * self.stride, len) {
            Some(loc) => self.bytes(loc, len),
            None => &self.zeros[..0],
        }
    }

    /// Slot `slot`'s first `len` bytes for writing (`len <= stride`, `slot < slots`).
    pub fn slot_mut(&mut self, slot: usize, len: usize) -> &mut [u8] {
        match self.locate(slot * self.stride, len) {
            Some(loc) => self.bytes_mut(loc, len),
            None => &mut [],
        }
    }

    /// Zeroes slot `slot` (without allocating a page that is still all zeros).
    pub fn clear_slot(&mut self, slot: usize) {
        if let Some(loc) = self.locate(slot * self.stride, self.stride) {
            if let Some(page) = &mut self.pages[loc.page] {
                page[loc.at..loc.at + self.stride].fill(0);
            }
        }
    }

    /// The slots of pages that were ever written, in order; every other slot is zero.
    pub fn written_slots(&self) -> impl Iterator<Item = usize> + '_ {
        let per_page = 1usize << self.shift;
        self.pages
            .iter()
            .enumerate()
            .filter(|(_, page)| page.is_some())
            .flat_map(move |(page, _)| page * per_page..(page + 1) * per_page)
            .take_while(|&slot| slot < self.slots)
    }

    /// Bytes allocated for pages (excluding the page table and the zero page).
    pub fn allocated_bytes(&self) -> usize {
        self.pages.iter().flatten().map(|p| p.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untouched_slots_read_zero_and_cost_nothing() {
        let mut slab = Slab::new(8, 1 << 25, 1 << 25);
        assert_eq!(slab.allocated_bytes(), 0);
        let far = (1 << 25) - 1;
        assert_eq!(slab.slot(far, 8), &[0; 8]);
        slab.slot_mut(far, 4).copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(slab.slot(far, 8), &[1, 2, 3, 4, 0, 0, 0, 0]);
        assert_eq!(slab.allocated_bytes(), PAGE_BYTES);
        assert_eq!(slab.written_slots().count(), PAGE_BYTES / 8);
        assert_eq!(slab.written_slots().last(), Some(far));
        slab.clear_slot(far);
        assert_eq!(slab.slot(far, 8), &[0; 8]);
    }

    #[test]
    fn ranges_stay_inside_one_existing_slot() {
        let slab = Slab::new(24, 3, 3);
        assert!(slab.locate(24 + 16, 8).is_some());
        assert!(slab.locate(24 + 20, 8).is_none(), "straddles two slots");
        assert!(slab.locate(3 * 24, 1).is_none(), "past the last slot");
        // Small maps get small pages: 3 slots round down to pages of 2.
        assert_eq!(slab.page_bytes(), 48);
    }

    #[test]
    fn growing_keeps_written_values_in_place() {
        let mut slab = Slab::new(8, 0, 1000);
        for slot in 0..1000 {
            slab.set_slots(slot + 1);
            slab.slot_mut(slot, 8)
                .copy_from_slice(&(slot as u64).to_le_bytes());
        }
        assert!((0..1000).all(|s| slab.slot(s, 8) == (s as u64).to_le_bytes()));
        assert_eq!(slab.written_slots().count(), 1000);
    }

    #[test]
    fn slots_of_offsets_divide_exactly() {
        for stride in [
            1,
            2,
            3,
            8,
            24,
            40,
            4096,
            12_345,
            (1 << 20) + 8,
            (1 << 24) - 8,
        ] {
            let slab = Slab::new(stride, 1, 1);
            let probes = (0..3000usize)
                .chain([stride - 1, stride, stride + 1, 7 * stride - 1, 7 * stride])
                .chain((u32::MAX as usize - 3000)..=(u32::MAX as usize + 2));
            for offset in probes {
                assert_eq!(slab.slot_of(offset), offset / stride, "{offset} / {stride}");
            }
        }
    }

    #[test]
    fn values_larger_than_a_page_get_a_page_each() {
        let mut slab = Slab::new(3 * PAGE_BYTES, 4, 4);
        slab.slot_mut(2, 1)[0] = 9;
        assert_eq!(slab.allocated_bytes(), 3 * PAGE_BYTES);
        assert_eq!(slab.written_slots().collect::<Vec<_>>(), [2]);
    }
}
