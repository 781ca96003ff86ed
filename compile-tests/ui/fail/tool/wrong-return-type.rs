use pkb_core::pkb_tool;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Does nothing.
#[pkb_tool]
async fn noop() -> Result<Output, String> {
    Ok(Output {})
}

fn main() {}
