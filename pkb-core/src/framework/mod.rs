//! The declarative framework behind `#[pkb_tool]`, `#[pkb_resource]` and `#[pkb_prompt]`:
//! what the generated code registers, validates with and answers through.

pub mod access;
pub mod activity;
pub mod app;
pub mod args;
pub mod changes;
pub mod checks;
pub mod client_link;
pub mod completion;
pub mod context;
pub mod declarations;
mod dispatch;
pub mod incoming;
pub mod input_rounds;
pub mod prompt;
pub mod registry;
pub mod resource;
pub mod schema;
mod schema_violations;
pub mod server;
pub mod state;
pub mod tool;
