//! Map contents in JSON, the shape of `--maps FILE.json` and of `linerate run --json`'s `maps`,
//! defined here once (see [`HexEntry`]). Reading checks every entry against the object's maps and
//! yields the one seed shape, [`MapSeed`].

use std::collections::BTreeMap;
use std::path::Path;

use linerate_bpf::contents::{MapContents, MapSeed, SeedEntry, SeedError};
use linerate_bpf::{MapDef, Object};
use serde::{Deserialize, Serialize};

use crate::error::{read_text, Error, FileKind, JsonError};
use crate::hex::{parse_hex, to_hex, HexError};

/// One map entry as the JSON contract spells it.
///
/// Map contents are an object from map name to a list of entries, each with the raw key in hex
/// and either
///
/// * `"value"`: the raw value bytes in hex, little-endian as the map stores them (a program
///   array's value is the index of a program of the object), or
/// * `"inner"`: for a map of maps (`array_of_maps`, `hash_of_maps`), the name of the inner map
///   of the object that sits at the key.
///
/// Inner maps are listed under their own names with their entries like any map:
///
/// ```json
/// {"vip_pools": [{"key": "01000000", "inner": "pool_web"}],
///  "pool_web":  [{"key": "00000000", "value": "c0000202"}]}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HexEntry {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner: Option<String>,
}

/// Map contents by map name (see [`HexEntry`] for the shape).
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
    /// Entry `entry` of map `map` gives `value` where the map needs `inner` or the reverse, or
    /// names an inner map the object does not have.
    #[error("map `{map}` entry {entry}: {reason}")]
    Shape {
        map: String,
        entry: usize,
        reason: String,
    },
    /// An entry does not fit its map (sizes, program index, inner map).
    #[error(transparent)]
    Entry(#[from] SeedError),
}

/// Reads map contents from JSON text and checks them against `object`.
pub fn parse_maps(text: &str, object: &Object) -> Result<MapSeed, MapsError> {
    let parsed: MapsJson = serde_json::from_str(text).map_err(JsonError::from)?;
    decode_maps(&parsed, object)
}

/// Checks map contents against the object: every map exists, every key and value is hex of the
/// map's sizes ([`SeedEntry::check`]), every inner map fits its outer map ([`MapSeed::check`]).
/// Maps are taken in name order, entries in file order.
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
            let value = match entry_value(object, def, entry, hex)? {
                Given::Hex(text) => field("value", text)?,
                Given::Map(inner) => (inner as u32).to_le_bytes().to_vec(),
            };
            let decoded = SeedEntry {
                map: index,
                entry,
                key: field("key", &hex.key)?,
                value,
            };
            decoded.check(def, object.programs.len())?;
            seed.push(index, decoded.key, decoded.value);
        }
    }
    // Inner maps are checked against their outer map's template as the engines check them.
    seed.check(object.maps.len(), object.programs.len(), |i| {
        object.maps.get(i)
    })?;
    Ok(seed)
}

/// What an entry gives for its value.
enum Given<'a> {
    /// Hex bytes.
    Hex(&'a str),
    /// The index of an inner map in the object's maps.
    Map(usize),
}

/// The value entry `entry` of map `def` gives: `"value"` for ordinary maps, `"inner"` naming a
/// map of the object for maps of maps.
fn entry_value<'a>(
    object: &Object,
    def: &MapDef,
    entry: usize,
    hex: &'a HexEntry,
) -> Result<Given<'a>, MapsError> {
    let refuse = |reason: String| MapsError::Shape {
        map: def.name.clone(),
        entry,
        reason,
    };
    match (&hex.value, &hex.inner, def.map_type.is_map_in_map()) {
        (None, Some(name), true) => match object.map_index(name) {
            Some(inner) => Ok(Given::Map(inner)),
            None => {
                let fitting: Vec<&str> = object
                    .maps
                    .iter()
                    .filter(|m| def.inner.as_ref().is_some_and(|t| t.mismatch(m).is_none()))
                    .map(|m| m.name.as_str())
                    .collect();
                Err(refuse(format!(
                    "`inner` names no map `{name}` of {} (maps that fit: {})",
                    object.name,
                    if fitting.is_empty() {
                        "none".to_string()
                    } else {
                        fitting.join(", ")
                    }
                )))
            }
        },
        (Some(text), None, false) => Ok(Given::Hex(text)),
        (_, _, true) => Err(refuse(format!(
            "a map of maps ({}) names the inner map at a key as \"inner\", without \"value\"",
            def.map_type.name()
        ))),
        (_, _, false) => Err(refuse(
            "needs a hex \"value\" (\"inner\" is for maps of maps only)".into(),
        )),
    }
}

/// Map contents (every map's entries, in the object's map order) in the JSON contract's shape:
/// a map of maps' values become `inner` names where they name a map of the object.
pub fn encode_maps(object: &Object, contents: &MapContents) -> MapsJson {
    object
        .maps
        .iter()
        .zip(contents)
        .map(|(def, entries)| {
            let entries = entries
                .iter()
                .map(|(k, v)| {
                    let inner = inner_map_name(object, def, v);
                    HexEntry {
                        key: to_hex(k),
                        value: inner.is_none().then(|| to_hex(v)),
                        inner: inner.map(str::to_string),
                    }
                })
                .collect();
            (def.name.clone(), entries)
        })
        .collect()
}

/// The name of the inner map a value of map of maps `def` names (its index in the object's maps),
/// or `None` where `def` is not a map of maps or the value names no map of the object.
pub fn inner_map_name<'a>(object: &'a Object, def: &MapDef, value: &[u8]) -> Option<&'a str> {
    let index = <[u8; 4]>::try_from(value).ok()?;
    if !def.map_type.is_map_in_map() {
        return None;
    }
    let inner = object.maps.get(u32::from_le_bytes(index) as usize)?;
    Some(&inner.name)
}

/// Reads a maps file and checks it against `object`.
pub fn read_maps_file(path: &Path, object: &Object) -> Result<MapSeed, Error> {
    let text = read_text(path, FileKind::Maps)?;
    parse_maps(&text, object).map_err(|error| Error::Maps {
        path: path.to_path_buf(),
        error,
    })
}
