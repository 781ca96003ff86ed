//! The ten tools of the contract, one annotated fn each.

pub mod delete;
pub mod echo;
pub mod edit;
pub mod fetch;
pub mod history;
pub mod restore;
pub mod search;
pub mod summarize;
pub mod write;
