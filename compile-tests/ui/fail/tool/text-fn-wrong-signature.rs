use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {
    text: String,
}

/// Returns a text.
#[pkb_tool(text = output_text)]
async fn say() -> Result<Output, ToolError> {
    Ok(Output { text: "hi".into() })
}

fn output_text(output: Output) -> String {
    output.text
}

fn main() {}
