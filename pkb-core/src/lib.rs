//! PKB core: the notes domain, the durable store, and every MCP tool, resource and prompt.
//!
//! Each tool, resource and prompt is one annotated `async fn`; see [`pkb_tool`],
//! [`pkb_resource`] and [`pkb_prompt`]. [`Registry::collect`] gathers every declaration of
//! every linked crate. The framework's guide follows; its Rust examples are compiled as doctests.
#![doc = include_str!("../../docs/framework.md")]

// Lets this crate use its own macros, whose expansions name `::pkb_core`.
extern crate self as pkb_core;

pub mod auth;
pub mod fold;
pub mod framework;
mod locks;
pub mod note;
pub mod store;

pub use framework::app::{App, ResourcePage, Stateless};
pub use framework::args::{ArgRules, ArgSpec, InvalidArguments};
pub use framework::context::{AppState, ClientRequestError, Context, Session};
pub use framework::prompt::{PromptDef, PromptError};
pub use framework::registry::{Completion, CompletionTarget, MAX_COMPLETIONS, Registry};
pub use framework::resource::{ResourceBody, ResourceDef, ResourceError};
pub use framework::server::McpServer;
pub use framework::tool::{Annotations, Contents, ToolDef, ToolError, ToolOutput};
pub use pkb_macros::{pkb_prompt, pkb_resource, pkb_tool};

#[doc(hidden)]
/// Not public API. Used by generated code.
pub mod __private {
    pub use crate::framework::args::{
        ArgRules, ArgSpec, arg_accepts, arg_schema, default_json, from_validated, validate_args,
    };
    pub use crate::framework::checks::*;
    pub use crate::framework::context::Context;
    pub use crate::framework::prompt::{PromptDef, PromptError, PromptReturn, prompt_invalid};
    pub use crate::framework::registry::{
        CompletionDef, PromptRegistration, ResourceRegistration, ToolRegistration,
    };
    pub use crate::framework::resource::{
        ResourceBody, ResourceDef, ResourceError, ResourceReturn, take_variable,
    };
    pub use crate::framework::tool::{
        Annotations, ToolDef, ToolReply, ToolReturn, output_schema_of, tool_invalid, tool_reply,
    };
    pub use futures::future::BoxFuture;
    pub use inventory;
    pub use rmcp::model::{CallToolResult, JsonObject, PromptMessage};
    pub use serde_json::Value;
}

pub mod notes_app;
pub mod prompts;
pub mod resources;
pub mod summary;
pub mod tools;
pub mod transport;
pub mod vault;

pub use notes_app::{NotesApp, NotesContext};
