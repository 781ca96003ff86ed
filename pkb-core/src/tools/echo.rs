//! `echo`: a connection check.

use schemars::JsonSchema;
use serde::Serialize;

use crate::{ToolError, pkb_tool};

/// What `echo` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EchoOutput {
    /// The text, unchanged.
    pub text: String,
}

/// Returns the text unchanged. Useful to check that the server answers.
#[pkb_tool(collect = false, read_only, idempotent, text = echo_text)]
pub async fn echo(
    /// The text to send back.
    #[arg(max_len = 10_000)]
    text: String,
) -> Result<EchoOutput, ToolError> {
    Ok(EchoOutput { text })
}

fn echo_text(output: &EchoOutput) -> String {
    output.text.clone()
}
