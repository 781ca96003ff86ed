//! The fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`),
//! each one annotated fn, served over Streamable HTTP by the framework's own server: no
//! notes, no store, nothing of PKB's own tools.
//!
//! `cargo run -p pkb-examples --example conformance_server -- 127.0.0.1:8001`, then
//! `npx @modelcontextprotocol/conformance server --url http://127.0.0.1:8001/mcp`.

// The suite still checks sampling and logging on the revisions with sessions, which rmcp marks
// deprecated for the stateless 2026-07-28 one.
#![allow(deprecated)]

mod input_rounds;

use std::time::Duration;

use pkb_core::transport::http::{HttpServer, HttpSettings};
use pkb_core::{
    ClientRequestError, Contents, Context, Declarations, McpServer, PromptError, Registry,
    ResourceError, Stateless, ToolError, pkb_prompt, pkb_resource, pkb_tool,
};
use rmcp::model::{
    ContentBlock, CreateMessageRequestParams, ElicitationSchema, LoggingLevel, PromptMessage,
    ResourceContents, Role, SamplingMessage,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A 1x1 red PNG, base64.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";
/// A silent WAV, base64.
const AUDIO: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";
/// How long the fixtures wait for the client's model or user.
pub(crate) const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The pause between a fixture's notifications, as the suite asks.
const PAUSE: Duration = Duration::from_millis(50);

/// Returns a simple text response.
#[pkb_tool(read_only)]
async fn test_simple_text() -> Result<Contents, ToolError> {
    Ok(Contents::text(
        "This is a simple text response for testing.",
    ))
}

/// Returns an image.
#[pkb_tool(read_only)]
async fn test_image_content() -> Result<Contents, ToolError> {
    Ok(Contents::default().image(IMAGE, "image/png"))
}

/// Returns audio.
#[pkb_tool(read_only)]
async fn test_audio_content() -> Result<Contents, ToolError> {
    Ok(Contents::default().audio(AUDIO, "audio/wav"))
}

/// Returns an embedded resource.
#[pkb_tool(read_only)]
async fn test_embedded_resource() -> Result<Contents, ToolError> {
    Ok(Contents::default().resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

/// Returns text, an image and an embedded resource.
#[pkb_tool(read_only)]
async fn test_multiple_content_types() -> Result<Contents, ToolError> {
    Ok(Contents::text("Multiple content types test:")
        .image(IMAGE, "image/png")
        .resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ))
}

/// Sends three log messages while it runs.
#[pkb_tool(read_only)]
async fn test_tool_with_logging(ctx: &Context) -> Result<Contents, ToolError> {
    for message in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        ctx.log(LoggingLevel::Info, json!(message)).await;
        tokio::time::sleep(PAUSE).await;
    }
    Ok(Contents::text("Logging test completed"))
}

/// Always fails, as a tool execution error.
#[pkb_tool(read_only)]
async fn test_error_handling() -> Result<Contents, ToolError> {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

/// Reports progress 0, 50 and 100 of 100.
#[pkb_tool(read_only)]
async fn test_tool_with_progress(ctx: &Context) -> Result<Contents, ToolError> {
    for (progress, message) in [(0.0, "Starting"), (50.0, "Halfway"), (100.0, "Complete")] {
        ctx.progress(progress, Some(100.0), Some(message)).await;
        tokio::time::sleep(PAUSE).await;
    }
    Ok(Contents::text("Progress test completed"))
}

/// Answers after a pause, long enough for the client to lose and resume its stream.
#[pkb_tool(read_only)]
async fn test_reconnection() -> Result<Contents, ToolError> {
    tokio::time::sleep(2 * PAUSE).await;
    Ok(Contents::text("Reconnection test completed"))
}

/// Logs one message, which reaches the client only when its request asked for a log level.
#[pkb_tool(read_only)]
async fn test_logging_tool(ctx: &Context) -> Result<Contents, ToolError> {
    ctx.log(LoggingLevel::Info, json!("logLevel was requested"))
        .await;
    Ok(Contents::text("Logging tool completed"))
}

/// Names the region a call is for, which also travels in the `Mcp-Param-Region` header, so a
/// gateway can route on it (SEP-2243); the server checks that the two agree.
#[pkb_tool(read_only)]
async fn test_header_region(
    /// The region the call is for.
    #[arg(header = "Region", max_len = 100)]
    region: String,
) -> Result<Contents, ToolError> {
    Ok(Contents::text(format!("region: {region}")))
}

/// A postal address, a definition of its own in the input schema.
#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "address", extend("$anchor" = "addressDef"))]
struct Address {
    street: Option<String>,
    city: Option<String>,
}

/// How to reach someone.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ContactMethod {
    Phone,
    Email,
}

/// A phone number or an email address, whichever the contact method names: rules across
/// arguments, stated as JSON Schema 2020-12 keywords and enforced before the fn runs.
fn contact_rules() -> serde_json::Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"]
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] }
    })
}

/// Tool with JSON Schema 2020-12 features
#[pkb_tool(read_only, extend_schema = contact_rules)]
async fn json_schema_2020_12_tool(
    /// The contact's name.
    #[arg(default, max_len = 200)]
    name: String,
    /// Where they live.
    #[arg(default)]
    address: Option<Address>,
    /// How to reach them.
    #[arg(name = "contactMethod", default)]
    contact_method: Option<ContactMethod>,
    /// Their phone number.
    #[arg(default, max_len = 50)]
    phone: String,
    /// Their email address.
    #[arg(default, max_len = 320)]
    email: String,
) -> Result<Contents, ToolError> {
    // The schema's rules saw to it that the one the method names was given.
    let reach = match contact_method {
        Some(ContactMethod::Phone) => phone,
        Some(ContactMethod::Email) => email,
        None if email.is_empty() => phone,
        None => email,
    };
    let place = address
        .and_then(|a| a.city.or(a.street))
        .unwrap_or_else(|| "nowhere".into());
    Ok(Contents::text(format!("{name} of {place}: {reach}")))
}

/// Asks the client's model to answer a prompt.
#[pkb_tool(read_only, open_world)]
async fn test_sampling(
    ctx: &Context,
    /// What to ask the model.
    #[arg(max_len = 10_000)]
    prompt: String,
) -> Result<Contents, ToolError> {
    let text = ask_model(ctx, prompt).await?;
    Ok(Contents::text(format!(
        "LLM response: {}",
        text.as_deref().unwrap_or("No text response")
    )))
}

/// Asks the client's model a question: on 2026-07-28 as a multi-round request, the answer
/// coming with the client's retry.
#[pkb_tool(read_only, open_world)]
async fn test_input_required_result_sampling(ctx: &Context) -> Result<Contents, ToolError> {
    let text = ask_model(ctx, "What is the capital of France?".into()).await?;
    Ok(Contents::text(format!(
        "Sampling response: {}",
        text.as_deref().unwrap_or("(no sampling text)")
    )))
}

/// The text of the model's answer to `prompt` (`None` when it answered otherwise).
async fn ask_model(ctx: &Context, prompt: String) -> Result<Option<String>, ToolError> {
    let request = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
    let answer = ctx
        .sample(request, CLIENT_TIMEOUT)
        .await
        .map_err(|e| ToolError::new(format!("Sampling error: {e}")))?;
    Ok(answer
        .message
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone()))
}

/// Asks the client's user for a name and an email address.
#[pkb_tool(read_only, open_world)]
async fn test_elicitation(
    ctx: &Context,
    /// What to tell the user.
    #[arg(max_len = 1_000)]
    message: String,
) -> Result<Contents, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    elicit(ctx, message, schema, "User response").await
}

/// Asks for values that all have defaults (SEP-1034).
#[pkb_tool(read_only, open_world)]
async fn test_elicitation_sep1034_defaults(ctx: &Context) -> Result<Contents, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User's name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User's age", "default": 30},
            "score": {"type": "number", "description": "User's score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User's status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Whether user is verified", "default": true}
        }
    });
    let message = "Please provide values (all have defaults)";
    elicit(ctx, message.into(), schema, "Elicitation completed").await
}

/// Asks for every kind of enumerated value (SEP-1330).
#[pkb_tool(read_only, open_world)]
async fn test_elicitation_sep1330_enums(ctx: &Context) -> Result<Contents, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}
                    ]
                }
            }
        }
    });
    let message = "Please select options from the enum fields";
    elicit(ctx, message.into(), schema, "Elicitation completed").await
}

/// One form elicitation, answered as `<label>: action=..., content=...`.
async fn elicit(
    ctx: &Context,
    message: String,
    schema: serde_json::Value,
    label: &str,
) -> Result<Contents, ToolError> {
    let schema: ElicitationSchema = serde_json::from_value(schema)
        .map_err(|e| ToolError::new(format!("Elicitation error: {e}")))?;
    let answer = ctx
        .elicit(message, schema, CLIENT_TIMEOUT)
        .await
        .map_err(|e: ClientRequestError| ToolError::new(format!("Elicitation error: {e}")))?;
    let action = serde_json::to_value(answer.action).unwrap_or_default();
    let content = answer.content.unwrap_or_default();
    Ok(Contents::text(format!(
        "{label}: action={}, content={content}",
        action.as_str().unwrap_or("unknown")
    )))
}

/// A static text resource for testing.
#[pkb_resource(
    uri = "test://static-text",
    name = "static-text",
    title = "Static Text Resource",
    mime_type = "text/plain"
)]
async fn static_text() -> Result<String, ResourceError> {
    Ok("This is the content of the static text resource.".into())
}

/// A static binary resource for testing.
#[pkb_resource(
    uri = "test://static-binary",
    name = "static-binary",
    title = "Static Binary Resource",
    mime_type = "image/png"
)]
async fn static_binary() -> Result<Vec<u8>, ResourceError> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(IMAGE)
        .map_err(|e| ResourceError::Failed(e.to_string()))
}

/// A resource clients subscribe to.
#[pkb_resource(
    uri = "test://watched-resource",
    name = "watched-resource",
    title = "Watched Resource",
    mime_type = "text/plain"
)]
async fn watched_resource() -> Result<String, ResourceError> {
    Ok("Watched resource content.".into())
}

/// A dynamic resource with parameter substitution.
#[pkb_resource(
    uri = "test://template/{id}/data",
    name = "template-data",
    title = "Dynamic Resource",
    mime_type = "application/json",
    complete(id = complete_id)
)]
async fn template_data(id: String) -> Result<String, ResourceError> {
    Ok(json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string())
}

async fn complete_id(_ctx: &Context, prefix: String) -> Vec<String> {
    ["1", "2", "3"]
        .into_iter()
        .filter(|id| id.starts_with(&prefix))
        .map(String::from)
        .collect()
}

/// A simple test prompt with no arguments.
#[pkb_prompt]
async fn test_simple_prompt() -> Result<Vec<PromptMessage>, PromptError> {
    Ok(vec![PromptMessage::new_text(
        Role::User,
        "This is a simple test prompt.",
    )])
}

/// A test prompt that accepts arguments.
#[pkb_prompt(complete(arg1 = complete_arg))]
async fn test_prompt_with_arguments(
    /// First test argument.
    #[arg(max_len = 1_000)]
    arg1: String,
    /// Second test argument.
    #[arg(default, max_len = 1_000)]
    arg2: String,
) -> Result<Vec<PromptMessage>, PromptError> {
    Ok(vec![PromptMessage::new_text(
        Role::User,
        format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
    )])
}

async fn complete_arg(_ctx: &Context, prefix: String) -> Vec<String> {
    ["paris", "park", "party"]
        .into_iter()
        .filter(|value| value.starts_with(&prefix))
        .map(String::from)
        .collect()
}

/// A test prompt that includes an embedded resource.
#[pkb_prompt]
async fn test_prompt_with_embedded_resource(
    /// URI of the resource to embed.
    #[arg(name = "resourceUri", max_len = 2_000)]
    resource_uri: String,
) -> Result<Vec<PromptMessage>, PromptError> {
    let resource = ResourceContents::text("Embedded resource content for testing.", resource_uri)
        .with_mime_type("text/plain");
    Ok(vec![
        PromptMessage::new(Role::User, ContentBlock::resource(resource)),
        PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
    ])
}

/// A test prompt that includes an image.
#[pkb_prompt]
async fn test_prompt_with_image() -> Result<Vec<PromptMessage>, PromptError> {
    Ok(vec![
        PromptMessage::new_text(Role::User, "Here is an image:"),
        PromptMessage::new(Role::User, ContentBlock::image(IMAGE, "image/png")),
    ])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8001".into())
        .parse()?;
    // Only this file's fixtures, whatever else is linked.
    let registry = Registry::new(Declarations::collected().in_module(module_path!()))?;
    let app = Stateless::new("pkb-conformance-fixtures", env!("CARGO_PKG_VERSION"));
    let server =
        HttpServer::bind(HttpSettings::loopback(bind), McpServer::new(registry, app)).await?;
    eprintln!("conformance fixtures: listening on {}", server.url());
    server
        .run(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
    Ok(())
}
