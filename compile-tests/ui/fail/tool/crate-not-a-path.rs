use pkb_core::{Contents, ToolError, pkb_tool};

/// Says hello.
#[pkb_tool(crate = "not a path", read_only)]
async fn hello() -> Result<Contents, ToolError> {
    Ok(Contents::text("hello"))
}

fn main() {}
