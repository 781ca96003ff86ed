use pkb_core::{Contents, Registry, ToolError, declarations, pkb_tool};

/// Says hello.
#[pkb_tool(read_only)]
async fn hello() -> Result<Contents, ToolError> {
    Ok(Contents::text("hello"))
}

fn main() {
    let _ = Registry::new(declarations![hello::<u8>]);
}
