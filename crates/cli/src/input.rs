//! Reading what users hand the command line: packets in hex, pcap captures, map contents and FIB
//! tables in JSON. Every error names the file (or argument) and the place inside it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use linerate_bpf::Object;
use linerate_vm::FibRoute;
use serde::{Deserialize, Serialize};

/// One map entry as the JSON contract spells it: raw key and value bytes in hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HexEntry {
    pub key: String,
    pub value: String,
}

/// Map contents by map name, the shape of `--maps FILE.json` and of `run --json`'s `maps`.
pub type MapsJson = BTreeMap<String, Vec<HexEntry>>;

/// Decoded map contents: map index and its `(key, value)` pairs.
pub type MapSeed = Vec<(usize, Vec<(Vec<u8>, Vec<u8>)>)>;

/// Parses a hex string, allowing spaces, colons and a `0x` prefix.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits: String = text
        .trim()
        .trim_start_matches("0x")
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .collect();
    if digits.len() % 2 == 1 {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("`{}` at character {} is not hex", &digits[i..i + 2], i))
        })
        .collect()
}

/// Lower-case hex of bytes.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a file of packets: one packet in hex per line; blank lines and `#` comments skipped.
pub fn read_packets_file(path: &Path) -> Result<Vec<Vec<u8>>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read packets file {}", path.display()))?;
    let mut packets = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let packet = parse_hex(line)
            .map_err(|e| anyhow!("packets file {} line {}: {e}", path.display(), i + 1))?;
        packets.push(packet);
    }
    if packets.is_empty() {
        bail!("packets file {} holds no packets", path.display());
    }
    Ok(packets)
}

/// Reads a `--maps` file and checks it against the object's maps.
pub fn read_maps_file(path: &Path, object: &Object) -> Result<MapSeed> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read maps file {}", path.display()))?;
    let parsed: MapsJson = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "maps file {}: invalid JSON at line {} column {}: {}",
            path.display(),
            e.line(),
            e.column(),
            json_cause(&e)
        )
    })?;
    decode_maps(&parsed, object).map_err(|e| anyhow!("maps file {}: {e}", path.display()))
}

/// A JSON error's message without serde_json's trailing " at line L column C" (the caller already
/// names the place).
fn json_cause(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}

/// Checks map contents against the object: names exist and sizes match.
pub fn decode_maps(maps: &MapsJson, object: &Object) -> Result<MapSeed> {
    let mut seed = Vec::new();
    for (name, entries) in maps {
        let Some(index) = object.map_index(name) else {
            let known: Vec<&str> = object.maps.iter().map(|m| m.name.as_str()).collect();
            bail!(
                "no map named `{name}` in {} (its maps: {})",
                object.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        };
        let def = &object.maps[index];
        let mut decoded = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            let key =
                parse_hex(&entry.key).map_err(|e| anyhow!("map `{name}` entry {i}: key: {e}"))?;
            let value = parse_hex(&entry.value)
                .map_err(|e| anyhow!("map `{name}` entry {i}: value: {e}"))?;
            if key.len() != def.key_size as usize {
                bail!(
                    "map `{name}` entry {i}: key has {} bytes, the map's keys have {}",
                    key.len(),
                    def.key_size
                );
            }
            if value.len() != def.value_size as usize {
                bail!(
                    "map `{name}` entry {i}: value has {} bytes, the map's values have {}",
                    value.len(),
                    def.value_size
                );
            }
            decoded.push((key, value));
        }
        seed.push((index, decoded));
    }
    Ok(seed)
}

/// Map contents in the JSON contract's shape.
pub fn encode_maps(object: &Object, contents: &[Vec<(Vec<u8>, Vec<u8>)>]) -> MapsJson {
    object
        .maps
        .iter()
        .zip(contents)
        .map(|(def, entries)| {
            let entries = entries
                .iter()
                .map(|(k, v)| HexEntry {
                    key: to_hex(k),
                    value: to_hex(v),
                })
                .collect();
            (def.name.clone(), entries)
        })
        .collect()
}

/// A route in a `--fib` file: `{"prefix": "10.0.0.0/8", "ifindex": 2, "smac": "..", "dmac": ".."}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FibJson {
    prefix: String,
    ifindex: u32,
    smac: String,
    dmac: String,
}

/// Reads a `--fib` file of routes for `bpf_fib_lookup`.
pub fn read_fib_file(path: &Path) -> Result<Vec<FibRoute>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read FIB file {}", path.display()))?;
    let routes: Vec<FibJson> = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "FIB file {}: invalid JSON at line {} column {}: {}",
            path.display(),
            e.line(),
            e.column(),
            json_cause(&e)
        )
    })?;
    routes
        .iter()
        .enumerate()
        .map(|(i, r)| {
            fib_route(r).map_err(|e| anyhow!("FIB file {} route {i}: {e}", path.display()))
        })
        .collect()
}

fn fib_route(r: &FibJson) -> Result<FibRoute, String> {
    let (addr, len) = r
        .prefix
        .split_once('/')
        .ok_or_else(|| format!("prefix `{}` lacks /length", r.prefix))?;
    let ip: std::net::IpAddr = addr
        .parse()
        .map_err(|_| format!("`{addr}` is not an IP address"))?;
    let prefix_len: u8 = len
        .parse()
        .map_err(|_| format!("`{len}` is not a prefix length"))?;
    let mut prefix = [0u8; 16];
    let ipv6 = match ip {
        std::net::IpAddr::V4(v4) => {
            prefix[..4].copy_from_slice(&v4.octets());
            false
        }
        std::net::IpAddr::V6(v6) => {
            prefix.copy_from_slice(&v6.octets());
            true
        }
    };
    if prefix_len > if ipv6 { 128 } else { 32 } {
        return Err(format!("prefix length {prefix_len} too long"));
    }
    let mac = |s: &str| -> Result<[u8; 6], String> {
        parse_hex(s)?
            .try_into()
            .map_err(|_| format!("MAC `{s}` is not 6 bytes"))
    };
    Ok(FibRoute {
        ipv6,
        prefix,
        prefix_len,
        ifindex: r.ifindex,
        smac: mac(&r.smac)?,
        dmac: mac(&r.dmac)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_accepts_separators_and_rejects_garbage() {
        assert_eq!(parse_hex("0x0a 0B:ff").unwrap(), vec![0x0a, 0x0b, 0xff]);
        assert_eq!(
            parse_hex("abc").unwrap_err(),
            "odd number of hex digits (3)"
        );
        assert_eq!(
            parse_hex("zz").unwrap_err(),
            "`zz` at character 0 is not hex"
        );
    }
}
