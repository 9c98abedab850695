//! Conformance of linerate's engines to the kernel.
//!
//! linerate's chain of trust is kernel == interpreter == formula. This crate holds what checks
//! it: the example corpus and the training corpus with their crafted inputs ([`examples`]), the
//! checks of one of their objects against the kernel ([`differential`]), a generator of random
//! programs the verifier accepts ([`random_program`]), objects of arbitrary decodable programs built from
//! bytes for fuzzing everything that reads a program ([`decodable`]), the bulk inputs of the
//! flow-table example ([`flows`]) and, in `tests/`,
//! the differential tests — every example and thousands of random programs run in the interpreter
//! and in this host's kernel with identical results, and the expression-tree instantiation of the
//! semantics evaluated against the interpreter. It is a test crate; nothing ships from it.

pub mod decodable;
pub mod differential;
pub mod examples;
pub mod flows;
pub mod random_program;
