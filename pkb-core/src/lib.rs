//! PKB core: a framework for MCP servers, and PKB's notes server built on it.
//!
//! Each tool, resource and prompt is one annotated `async fn`; see [`pkb_tool`],
//! [`pkb_resource`] and [`pkb_prompt`]. Cargo features cut the crate along its seams: without
//! default features it is the framework alone (declarations, schemas and validation, the MCP
//! server, stdio); `http` adds Streamable HTTP, `auth` bearer tokens and OAuth, `notes` PKB's
//! notes domain with its SQLite store, `postgres` the PostgreSQL store; `full`, the default,
//! is all of them. The framework's guide follows; its Rust examples are compiled as doctests.
#![doc = include_str!("../../docs/framework.md")]

// Lets this crate use its own macros, whose expansions name `::pkb_core`.
extern crate self as pkb_core;

#[cfg(feature = "auth")]
pub mod auth;
#[cfg(any(feature = "http", feature = "postgres", feature = "meaning"))]
mod crypto_provider;
#[cfg(feature = "notes")]
pub mod fold;
pub mod framework;
pub mod identity;
#[cfg(feature = "notes")]
pub mod links;
mod locks;
#[cfg(feature = "notes")]
pub mod meaning;
#[cfg(feature = "notes")]
pub mod note;
#[cfg(feature = "notes")]
pub mod note_edit;
#[cfg(feature = "notes")]
pub mod store;
pub mod text;
#[cfg(any(feature = "auth", feature = "notes"))]
mod timestamp;

pub use framework::access::{Access, Principal, ScopeNames, Scopes};
pub use framework::app::{App, ResourcePage, Stateless};
pub use framework::args::{ArgRules, ArgSpec, InvalidArguments};
pub use framework::completion::{Completion, CompletionTarget, MAX_COMPLETIONS};
pub use framework::context::{AppState, ClientRequestError, Context, Session};
pub use framework::declarations::{Declaration, Declarations, Declared, DeclaredWith, ServedWith};
pub use framework::prompt::{PromptDef, PromptError};
pub use framework::registry::{Catalog, Registry, RegistryError};
pub use framework::resource::{ResourceBody, ResourceDef, ResourceError};
pub use framework::server::McpServer;
pub use framework::state::StateType;
pub use framework::tool::{Annotations, Contents, ToolDef, ToolError, ToolOutput};
pub use identity::User;
pub use pkb_macros::{declarations, pkb_prompt, pkb_resource, pkb_tool};

#[doc(hidden)]
/// Not public API. Used by generated code.
pub mod __private {
    pub use crate::framework::args::{
        ArgRules, ArgSpec, arg_accepts, arg_schema, default_json, from_validated, validate_args,
    };
    pub use crate::framework::checks::*;
    pub use crate::framework::completion::CompletionDef;
    pub use crate::framework::context::Context;
    pub use crate::framework::declarations::{Declaration, Declared, DeclaredWith};
    pub use crate::framework::declarations::{
        PromptRegistration, ResourceRegistration, ToolRegistration,
    };
    pub use crate::framework::prompt::{PromptDef, PromptError, PromptReturn, prompt_invalid};
    pub use crate::framework::resource::{
        ResourceBody, ResourceDef, ResourceError, ResourceReturn, take_variable,
    };
    pub use crate::framework::state::{state_of, state_type};
    pub use crate::framework::tool::{
        Annotations, ToolDef, ToolReply, ToolReturn, output_schema_of, tool_invalid, tool_reply,
    };
    pub use futures::future::BoxFuture;
    pub use inventory;
    pub use rmcp::model::{CallToolResult, JsonObject, PromptMessage};
    pub use serde_json::Value;
}

#[cfg(feature = "notes")]
pub mod notes_app;
#[cfg(feature = "notes")]
pub mod prompts;
#[cfg(feature = "notes")]
pub mod resources;
#[cfg(feature = "notes")]
pub mod summary;
#[cfg(feature = "notes")]
pub mod tools;
pub mod transport;
#[cfg(feature = "notes")]
pub mod vault;
#[cfg(feature = "web")]
pub mod web;

#[cfg(feature = "notes")]
pub use notes_app::{NOTES_SCOPES, NotesApp, NotesContext, notes_declarations};
