//! Paths of a [`crate::dag::PathDag`] in order of throughput (paper 000 §5.1, §5.3, §5.4).
