//! The prompts of the contract.

pub mod quick_capture;
