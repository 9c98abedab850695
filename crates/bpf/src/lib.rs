//! The BPF program model of linerate.
//!
//! This crate turns what users have — clang-compiled BPF ELF objects and `llvm-objdump -d` text —
//! into one representation every other linerate crate works on: decoded [`insn::Instruction`]s,
//! linked [`program::Program`]s and their [`program::MapDef`]s, and the contents a user gives
//! those maps ([`contents`]). It also prints programs in the llvm-objdump style and assembles
//! that text back, and builds them by hand ([`insn::build`], [`Program::from_instructions`],
//! [`Object::single`], [`MapDef::new`]) for tests and generators. It does not give instructions a
//! meaning (that is `linerate-sem`) and never talks to the kernel (that is `linerate-kernel`).

pub mod asm;
pub mod btf;
pub mod btf_ext;
pub mod contents;
pub mod core_relo;
pub mod disasm;
pub mod elf_file;
pub mod emit;
pub mod facts;
pub mod helpers;
pub mod insn;
pub mod kconfig;
pub mod objdump;
pub mod object;
pub mod program;
pub mod program_kind;
pub mod records;
pub mod rewrite;

pub use insn::{Instruction, RawInsn};
pub use object::{read_object, read_object_file, read_object_with, ObjectError, ReadOptions};
pub use program::{Kfunc, MapDef, MapType, Object, Program};
pub use program_kind::{NotXdp, ProgramKind};
