//! Map contents in JSON, the shape of `--maps FILE.json` and of `linerate run --json`'s `maps`:
//! `{"map name": [{"key": "hex", "value": "hex"}, ...]}`, raw little-endian bytes as the map
//! stores them (program-array values are program indices). Reading checks every entry against the
//! object's maps and yields the one seed shape, [`MapSeed`].

use std::collections::BTreeMap;
use std::path::Path;

use linerate_bpf::contents::{MapContents, MapSeed, SeedEntry, SeedError};
use linerate_bpf::Object;
use serde::{Deserialize, Serialize};

use crate::error::{read_text, Error, FileKind, JsonError};
use crate::hex::{parse_hex, to_hex, HexError};

/// One map entry as the JSON contract spells it: raw key and value bytes in hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HexEntry {
    pub key: String,
    pub value: String,
}

/// Map contents by map name.
pub type MapsJson = BTreeMap<String, Vec<HexEntry>>;

/// Map contents that do not fit the object, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapsError {
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error(
        "no map named `{name}` in {object} (its maps: {})",
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )]
    UnknownMap {
        name: String,
        object: String,
        known: Vec<String>,
    },
    /// The key or value (`field`) of entry `entry` of map `map` is not hex.
    #[error("map `{map}` entry {entry}: {field}: {error}")]
    Hex {
        map: String,
        entry: usize,
        field: &'static str,
        error: HexError,
    },
    /// An entry does not fit its map (sizes, program index).
    #[error(transparent)]
    Entry(#[from] SeedError),
}

/// Reads map contents from JSON text and checks them against `object`.
pub fn parse_maps(text: &str, object: &Object) -> Result<MapSeed, MapsError> {
    let parsed: MapsJson = serde_json::from_str(text).map_err(JsonError::from)?;
    decode_maps(&parsed, object)
}

/// Checks map contents against the object: every map exists, every key and value is hex of the
/// map's sizes ([`SeedEntry::check`]). Maps are taken in name order, entries in file order.
pub fn decode_maps(maps: &MapsJson, object: &Object) -> Result<MapSeed, MapsError> {
    let mut seed = MapSeed::new();
    for (name, entries) in maps {
        let Some(index) = object.map_index(name) else {
            return Err(MapsError::UnknownMap {
                name: name.clone(),
                object: object.name.clone(),
                known: object.maps.iter().map(|m| m.name.clone()).collect(),
            });
        };
        let def = &object.maps[index];
        for (entry, hex) in entries.iter().enumerate() {
            let field = |field: &'static str, text: &str| {
                parse_hex(text).map_err(|error| MapsError::Hex {
                    map: name.clone(),
                    entry,
                    field,
                    error,
                })
            };
            let decoded = SeedEntry {
                map: index,
                entry,
                key: field("key", &hex.key)?,
                value: field("value", &hex.value)?,
            };
            decoded.check(def, object.programs.len())?;
            seed.push(index, decoded.key, decoded.value);
        }
    }
    Ok(seed)
}

/// Map contents (every map's entries, in the object's map order) in the JSON contract's shape.
pub fn encode_maps(object: &Object, contents: &MapContents) -> MapsJson {
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

/// Reads a maps file and checks it against `object`.
pub fn read_maps_file(path: &Path, object: &Object) -> Result<MapSeed, Error> {
    let text = read_text(path, FileKind::Maps)?;
    parse_maps(&text, object).map_err(|error| Error::Maps {
        path: path.to_path_buf(),
        error,
    })
}
