//! Shared by the benchmarks: the generated notes and query mix both of them measure.

pub mod corpus;
