//! Classic libpcap capture files: reading the packets to run.
//!
//! Both byte orders and both timestamp resolutions are read; pcapng is recognised and refused
//! with a message saying how to convert it. Only Ethernet (link type 1) captures are accepted,
//! since XDP programs see Ethernet frames.

use std::path::Path;

use anyhow::{bail, Context, Result};

const MAGIC_MICRO: u32 = 0xa1b2_c3d4;
const MAGIC_NANO: u32 = 0xa1b2_3c4d;
const PCAPNG_MAGIC: u32 = 0x0a0d_0d0a;
const LINKTYPE_ETHERNET: u32 = 1;
const GLOBAL_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;

/// Reads every packet of a pcap file.
pub fn read_pcap(path: &Path) -> Result<Vec<Vec<u8>>> {
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read pcap file {}", path.display()))?;
    parse_pcap(&bytes).with_context(|| format!("pcap file {}", path.display()))
}

/// Parses a pcap capture held in memory.
pub fn parse_pcap(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    if bytes.len() < GLOBAL_HEADER {
        bail!(
            "truncated: {} bytes, a pcap header has {GLOBAL_HEADER}",
            bytes.len()
        );
    }
    let magic_le = u32::from_le_bytes(bytes[0..4].try_into()?);
    let little = match magic_le {
        MAGIC_MICRO | MAGIC_NANO => true,
        m if m.swap_bytes() == MAGIC_MICRO || m.swap_bytes() == MAGIC_NANO => false,
        PCAPNG_MAGIC => {
            bail!("pcapng is not supported; convert with `editcap -F pcap in.pcapng out.pcap`")
        }
        m => bail!("not a pcap file (magic {m:#010x} at offset 0)"),
    };
    let word = |at: usize| -> u32 {
        let b: [u8; 4] = bytes[at..at + 4].try_into().unwrap_or_default();
        if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let link_type = word(20);
    if link_type != LINKTYPE_ETHERNET {
        bail!("link type {link_type} at offset 20 is not Ethernet (1)");
    }
    let mut packets = Vec::new();
    let mut at = GLOBAL_HEADER;
    while at < bytes.len() {
        if at + RECORD_HEADER > bytes.len() {
            bail!("packet {} header truncated at offset {at}", packets.len());
        }
        let captured = word(at + 8) as usize;
        let start = at + RECORD_HEADER;
        let Some(end) = start.checked_add(captured).filter(|e| *e <= bytes.len()) else {
            bail!(
                "packet {} at offset {at} claims {captured} bytes but the file ends at {}",
                packets.len(),
                bytes.len()
            );
        };
        packets.push(bytes[start..end].to_vec());
        at = end;
    }
    Ok(packets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_truncation() {
        let dir = std::env::temp_dir().join(format!("linerate-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.pcap");
        let packets = vec![vec![1u8; 60], vec![2u8; 14]];
        let mut bytes = Vec::new();
        for word in [MAGIC_MICRO, 0x0004_0002, 0, 0, 65535, LINKTYPE_ETHERNET] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        for (i, packet) in packets.iter().enumerate() {
            let len = packet.len() as u32;
            for word in [i as u32, 0, len, len] {
                bytes.extend_from_slice(&word.to_le_bytes());
            }
            bytes.extend_from_slice(packet);
        }
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read_pcap(&path).unwrap(), packets);
        let err = parse_pcap(&bytes[..bytes.len() - 1])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("packet 1 at offset 100 claims 14 bytes"),
            "{err}"
        );
        assert!(parse_pcap(&[0; 30])
            .unwrap_err()
            .to_string()
            .contains("not a pcap file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
