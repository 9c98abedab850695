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
//! | [`MAP_VALUE_REGION`] + i   | the value slab of map `i` (see [`crate::maps`])             |
//! | [`MAP_HANDLE_REGION`] + i  | the handle of map `i`: passed to helpers, never dereferenced|
//!
//! The packet buffer reproduces the layout of the kernel's `BPF_PROG_TEST_RUN` for XDP so that
//! `bpf_xdp_adjust_head/meta/tail` succeed and fail exactly where the kernel's do.

/// Region of the `struct xdp_md` context.
pub const CTX_REGION: u64 = 1;
/// Region of the packet buffer.
pub const PACKET_REGION: u64 = 2;
/// Region of the stack.
pub const STACK_REGION: u64 = 3;
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

/// Layout of the test_run packet buffer (net/bpf/test_run.c, include/net/xdp.h).
pub mod layout {
    /// Bytes of one page, the size of the whole buffer (`frame_sz`).
    pub const FRAME_SIZE: usize = 4096;
    /// `XDP_PACKET_HEADROOM`: bytes before the packet data.
    pub const HEADROOM: usize = 256;
    /// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`: bytes reserved at the end of the buffer.
    pub const SHARED_INFO: usize = 320;
    /// `sizeof(struct xdp_frame)`: bytes at the start of the buffer the program may not reach.
    pub const XDP_FRAME: usize = 40;
    /// `ETH_HLEN`: the smallest packet `adjust_head`/`adjust_tail` leave.
    pub const ETH_HLEN: usize = 14;
    /// Largest metadata area: everything between the frame header and the data (this kernel has
    /// no separate cap; `xdp_metalen_invalid` only demands a multiple of 4).
    pub const MAX_META: usize = HEADROOM - XDP_FRAME;
    /// Largest packet a single buffer holds.
    pub const MAX_DATA: usize = FRAME_SIZE - HEADROOM - SHARED_INFO;
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
}

/// Packet buffer errors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error("packet of {len} bytes is larger than the {max} bytes an XDP buffer holds")]
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
        }
    }
}

impl PacketBuffer {
    /// A buffer without memory, to stand in while the real one is lent out.
    pub fn placeholder() -> PacketBuffer {
        PacketBuffer {
            buf: Vec::new(),
            data_meta: 0,
            data: 0,
            data_end: 0,
            touched: (0, 0),
        }
    }

    /// A buffer holding `meta` followed by `packet`, laid out as the kernel's test_run does: the
    /// metadata sits just before the data, which starts `HEADROOM` bytes into a zeroed frame.
    pub fn new(packet: &[u8], meta: &[u8]) -> Result<PacketBuffer, PacketError> {
        let mut buffer = PacketBuffer::default();
        buffer.refill(packet, meta)?;
        Ok(buffer)
    }

    /// Makes this buffer what [`PacketBuffer::new`] would return, reusing its memory.
    pub fn refill(&mut self, packet: &[u8], meta: &[u8]) -> Result<(), PacketError> {
        use layout::*;
        if packet.len() > MAX_DATA {
            return Err(PacketError::TooLarge {
                len: packet.len(),
                max: MAX_DATA,
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
        self.data_end = HEADROOM + packet.len();
        self.buf[self.data_meta..self.data].copy_from_slice(meta);
        self.buf[self.data..self.data_end].copy_from_slice(packet);
        self.touched = (self.data_meta, self.data_end);
        Ok(())
    }

    fn note_bounds(&mut self) {
        self.touched = (
            self.touched.0.min(self.data_meta),
            self.touched.1.max(self.data_end),
        );
    }

    /// The packet data.
    pub fn packet(&self) -> &[u8] {
        &self.buf[self.data..self.data_end]
    }

    /// The metadata area.
    pub fn meta(&self) -> &[u8] {
        &self.buf[self.data_meta..self.data]
    }

    /// `bpf_xdp_adjust_head`: moves the start of the data by `delta` (negative grows).
    pub fn adjust_head(&mut self, delta: i64) -> i64 {
        use layout::*;
        let meta_len = self.data - self.data_meta;
        let new_data = self.data as i64 + delta;
        if new_data < (XDP_FRAME + meta_len) as i64 || new_data > (self.data_end - ETH_HLEN) as i64
        {
            return -crate::maps::EINVAL;
        }
        let new_data = new_data as usize;
        if meta_len > 0 {
            self.buf
                .copy_within(self.data_meta..self.data, new_data - meta_len);
        }
        self.data_meta = new_data - meta_len;
        self.data = new_data;
        self.note_bounds();
        0
    }

    /// `bpf_xdp_adjust_meta`: moves the start of the metadata by `delta` (negative grows).
    pub fn adjust_meta(&mut self, delta: i64) -> i64 {
        use layout::*;
        let new_meta = self.data_meta as i64 + delta;
        if new_meta < XDP_FRAME as i64 || new_meta > self.data as i64 {
            return -crate::maps::EINVAL;
        }
        let len = self.data - new_meta as usize;
        if !len.is_multiple_of(4) {
            return -13; // EACCES
        }
        self.data_meta = new_meta as usize;
        self.note_bounds();
        0
    }

    /// `bpf_xdp_adjust_tail`: moves the end of the data by `delta`; grown bytes are zeroed.
    pub fn adjust_tail(&mut self, delta: i64) -> i64 {
        use layout::*;
        let new_end = self.data_end as i64 + delta;
        if new_end > (FRAME_SIZE - SHARED_INFO) as i64 || new_end < (self.data + ETH_HLEN) as i64 {
            return -crate::maps::EINVAL;
        }
        let new_end = new_end as usize;
        if new_end > self.data_end {
            self.buf[self.data_end..new_end].fill(0);
        }
        self.data_end = new_end;
        self.note_bounds();
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refilling_clears_what_the_last_packet_left() {
        let mut p = PacketBuffer::new(&[7; 60], &[1, 2, 3, 4]).unwrap();
        assert_eq!(p.adjust_head(-20), 0);
        assert_eq!(p.adjust_tail(40), 0);
        p.refill(&[9; 14], &[]).unwrap();
        assert_eq!(p.buf, PacketBuffer::new(&[9; 14], &[]).unwrap().buf);
    }

    #[test]
    fn head_can_grow_to_the_frame_header_and_shrink_to_an_ethernet_header() {
        let mut p = PacketBuffer::new(&[7; 60], &[]).unwrap();
        let max_grow = (layout::HEADROOM - layout::XDP_FRAME) as i64;
        assert_eq!(p.adjust_head(-max_grow - 1), -22);
        assert_eq!(p.adjust_head(-max_grow), 0);
        assert_eq!(p.packet().len(), 60 + max_grow as usize);
        assert_eq!(p.adjust_head(max_grow + 60 - 14 + 1), -22);
        assert_eq!(p.adjust_head(max_grow + 60 - 14), 0);
        assert_eq!(p.packet(), &[7; 14]);
    }

    #[test]
    fn meta_is_bounded_and_word_sized() {
        let mut p = PacketBuffer::new(&[0; 60], &[]).unwrap();
        assert_eq!(p.adjust_meta(-6), -13);
        assert_eq!(p.adjust_meta(-220), -22);
        assert_eq!(p.adjust_meta(-216), 0);
        assert_eq!(p.adjust_meta(208), 0);
        assert_eq!(p.meta(), &[0; 8]);
    }

    #[test]
    fn tail_grows_with_zeros_up_to_the_shared_info() {
        let mut p = PacketBuffer::new(&[1; 60], &[]).unwrap();
        assert_eq!(p.adjust_tail(-47), -22);
        assert_eq!(p.adjust_tail(4), 0);
        assert_eq!(&p.packet()[58..], &[1, 1, 0, 0, 0, 0]);
        let room = (layout::MAX_DATA - 64) as i64;
        assert_eq!(p.adjust_tail(room + 1), -22);
        assert_eq!(p.adjust_tail(room), 0);
    }
}
