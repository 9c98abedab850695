//! Records a run sends to user space through ring buffers (`bpf_ringbuf_output`, reserve and
//! submit) and perf event arrays (`bpf_perf_event_output`): output of a run, like its action and
//! packet, the same for every engine.
//!
//! A run's records are listed per map, in `Object::maps` order, each map's records in the order
//! a reader of that map receives them; maps that received none are left out. The engines agree
//! on this form: the interpreter appends as helpers run, the kernel runner reads the rings after
//! each run. The bytes of a record are what the reader gets: for a ring buffer the `size` bytes
//! the program wrote, for a perf event array the sample's raw data including the zero padding
//! the kernel adds ([`crate::facts::perf::RAW_ALIGN`]).

/// The records one map received, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapRecords {
    /// Index of the map in `Object::maps`.
    pub map: usize,
    pub records: Vec<Vec<u8>>,
}

/// A run's records, per map in map order; maps without records left out.
pub type Records = Vec<MapRecords>;

/// Appends `record` to map `map`'s records, keeping `records` in map order.
pub fn push_record(records: &mut Records, map: usize, record: Vec<u8>) {
    match records.binary_search_by_key(&map, |r| r.map) {
        Ok(i) => records[i].records.push(record),
        Err(i) => records.insert(
            i,
            MapRecords {
                map,
                records: vec![record],
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_stay_in_map_order_and_arrival_order() {
        let mut r = Records::new();
        push_record(&mut r, 3, vec![1]);
        push_record(&mut r, 1, vec![2]);
        push_record(&mut r, 3, vec![3]);
        assert_eq!(
            r,
            vec![
                MapRecords {
                    map: 1,
                    records: vec![vec![2]]
                },
                MapRecords {
                    map: 3,
                    records: vec![vec![1], vec![3]]
                },
            ]
        );
    }
}
