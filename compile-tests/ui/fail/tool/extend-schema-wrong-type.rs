use pkb_core::{Contents, ToolError, pkb_tool};

/// Keywords as text, not as JSON.
fn rules() -> String {
    r#"{"anyOf": []}"#.into()
}

/// Greets someone.
#[pkb_tool(read_only, extend_schema = rules)]
async fn greet(
    /// Who.
    name: String,
) -> Result<Contents, ToolError> {
    Ok(Contents::text(name))
}

fn main() {}
