//! Prompts: the definition a `#[pkb_prompt]` fn registers.

use futures::future::BoxFuture;
use rmcp::model::{JsonObject, PromptMessage};

use super::args::{ArgSpec, InvalidArguments};
use super::completion::CompletionDef;
use super::context::Context;
use super::state::StateTypeFn;

/// The generated entry point of a prompt.
pub type PromptGetFn =
    fn(Context, Option<JsonObject>) -> BoxFuture<'static, Result<Vec<PromptMessage>, PromptError>>;

/// A prompt, as declared by one `#[pkb_prompt]` fn.
#[derive(Debug)]
pub struct PromptDef {
    /// The module the fn is declared in, as `module_path!()` names it.
    pub module: &'static str,
    /// The prompt's name.
    pub name: &'static str,
    /// A human-readable title.
    pub title: Option<&'static str>,
    /// The doc comment of the fn.
    pub description: &'static str,
    /// The arguments (all strings), in declaration order.
    pub args: &'static [ArgSpec],
    /// Renders the messages.
    pub get: PromptGetFn,
    /// Completion providers for arguments.
    pub completions: &'static [CompletionDef],
    /// The application state its handler takes (`#[state]`), if it takes one.
    pub state: Option<StateTypeFn>,
}

/// Why a prompt could not be rendered: answered with JSON-RPC -32602 (invalid params).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PromptError(pub String);

/// What a `#[pkb_prompt]` fn returns.
#[diagnostic::on_unimplemented(
    message = "a `#[pkb_prompt]` fn must return `Result<Vec<PromptMessage>, PromptError>`",
    label = "found `{Self}`"
)]
pub trait PromptReturn {
    /// The messages, or why there are none.
    fn into_messages(self) -> Result<Vec<PromptMessage>, PromptError>;
}

impl PromptReturn for Result<Vec<PromptMessage>, PromptError> {
    fn into_messages(self) -> Result<Vec<PromptMessage>, PromptError> {
        self
    }
}

/// The error for prompt arguments that broke their rules.
pub fn prompt_invalid(invalid: InvalidArguments) -> Result<Vec<PromptMessage>, PromptError> {
    Err(PromptError(invalid.to_string()))
}
