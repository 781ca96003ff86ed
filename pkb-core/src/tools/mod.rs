//! The seven tools of the contract, one annotated fn each.

pub mod delete;
pub mod echo;
pub mod fetch;
pub mod search;
pub mod summarize;
pub mod write;
