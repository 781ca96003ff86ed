//! Tools: the definition a `#[pkb_tool]` fn registers, its errors, and how results are shaped.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;

use super::args::{ArgSpec, InvalidArguments};
use super::context::Context;

/// The four behaviour hints every tool states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// The tool changes nothing.
    pub read_only: bool,
    /// The tool may overwrite or delete data.
    pub destructive: bool,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool reaches outside the server's own data.
    pub open_world: bool,
}

/// The generated entry point of a tool: validates, calls the fn, shapes the result.
pub type ToolCallFn = fn(Context, Option<JsonObject>) -> BoxFuture<'static, CallToolResult>;

/// A tool, as declared by one `#[pkb_tool]` fn.
#[derive(Debug)]
pub struct ToolDef {
    /// The tool's name (the fn's name unless overridden).
    pub name: &'static str,
    /// A human-readable title.
    pub title: Option<&'static str>,
    /// The doc comment of the fn.
    pub description: &'static str,
    /// The client arguments, in declaration order.
    pub args: &'static [ArgSpec],
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The output schema of the fn's success type.
    pub output_schema: fn() -> Arc<JsonObject>,
    /// Runs one call.
    pub call: ToolCallFn,
}

/// How a tool reports that it could not do what was asked: an `isError` result with one text
/// item, which the model reads. Protocol errors are the framework's business, not a tool's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A tool execution error with this exact text.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The text the client will see.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// What a `#[pkb_tool]` fn returns: `Result<T, ToolError>` with `T` a serializable type that
/// has a JSON Schema (its `outputSchema`).
#[diagnostic::on_unimplemented(
    message = "a `#[pkb_tool]` fn must return `Result<T, ToolError>`, where `T: Serialize + JsonSchema`",
    label = "found `{Self}`",
    note = "derive `serde::Serialize` and `schemars::JsonSchema` on the output struct"
)]
pub trait ToolReturn {
    /// The success type, which is the tool's structured output.
    type Output: Serialize + JsonSchema + 'static;
    /// Splits into success or tool error.
    fn into_result(self) -> Result<Self::Output, ToolError>;
}

impl<T: Serialize + JsonSchema + 'static> ToolReturn for Result<T, ToolError> {
    type Output = T;
    fn into_result(self) -> Result<T, ToolError> {
        self
    }
}

/// The `outputSchema` of a tool returning `R`.
pub fn output_schema_of<R: ToolReturn>() -> Arc<JsonObject> {
    rmcp::handler::server::tool::schema_for_output::<R::Output>()
}

/// Shapes a handler's result: `structuredContent` plus one text item, the same JSON
/// pretty-printed, or the text `text` gives.
pub fn tool_reply<R: ToolReturn>(
    result: R,
    text: Option<fn(&R::Output) -> String>,
) -> CallToolResult {
    match result.into_result() {
        Err(error) => tool_error(error.message),
        Ok(output) => match serde_json::to_value(&output) {
            Err(error) => {
                tracing::error!(%error, "a tool's output did not serialize");
                tool_error("internal error: the tool's output could not be serialized".to_string())
            }
            Ok(value) => {
                let text = match text {
                    Some(text) => text(&output),
                    None => serde_json::to_string_pretty(&value).unwrap_or_default(),
                };
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(value);
                result
            }
        },
    }
}

/// The result of a call whose arguments broke the schema: the handler never ran.
pub fn tool_invalid(invalid: InvalidArguments) -> CallToolResult {
    tool_error(invalid.to_string())
}

/// An `isError` result with one text item and no structured content.
pub fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
