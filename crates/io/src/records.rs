//! Records a run sent to ring buffers and perf event arrays, in JSON: the shape of
//! `linerate run --json`'s `records`, per packet: `[{"map": "events", "records": ["hex", ...]}]`,
//! maps in object order, each map's records in the order its reader received them, each record
//! the bytes the reader got ([`linerate_bpf::records`]). Maps without records are left out.

use linerate_bpf::records::Records;
use linerate_bpf::Object;
use serde::{Deserialize, Serialize};

use crate::hex::to_hex;

/// One map's records as the JSON contract spells them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordsJson {
    /// The map's name.
    pub map: String,
    /// The records, in order, in hex.
    pub records: Vec<String>,
}

/// A run's records in their JSON shape.
pub fn encode_records(object: &Object, records: &Records) -> Vec<RecordsJson> {
    records
        .iter()
        .map(|r| RecordsJson {
            map: object
                .maps
                .get(r.map)
                .map_or_else(|| format!("map{}", r.map), |m| m.name.clone()),
            records: r.records.iter().map(|b| to_hex(b)).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::records::MapRecords;
    use linerate_bpf::{MapDef, MapType};

    #[test]
    fn records_are_named_by_map_in_hex() {
        let mut object = Object::default();
        object
            .maps
            .push(MapDef::new("events", MapType::RINGBUF, 0, 0, 4096));
        let records = vec![MapRecords {
            map: 0,
            records: vec![vec![1, 0xab], vec![]],
        }];
        let json = serde_json::to_value(encode_records(&object, &records)).unwrap();
        assert_eq!(
            json,
            serde_json::json!([{"map": "events", "records": ["01ab", ""]}])
        );
    }
}
