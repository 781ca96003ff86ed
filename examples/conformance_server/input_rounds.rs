//! The fixtures of multi-round-trip requests (2026-07-28, SEP-2322): handlers that ask the
//! client for input as they would on any revision, and rely on the framework for the rounds,
//! the keys of the requests and the sealed `requestState`.

use pkb_core::{Contents, Context, PromptError, ToolError, pkb_prompt, pkb_tool};
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitationSchema, PromptMessage, Role,
    SamplingMessage,
};
use serde_json::{Value, json};

use crate::CLIENT_TIMEOUT;

/// Asks the client's user for their name, and greets them.
#[pkb_tool(read_only, open_world)]
async fn test_input_required_result_elicitation(ctx: &Context) -> Result<Contents, ToolError> {
    let name = ask_user(ctx, "user_name", "What is your name?", "name", "string").await?;
    Ok(Contents::text(format!("Hello, {}!", shown(&name))))
}

/// Asks the client for its roots, and names them.
#[pkb_tool(read_only, open_world)]
async fn test_input_required_result_list_roots(ctx: &Context) -> Result<Contents, ToolError> {
    let roots = ctx
        .named_input("client_roots")
        .list_roots(CLIENT_TIMEOUT)
        .await?;
    let uris: Vec<&str> = roots.roots.iter().map(|root| root.uri.as_str()).collect();
    Ok(Contents::text(format!("Client roots: {}", uris.join(", "))))
}

/// Asks for a confirmation; the answer comes back with the state the framework sealed, which
/// it verified before this handler ran again.
#[pkb_tool(read_only, open_world)]
async fn test_input_required_result_request_state(ctx: &Context) -> Result<Contents, ToolError> {
    confirmed(ctx).await
}

/// The same confirmation, for the suite to tamper with its state.
#[pkb_tool(read_only, open_world)]
async fn test_input_required_result_tampered_state(ctx: &Context) -> Result<Contents, ToolError> {
    confirmed(ctx).await
}

async fn confirmed(ctx: &Context) -> Result<Contents, ToolError> {
    let ok = ask_user(ctx, "confirm", "Please confirm", "ok", "boolean").await?;
    Ok(Contents::text(format!(
        "state-ok: confirmed={}",
        shown(&ok)
    )))
}

/// Asks for a name, a sample of the client's model and the client's roots, all in one round.
#[pkb_tool(read_only, open_world)]
async fn test_input_required_result_multiple_inputs(ctx: &Context) -> Result<Contents, ToolError> {
    let (greeting, client_roots) = (ctx.named_input("greeting"), ctx.named_input("client_roots"));
    let (name, greeting, roots) = tokio::join!(
        ask_user(ctx, "user_name", "What is your name?", "name", "string"),
        greeting.sample(prompt("Generate a greeting", 50), CLIENT_TIMEOUT),
        client_roots.list_roots(CLIENT_TIMEOUT),
    );
    let (name, greeting, roots) = (name?, greeting?, roots?);
    Ok(Contents::text(format!(
        "{} to {}, with {} roots",
        text_of(&greeting),
        shown(&name),
        roots.roots.len()
    )))
}

/// Asks for a name, and once it has one, for a favourite colour: two rounds of questions.
#[pkb_tool(read_only, open_world)]
async fn test_input_required_result_multi_round(ctx: &Context) -> Result<Contents, ToolError> {
    let name = ask_user(ctx, "step1", "Step 1: What is your name?", "name", "string").await?;
    let color = ask_user(
        ctx,
        "step2",
        "Step 2: What is your favorite color?",
        "color",
        "string",
    )
    .await?;
    Ok(Contents::text(format!(
        "{} likes {}",
        shown(&name),
        shown(&color)
    )))
}

/// Asks for what the client declared it can give: a sample always, the user only with the
/// elicitation capability.
#[pkb_tool(read_only, open_world)]
async fn test_input_required_result_capabilities(ctx: &Context) -> Result<Contents, ToolError> {
    let (sample, name) = tokio::join!(
        ctx.sample(prompt("Say hello", 50), CLIENT_TIMEOUT),
        ask_user(ctx, "user_name", "What is your name?", "name", "string"),
    );
    let sample = sample?;
    let name = name.map_or_else(|_| "(not asked)".to_owned(), |name| shown(&name));
    Ok(Contents::text(format!(
        "{}; name: {name}",
        text_of(&sample)
    )))
}

/// Needs the client's model: a client without the sampling capability is refused with -32021.
#[pkb_tool(read_only, open_world)]
async fn test_missing_capability(ctx: &Context) -> Result<Contents, ToolError> {
    let answer = ctx.sample(prompt("Say hello", 50), CLIENT_TIMEOUT).await?;
    Ok(Contents::text(text_of(&answer)))
}

/// Asks the user a question; on 2026-07-28 the request travels in the result, never as a
/// request of the server's own on the response stream.
#[pkb_tool(read_only, open_world)]
async fn test_streaming_elicitation(ctx: &Context) -> Result<Contents, ToolError> {
    let name = ask_user(ctx, "user_name", "What is your name?", "name", "string").await?;
    Ok(Contents::text(format!("Hello, {}!", shown(&name))))
}

/// A prompt that asks the user what context to use before it is written.
#[pkb_prompt]
async fn test_input_required_result_prompt(
    ctx: &Context,
) -> Result<Vec<PromptMessage>, PromptError> {
    let context = ask_user(
        ctx,
        "user_context",
        "What context should the prompt use?",
        "context",
        "string",
    )
    .await
    .map_err(|e| PromptError(e.to_string()))?;
    Ok(vec![PromptMessage::new_text(
        Role::User,
        format!("Answer with this context: {}", shown(&context)),
    )])
}

/// The value of `property` (of JSON type `kind`) in the user's answer to `message`, asked
/// under `key`; `null` when they declined.
async fn ask_user(
    ctx: &Context,
    key: &str,
    message: &str,
    property: &str,
    kind: &str,
) -> Result<Value, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": { property: { "type": kind } },
        "required": [property],
    });
    let schema: ElicitationSchema = serde_json::from_value(schema)
        .map_err(|e| ToolError::new(format!("Elicitation error: {e}")))?;
    let answer = ctx
        .named_input(key)
        .elicit(message, schema, CLIENT_TIMEOUT)
        .await?;
    Ok(answer
        .content
        .and_then(|content| content.get(property).cloned())
        .unwrap_or(Value::Null))
}

fn prompt(text: &str, max_tokens: u32) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(text)], max_tokens)
}

fn text_of(answer: &CreateMessageResult) -> String {
    answer
        .message
        .content
        .first()
        .and_then(|c| c.as_text())
        .map_or_else(|| "(no text)".to_owned(), |t| t.text.clone())
}

/// A user's answer as text: strings bare, anything else as JSON.
fn shown(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}
