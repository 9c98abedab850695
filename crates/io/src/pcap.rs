//! Classic libpcap capture files: the packets they hold, and captures of packets to write.
//!
//! Both byte orders and both timestamp resolutions are read; pcapng is recognised and refused
//! with a message saying how to convert it. Only Ethernet (link type 1) captures are accepted,
//! since XDP programs see Ethernet frames.

use std::path::Path;

use crate::error::{read, Error, FileKind};

const MAGIC_MICRO: u32 = 0xa1b2_c3d4;
const MAGIC_NANO: u32 = 0xa1b2_3c4d;
const PCAPNG_MAGIC: u32 = 0x0a0d_0d0a;
const LINKTYPE_ETHERNET: u32 = 1;
const GLOBAL_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;
/// Snapshot length written into captures: the largest packet libpcap readers accept by default.
const SNAPLEN: u32 = 262_144;

/// Bytes that are not a capture linerate reads, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PcapError {
    #[error("truncated: {len} bytes, a pcap header has {GLOBAL_HEADER}")]
    Truncated { len: usize },
    #[error("pcapng is not supported; convert with `editcap -F pcap in.pcapng out.pcap`")]
    Pcapng,
    #[error("not a pcap file (magic {magic:#010x} at offset 0)")]
    BadMagic { magic: u32 },
    #[error("link type {link_type} at offset 20 is not Ethernet (1)")]
    LinkType { link_type: u32 },
    #[error("packet {packet} header truncated at offset {offset}")]
    RecordHeader { packet: usize, offset: usize },
    #[error(
        "packet {packet} at offset {offset} claims {captured} bytes but the file ends at {len}"
    )]
    RecordData {
        packet: usize,
        offset: usize,
        captured: usize,
        len: usize,
    },
}

/// The packets of a capture held in memory, in order.
pub fn parse_pcap(bytes: &[u8]) -> Result<Vec<Vec<u8>>, PcapError> {
    let word_at = |at: usize, little: bool| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let truncated = PcapError::Truncated { len: bytes.len() };
    if bytes.len() < GLOBAL_HEADER {
        return Err(truncated);
    }
    let little = match word_at(0, true).ok_or(truncated.clone())? {
        MAGIC_MICRO | MAGIC_NANO => true,
        m if m.swap_bytes() == MAGIC_MICRO || m.swap_bytes() == MAGIC_NANO => false,
        PCAPNG_MAGIC => return Err(PcapError::Pcapng),
        magic => return Err(PcapError::BadMagic { magic }),
    };
    let word = |at: usize| word_at(at, little);
    let link_type = word(20).ok_or(truncated)?;
    if link_type != LINKTYPE_ETHERNET {
        return Err(PcapError::LinkType { link_type });
    }
    let mut packets = Vec::new();
    let mut at = GLOBAL_HEADER;
    while at < bytes.len() {
        let header = PcapError::RecordHeader {
            packet: packets.len(),
            offset: at,
        };
        if bytes.len() - at < RECORD_HEADER {
            return Err(header);
        }
        let captured = word(at + 8).ok_or(header)? as usize;
        let start = at + RECORD_HEADER;
        let Some(end) = start.checked_add(captured).filter(|e| *e <= bytes.len()) else {
            return Err(PcapError::RecordData {
                packet: packets.len(),
                offset: at,
                captured,
                len: bytes.len(),
            });
        };
        packets.push(bytes[start..end].to_vec());
        at = end;
    }
    Ok(packets)
}

/// A little-endian, microsecond capture of `packets` (link type Ethernet, timestamps 0, 1, 2 ...
/// seconds), which tcpreplay, TRex, MoonGen and Wireshark read.
pub fn encode_pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for word in [MAGIC_MICRO, 0x0004_0002, 0, 0, SNAPLEN, LINKTYPE_ETHERNET] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    for (i, packet) in packets.iter().enumerate() {
        let len = u32::try_from(packet.len()).unwrap_or(u32::MAX);
        let seconds = u32::try_from(i).unwrap_or(u32::MAX);
        for word in [seconds, 0, len, len] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(&packet[..len as usize]);
    }
    bytes
}

/// Reads every packet of a pcap file.
pub fn read_pcap(path: &Path) -> Result<Vec<Vec<u8>>, Error> {
    let bytes = read(path, FileKind::Pcap)?;
    parse_pcap(&bytes).map_err(|error| Error::Pcap {
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips_and_rejects_truncation() {
        let packets = vec![vec![1u8; 60], vec![2u8; 14]];
        let bytes = encode_pcap(&packets);
        assert_eq!(parse_pcap(&bytes).unwrap(), packets);
        assert_eq!(
            parse_pcap(&bytes[..bytes.len() - 1])
                .unwrap_err()
                .to_string(),
            "packet 1 at offset 100 claims 14 bytes but the file ends at 129"
        );
        assert_eq!(
            parse_pcap(&bytes[..110]).unwrap_err().to_string(),
            "packet 1 header truncated at offset 100"
        );
        let dir = std::env::temp_dir().join(format!("linerate-io-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.pcap");
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let err = read_pcap(&path).unwrap_err().to_string();
        assert!(err.starts_with("pcap file "), "{err}");
        assert!(err
            .ends_with("x.pcap: packet 1 at offset 100 claims 14 bytes but the file ends at 129"));
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read_pcap(&path).unwrap(), packets);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(parse_pcap(&[0; 30])
            .unwrap_err()
            .to_string()
            .contains("not a pcap file"));
        let mut big_endian = bytes[..GLOBAL_HEADER].to_vec();
        for w in big_endian.chunks_mut(4) {
            w.reverse();
        }
        assert_eq!(parse_pcap(&big_endian).unwrap(), Vec::<Vec<u8>>::new());
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_pcap(&bytes);
            let mut with_header = encode_pcap(&[]);
            with_header.extend_from_slice(&bytes);
            let _ = parse_pcap(&with_header);
        }

        #[test]
        fn round_trips(packets in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..100), 0..8)
        ) {
            prop_assert_eq!(parse_pcap(&encode_pcap(&packets)).unwrap(), packets);
        }
    }
}
