//! Reading and writing the files users hand linerate and take from it: BPF objects (ELF, or
//! `llvm-objdump -d` text, told apart by their bytes), packets in hex (one per line, `#`
//! comments), classic pcap captures, map contents in JSON (`{"map": [{"key": "hex", "value":
//! "hex"}]}`, checked against the object's maps), FIB tables in JSON for `bpf_fib_lookup`, the
//! records a run sent to ring buffers and perf event arrays in JSON ([`records`]), and files
//! written atomically.
//!
//! Every parser has a text-level form that takes the contents ([`hex::parse_hex`],
//! [`packets::parse_packets`], [`pcap::parse_pcap`], [`maps::parse_maps`], [`fib::parse_fib`],
//! [`object::parse_object`]) and a file-level form that reads a path; file-level errors are
//! [`Error`]s naming the file and the place inside it (line, column, map entry, route, byte
//! offset). Nothing here runs a program, seeds a map or prints a report: map seeds come out as
//! [`linerate_bpf::contents::MapSeed`] for `linerate-vm` and `linerate-kernel` to write, and
//! formatting results is the command line's job.

mod error;
pub mod fib;
pub mod hex;
pub mod maps;
pub mod object;
pub mod packets;
pub mod pcap;
pub mod records;
mod write;

pub use error::{Error, FileKind, JsonError};
pub use fib::{encode_fib, read_fib_file};
pub use hex::{parse_hex, to_hex, HexError};
pub use maps::{decode_maps, encode_maps, inner_map_name, read_maps_file, HexEntry, MapsJson};
pub use object::{load_object, load_object_with, parse_object_with};
pub use packets::read_packets_file;
pub use pcap::read_pcap;
pub use records::{encode_records, RecordsJson};
pub use write::write_atomically;
