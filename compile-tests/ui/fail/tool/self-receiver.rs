use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

struct Server;

impl Server {
    /// Does nothing.
    #[pkb_tool]
    async fn noop(&self) -> Result<Output, ToolError> {
        Ok(Output {})
    }
}

fn main() {}
