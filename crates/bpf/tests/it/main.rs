//! The integration tests of `bpf`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod asm_llvm;
mod asm_objdump;
mod asm_roundtrip;
mod btf_ext;
mod core_relo;
mod elf_file;
mod emit;
mod fuzz_regressions;
mod map_in_map;
mod objdump_releases;
mod object_fuzz;
mod object_read;
mod rewrite;
