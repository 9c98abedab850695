//! `linerate p4`: P4-16 programs (paper 001).

pub mod latency;
