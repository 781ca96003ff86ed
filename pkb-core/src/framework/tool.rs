//! Tools: the definition a `#[pkb_tool]` fn registers, its errors, and how results are shaped.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock, ErrorCode, ErrorData, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;

use super::args::{ArgSpec, InvalidArguments};
use super::context::{ClientRequestError, Context};
use super::state::StateTypeFn;

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
pub type ToolCallFn = fn(Context, Option<JsonObject>) -> BoxFuture<'static, ToolReply>;

/// What a call of a tool comes to: its result (an `isError` one too), or the protocol error
/// the call is refused with (a client capability it needs and the client lacks).
pub type ToolReply = Result<CallToolResult, ErrorData>;

/// A tool, as declared by one `#[pkb_tool]` fn.
#[derive(Debug)]
pub struct ToolDef {
    /// The module the fn is declared in, as `module_path!()` names it.
    pub module: &'static str,
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
    /// The output schema of the fn's success type, when its output is structured.
    pub output_schema: fn() -> Option<Arc<JsonObject>>,
    /// Keywords added to the input schema derived from the arguments (`allOf`, `if`, ...),
    /// which the registry enforces with the whole schema before the fn runs.
    pub extend_schema: Option<fn() -> serde_json::Value>,
    /// The application state its handler takes (`#[state]`), if it takes one.
    pub state: Option<StateTypeFn>,
    /// Runs one call.
    pub call: ToolCallFn,
}

/// How a tool reports that it could not do what was asked: an `isError` result with one text
/// item, which the model reads. Protocol errors are the framework's business, not a tool's,
/// with one exception: a tool that cannot work without a capability the client did not
/// declare says so with [`ToolError::needs_client_capability`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    message: String,
    /// The client capability the call needs and the client lacks.
    missing_capability: Option<&'static str>,
}

impl ToolError {
    /// A tool execution error with this exact text.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            missing_capability: None,
        }
    }

    /// The call needs a capability the client did not declare (`"sampling"`,
    /// `"elicitation"`, `"roots"`): it is refused with JSON-RPC error -32021, whose data names
    /// the capability, as the MCP specification asks.
    pub fn needs_client_capability(capability: &'static str) -> Self {
        Self {
            message: format!("this tool needs the client's {capability} capability"),
            missing_capability: Some(capability),
        }
    }

    /// The text the client will see.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A request to the client that failed fails the tool: a capability the client lacks as
/// [`ToolError::needs_client_capability`], anything else with its text.
impl From<ClientRequestError> for ToolError {
    fn from(error: ClientRequestError) -> Self {
        match error {
            ClientRequestError::Unsupported(capability) => {
                Self::needs_client_capability(capability)
            }
            other => Self::new(other.to_string()),
        }
    }
}

/// What a `#[pkb_tool]` fn returns: `Result<T, ToolError>`, where `T` is a [`ToolOutput`].
#[diagnostic::on_unimplemented(
    message = "a `#[pkb_tool]` fn must return `Result<T, ToolError>`, where `T: Serialize + JsonSchema` or `T` is `Contents`",
    label = "found `{Self}`",
    note = "derive `serde::Serialize` and `schemars::JsonSchema` on the output struct, or return `pkb_core::Contents`"
)]
pub trait ToolReturn {
    /// The success type.
    type Output: ToolOutput + 'static;
    /// Splits into success or tool error.
    fn into_result(self) -> Result<Self::Output, ToolError>;
}

impl<T: ToolOutput + 'static> ToolReturn for Result<T, ToolError> {
    type Output = T;
    fn into_result(self) -> Result<T, ToolError> {
        self
    }
}

/// What a tool's success becomes in its result.
///
/// A `Serialize + JsonSchema` type is structured output: its schema is the tool's
/// `outputSchema`, its JSON the result's `structuredContent`, with one text item (the same
/// JSON, or what `text = ...` makes of it). [`Contents`] is content blocks as they are: text,
/// images, audio, embedded resources, in order, with no `outputSchema`.
pub trait ToolOutput {
    /// The tool's `outputSchema`, when its output is structured.
    fn output_schema() -> Option<Arc<JsonObject>>;
    /// The successful result; `text` is what the tool's `text = ...` fn made of the output.
    fn into_call_result(self, text: Option<String>) -> CallToolResult;
}

impl<T: Serialize + JsonSchema + 'static> ToolOutput for T {
    fn output_schema() -> Option<Arc<JsonObject>> {
        // What `Serialize` writes (an `Option` field without `skip_serializing_if` is always
        // there), in JSON Schema 2020-12, as MCP asks; the root's title and description are
        // the Rust type's name and doc, noise to a model.
        let generator = schemars::generate::SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator();
        let schema = serde_json::to_value(generator.into_root_schema_for::<T>()).ok()?;
        let serde_json::Value::Object(mut schema) = schema else {
            return None;
        };
        schema.remove("title");
        schema.remove("description");
        schema.values_mut().for_each(single_types);
        Some(Arc::new(schema))
    }

    fn into_call_result(self, text: Option<String>) -> CallToolResult {
        match serde_json::to_value(&self) {
            Err(error) => {
                tracing::error!(%error, "a tool's output did not serialize");
                tool_error("internal error: the tool's output could not be serialized".to_string())
            }
            Ok(value) => {
                let text = text
                    .unwrap_or_else(|| serde_json::to_string_pretty(&value).unwrap_or_default());
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(value);
                result
            }
        }
    }
}

/// Content blocks a tool answers with, in order: what a tool returns when its answer is not
/// one JSON value, such as an image, audio or an embedded resource.
///
/// ```
/// use pkb_core::Contents;
/// let answer = Contents::text("Here is the chart:").image("iVBORw0KGgo=", "image/png");
/// assert_eq!(answer.blocks().len(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Contents(Vec<ContentBlock>);

impl Contents {
    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::default().and_text(text)
    }

    /// These blocks.
    pub fn blocks(&self) -> &[ContentBlock] {
        &self.0
    }

    /// The same contents and a text block.
    pub fn and_text(self, text: impl Into<String>) -> Self {
        self.and(ContentBlock::text(text.into()))
    }

    /// The same contents and an image: `data` is base64, `mime_type` such as `image/png`.
    pub fn image(self, data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        self.and(ContentBlock::image(data.into(), mime_type.into()))
    }

    /// The same contents and audio: `data` is base64, `mime_type` such as `audio/wav`.
    pub fn audio(self, data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        self.and(ContentBlock::Audio(rmcp::model::AudioContent::new(
            data.into(),
            mime_type.into(),
        )))
    }

    /// The same contents and an embedded text resource.
    pub fn resource_text(
        self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.and(ContentBlock::resource(
            rmcp::model::ResourceContents::text(text.into(), uri.into())
                .with_mime_type(mime_type.into()),
        ))
    }

    /// The same contents and any other block.
    pub fn and(mut self, block: ContentBlock) -> Self {
        self.0.push(block);
        self
    }
}

impl From<Vec<ContentBlock>> for Contents {
    fn from(blocks: Vec<ContentBlock>) -> Self {
        Self(blocks)
    }
}

impl ToolOutput for Contents {
    fn output_schema() -> Option<Arc<JsonObject>> {
        None
    }

    fn into_call_result(self, text: Option<String>) -> CallToolResult {
        let mut blocks = self.0;
        if let Some(text) = text {
            blocks.insert(0, ContentBlock::text(text));
        }
        CallToolResult::success(blocks)
    }
}

/// `schema` with each `type: [A, B]` (an output's `Option<T>`, which may be `null`) as
/// `anyOf: [{type: A}, {type: B}]`: one `type` per schema, as clients that map schemas onto a
/// single-type dialect need (the MCP Inspector's `--strict` check).
fn single_types(schema: &mut serde_json::Value) {
    use serde_json::Value;
    match schema {
        Value::Object(object) => {
            if let Some(Value::Array(kinds)) = object.get("type") {
                let branches = kinds
                    .iter()
                    .map(|kind| serde_json::json!({ "type": kind }))
                    .collect();
                object.remove("type");
                object.insert("anyOf".into(), Value::Array(branches));
            }
            object.values_mut().for_each(single_types);
        }
        Value::Array(items) => items.iter_mut().for_each(single_types),
        _ => {}
    }
}

/// The `outputSchema` of a tool returning `R`, when its output is structured.
pub fn output_schema_of<R: ToolReturn>() -> Option<Arc<JsonObject>> {
    R::Output::output_schema()
}

/// Shapes a handler's result: its output as [`ToolOutput`] makes it, or a tool error.
pub fn tool_reply<R: ToolReturn>(result: R, text: Option<fn(&R::Output) -> String>) -> ToolReply {
    match result.into_result() {
        Err(ToolError {
            missing_capability: Some(capability),
            ..
        }) => Err(missing_client_capability(capability)),
        Err(error) => Ok(tool_error(error.message)),
        Ok(output) => {
            let text = text.map(|text| text(&output));
            Ok(output.into_call_result(text))
        }
    }
}

/// JSON-RPC error -32021, naming `capability` in its data as a `ClientCapabilities` object
/// (`{"sampling": {}}`), as rmcp's own refusals do.
fn missing_client_capability(capability: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        Some(serde_json::json!({ "requiredCapabilities": { capability: {} } })),
    )
}

/// The result of a call whose arguments broke the schema: the handler never ran.
pub fn tool_invalid(invalid: InvalidArguments) -> ToolReply {
    Ok(tool_error(invalid.to_string()))
}

/// An `isError` result with one text item and no structured content.
pub fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(result: Result<Contents, ToolError>) -> ToolReply {
        tool_reply(result, None)
    }

    #[test]
    fn a_missing_client_capability_refuses_the_call_with_32021() {
        let refused = reply(Err(ClientRequestError::Unsupported("sampling").into()))
            .expect_err("a protocol error");
        assert_eq!(refused.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            refused.data,
            Some(serde_json::json!({"requiredCapabilities": {"sampling": {}}}))
        );
    }

    #[test]
    fn other_failures_of_the_client_are_tool_errors() {
        let failed = reply(Err(
            ClientRequestError::Failed("the client hung up".into()).into()
        ))
        .expect("a result");
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            failed.content[0].as_text().map(|t| t.text.as_str()),
            Some("the client hung up")
        );
    }
}
