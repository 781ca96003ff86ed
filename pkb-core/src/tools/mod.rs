//! The six tools of the contract, one annotated fn each.

pub mod echo;
pub mod fetch;
pub mod search;
pub mod summarize;
pub mod write;
