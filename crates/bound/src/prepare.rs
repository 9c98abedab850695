//! Building the [`crate::dag::PathDag`] of a program (paper 000 §5.2).
