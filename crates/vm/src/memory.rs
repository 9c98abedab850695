//! The interpreter's address space and the XDP packet buffer.
//!
//! A pointer is `region << 32 | offset`. The BPF verifier guarantees that pointers never move from
//! one region to another, so the region in the upper half identifies what is accessed and the
//! lower half is checked against that region's bounds on every access:
//!
//! | region                     | what                                                        |
//! |----------------------------|-------------------------------------------------------------|
//! | [`CTX_REGION`]             | the `struct xdp_md` context                                 |
//! | [`PACKET_REGION`]          | the packet buffer (headroom, metadata, data, tailroom)      |
//! | [`STACK_REGION`]           | the stack frames of all active functions                    |
//! | [`FUNCTION_REGION`]        | function addresses (callbacks): the offset is the slot      |
//! | [`CALLBACK_KEY_REGION`] + d| the key passed to the callback at call depth `d`, read-only |
//! | [`MAP_VALUE_REGION`] + i   | the value slab of map `i` (see [`crate::maps`])             |
//! | [`MAP_HANDLE_REGION`] + i  | the handle of map `i`: passed to helpers, never dereferenced|
//!
//! The packet buffer reproduces the layout of the kernel's `BPF_PROG_TEST_RUN` for XDP so that
//! `bpf_xdp_adjust_head/meta/tail` succeed and fail exactly where the kernel's do. A packet longer
//! than one buffer holds is multi-buffer, as the kernel builds it: the first `MAX_DATA` bytes in
//! the frame (all that `data..data_end` reaches), the rest in page-sized fragments that only the
//! packet helpers (`bpf_xdp_load_bytes`, ...) read and write.

/// Region of the `struct xdp_md` context.
pub const CTX_REGION: u64 = 1;
/// Region of the packet buffer.
pub const PACKET_REGION: u64 = 2;
/// Region of the stack.
pub const STACK_REGION: u64 = 3;
/// Region of function addresses (`BPF_PSEUDO_FUNC` loads), never dereferenced.
pub const FUNCTION_REGION: u64 = 4;
/// First region of the keys `bpf_for_each_map_elem` passes its callbacks, one per call depth.
pub const CALLBACK_KEY_REGION: u64 = 0x10;
/// First region of map value slabs.
pub const MAP_VALUE_REGION: u64 = 0x100;
/// First region of map handles.
pub const MAP_HANDLE_REGION: u64 = 0x8000_0000;

/// The pointer to `offset` in `region`.
#[inline(always)]
pub fn pointer(region: u64, offset: u64) -> u64 {
    (region << 32) | offset
}

/// Splits a pointer into region and offset.
#[inline(always)]
pub fn split(addr: u64) -> (u64, u64) {
    (addr >> 32, addr & 0xffff_ffff)
}

/// The layout of the test_run packet buffer ([`linerate_bpf::facts::test_run_buffer`]) in
/// `usize` for indexing.
pub mod layout {
    use linerate_bpf::facts::test_run_buffer as facts;

    pub const FRAME_SIZE: usize = facts::FRAME_SIZE as usize;
    pub const HEADROOM: usize = facts::HEADROOM as usize;
    pub const ETH_HLEN: usize = facts::ETH_HLEN as usize;
    pub const MAX_META: usize = facts::MAX_META as usize;
    pub const MAX_DATA: usize = facts::MAX_DATA as usize;
    pub const FRAG_SIZE: usize = facts::FRAG_SIZE as usize;
    pub const MAX_PACKET: usize = facts::MAX_PACKET as usize;
}

/// The XDP packet buffer: offsets of `data_meta`, `data` and `data_end` into `buf`.
#[derive(Clone, Debug)]
pub struct PacketBuffer {
    pub buf: Vec<u8>,
    pub data_meta: usize,
    pub data: usize,
    pub data_end: usize,
    /// The part of `buf` that may hold bytes other than zero: every write lands inside
    /// `data_meta..data_end` of its moment, so the lowest `data_meta` and highest `data_end` seen
    /// bound it. Refilling clears only this part.
    touched: (usize, usize),
    /// The fragments after `data_end`, in packet order, each of 1 to `FRAG_SIZE` bytes; empty
    /// for a single-buffer packet.
    frags: Vec<Vec<u8>>,
}

/// Packet buffer errors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error(
        "packet of {len} bytes is larger than the {max} bytes BPF_PROG_TEST_RUN takes \
         ({} in the buffer, then at most {} fragments of {} bytes)",
        layout::MAX_DATA,
        linerate_bpf::facts::test_run_buffer::MAX_FRAGS,
        layout::FRAG_SIZE
    )]
    TooLarge { len: usize, max: usize },
    #[error("packet of {len} bytes is shorter than an Ethernet header ({min} bytes)")]
    TooShort { len: usize, min: usize },
    #[error("metadata of {len} bytes is invalid (at most {max} bytes, a multiple of 4)")]
    BadMeta { len: usize, max: usize },
}

impl Default for PacketBuffer {
    fn default() -> Self {
        PacketBuffer {
            buf: vec![0u8; layout::FRAME_SIZE],
            data_meta: layout::HEADROOM,
            data: layout::HEADROOM,
            data_end: layout::HEADROOM,
            touched: (layout::HEADROOM, layout::HEADROOM),
            frags: Vec::new(),
        }
    }
}

impl PacketBuffer {
    /// A buffer holding `meta` followed by `packet`, laid out as the kernel's test_run does: the
    /// metadata sits just before the data, which starts `HEADROOM` bytes into a zeroed frame;
    /// packet bytes past `MAX_DATA` fill fragments of `FRAG_SIZE` bytes, the last one partly.
    pub fn new(packet: &[u8], meta: &[u8]) -> Result<PacketBuffer, PacketError> {
        let mut buffer = PacketBuffer::default();
        buffer.refill(packet, meta)?;
        Ok(buffer)
    }

    /// Makes this buffer what [`PacketBuffer::new`] would return, reusing its memory.
    pub fn refill(&mut self, packet: &[u8], meta: &[u8]) -> Result<(), PacketError> {
        use layout::*;
        if packet.len() > MAX_PACKET {
            return Err(PacketError::TooLarge {
                len: packet.len(),
                max: MAX_PACKET,
            });
        }
        if packet.len() < ETH_HLEN {
            return Err(PacketError::TooShort {
                len: packet.len(),
                min: ETH_HLEN,
            });
        }
        if meta.len() > MAX_META || !meta.len().is_multiple_of(4) {
            return Err(PacketError::BadMeta {
                len: meta.len(),
                max: MAX_META,
            });
        }
        self.buf[self.touched.0..self.touched.1].fill(0);
        self.data = HEADROOM;
        self.data_meta = HEADROOM - meta.len();
        let (linear, rest) = packet.split_at(packet.len().min(MAX_DATA));
        self.data_end = HEADROOM + linear.len();
        self.buf[self.data_meta..self.data].copy_from_slice(meta);
        self.buf[self.data..self.data_end].copy_from_slice(linear);
        self.touched = (self.data_meta, self.data_end);
        self.frags.clear();
        self.frags
            .extend(rest.chunks(FRAG_SIZE).map(|chunk| chunk.to_vec()));
        Ok(())
    }

    fn note_bounds(&mut self) {
        self.touched = (
            self.touched.0.min(self.data_meta),
            self.touched.1.max(self.data_end),
        );
    }

    /// The linear part of the packet data (`data..data_end`).
    pub fn packet(&self) -> &[u8] {
        &self.buf[self.data..self.data_end]
    }

    /// The whole packet: the linear part, then the fragments (what `BPF_PROG_TEST_RUN` copies
    /// out after the metadata).
    pub fn whole_packet(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data_end - self.data + self.frags_len());
        out.extend_from_slice(self.packet());
        for frag in &self.frags {
            out.extend_from_slice(frag);
        }
        out
    }

    /// Bytes in all fragments (`skb_shared_info.xdp_frags_size`; zero for a single buffer).
    pub fn frags_len(&self) -> usize {
        self.frags.iter().map(Vec::len).sum()
    }

    /// Bytes in the last fragment (zero without fragments).
    pub fn last_frag_len(&self) -> usize {
        self.frags.last().map_or(0, Vec::len)
    }

    /// Makes the fragments hold `len` bytes in all, as `bpf_xdp_adjust_tail` does once its
    /// checks passed (`linerate_sem::helpers`): a shorter total comes off the end, dropping the
    /// fragments it empties; a longer one grows the last fragment with zeros (the semantics
    /// checked that it fits the fragment's page).
    pub fn set_frags_len(&mut self, len: usize) {
        let mut keep = len;
        let mut kept = 0;
        for frag in &mut self.frags {
            if keep == 0 {
                break;
            }
            frag.truncate(keep);
            keep -= frag.len();
            kept += 1;
        }
        self.frags.truncate(kept);
        if let Some(last) = self.frags.last_mut() {
            last.resize(last.len() + keep, 0);
        }
    }

    /// The linear part and the fragments in packet order, each with its offset from `data`.
    fn pieces_mut(&mut self) -> impl Iterator<Item = (usize, &mut [u8])> {
        let linear = &mut self.buf[self.data..self.data_end];
        std::iter::once(linear)
            .chain(self.frags.iter_mut().map(Vec::as_mut_slice))
            .scan(0usize, |start, piece| {
                let at = *start;
                *start += piece.len();
                Some((at, piece))
            })
    }

    /// Copies packet bytes from `offset` after `data` into `out`, through the linear part into
    /// the fragments (`bpf_xdp_copy_buf`); false, copying nothing, where the range leaves the
    /// packet.
    pub fn read_at(&mut self, offset: usize, out: &mut [u8]) -> bool {
        self.copy_at(offset, out.len(), |piece, done| {
            out[done..done + piece.len()].copy_from_slice(piece)
        })
    }

    /// Copies `bytes` into the packet from `offset` after `data`, through the linear part into
    /// the fragments; false, writing nothing, where the range leaves the packet.
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) -> bool {
        self.copy_at(offset, bytes.len(), |piece, done| {
            piece.copy_from_slice(&bytes[done..done + piece.len()])
        })
    }

    /// Calls `copy` with each piece of packet `offset .. offset + len` and the bytes copied
    /// before it.
    fn copy_at(
        &mut self,
        offset: usize,
        len: usize,
        mut copy: impl FnMut(&mut [u8], usize),
    ) -> bool {
        let total = self.data_end - self.data + self.frags_len();
        if offset.checked_add(len).is_none_or(|end| end > total) {
            return false;
        }
        let end = offset + len;
        for (at, piece) in self.pieces_mut() {
            let from = offset.max(at);
            let to = end.min(at + piece.len());
            if from < to {
                copy(&mut piece[from - at..to - at], from - offset);
            }
        }
        true
    }

    /// The metadata area.
    pub fn meta(&self) -> &[u8] {
        &self.buf[self.data_meta..self.data]
    }

    /// Moves the bounds to `data_meta..data..data_end`, as an adjust helper whose checks passed
    /// does (`linerate_sem::helpers` holds those checks; the bounds stay inside the frame): where
    /// `data` moves, the metadata moves along with it; bytes `data_end` grows over are zeroed.
    pub fn set_bounds(&mut self, data_meta: usize, data: usize, data_end: usize) {
        let meta_len = self.data - self.data_meta;
        if data != self.data && meta_len > 0 {
            self.buf
                .copy_within(self.data_meta..self.data, data - meta_len);
        }
        if data_end > self.data_end {
            self.buf[self.data_end..data_end].fill(0);
        }
        self.data_meta = data_meta;
        self.data = data;
        self.data_end = data_end;
        self.note_bounds();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refilling_clears_what_the_last_packet_left() {
        let mut p = PacketBuffer::new(&[7; 60], &[1, 2, 3, 4]).unwrap();
        // adjust_head(-20), then adjust_tail(40)
        let (meta, data, end) = (p.data_meta, p.data, p.data_end);
        p.set_bounds(meta - 20, data - 20, end);
        p.set_bounds(meta - 20, data - 20, end + 40);
        p.refill(&[9; 14], &[]).unwrap();
        assert_eq!(p.buf, PacketBuffer::new(&[9; 14], &[]).unwrap().buf);
    }

    #[test]
    fn long_packets_fill_page_fragments_after_the_linear_part() {
        use layout::*;
        let packet: Vec<u8> = (0..MAX_DATA + FRAG_SIZE + 10).map(|i| i as u8).collect();
        let mut p = PacketBuffer::new(&packet, &[]).unwrap();
        assert_eq!(p.packet(), &packet[..MAX_DATA]);
        assert_eq!((p.frags_len(), p.last_frag_len()), (FRAG_SIZE + 10, 10));
        assert_eq!(p.whole_packet(), packet);

        // Across the end of the linear part and from one fragment into the next.
        for at in [MAX_DATA - 3, MAX_DATA + FRAG_SIZE - 3] {
            let mut out = [0u8; 6];
            assert!(p.read_at(at, &mut out));
            assert_eq!(out[..], packet[at..at + 6]);
            assert!(p.write_at(at, &[0xee; 6]));
        }
        let mut out = [0u8; 2];
        assert!(!p.read_at(packet.len() - 1, &mut out));
        assert!(!p.write_at(usize::MAX, &[1]));

        // Shrinking drops the emptied fragment; growing zero-fills the last one.
        p.set_frags_len(FRAG_SIZE - 1);
        assert_eq!(
            (p.frags_len(), p.last_frag_len()),
            (FRAG_SIZE - 1, FRAG_SIZE - 1)
        );
        p.set_frags_len(FRAG_SIZE);
        let whole = p.whole_packet();
        assert_eq!(whole.len(), MAX_DATA + FRAG_SIZE);
        let kept = packet[MAX_DATA + FRAG_SIZE - 4];
        assert_eq!(&whole[whole.len() - 4..], &[kept, 0xee, 0xee, 0]);
        p.set_frags_len(0);
        assert_eq!(p.whole_packet().len(), MAX_DATA);

        let too_long = vec![0u8; MAX_PACKET + 1];
        assert!(matches!(
            PacketBuffer::new(&too_long, &[]),
            Err(PacketError::TooLarge { .. })
        ));
    }
}
