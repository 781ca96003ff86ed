// A crate that reaches pkb_core through a re-export names it with `crate = "..."`.
mod facade {
    pub use pkb_core;
}

use pkb_core::{Contents, PromptError, Registry, ResourceError, ToolError};
use rmcp::model::{PromptMessage, Role};

/// Says hello.
#[facade::pkb_core::pkb_tool(crate = "facade::pkb_core", read_only)]
async fn hello() -> Result<Contents, ToolError> {
    Ok(Contents::text("hello"))
}

/// A greeting.
#[facade::pkb_core::pkb_resource(crate = "facade::pkb_core", uri = "test://greeting")]
async fn greeting() -> Result<String, ResourceError> {
    Ok("hello".into())
}

/// Asks for a greeting.
#[facade::pkb_core::pkb_prompt(crate = "facade::pkb_core")]
async fn greet() -> Result<Vec<PromptMessage>, PromptError> {
    Ok(vec![PromptMessage::new_text(Role::User, "Say hello.")])
}

fn main() {
    // This file's declarations, named.
    let registry: Registry = Registry::new(pkb_core::declarations![hello, greeting, greet]).unwrap();
    assert_eq!(registry.tools().count(), 1);
    assert!(registry.tool("hello").is_some());
    assert!(registry.prompt("greet").is_some());
    assert_eq!(registry.static_resources().count(), 1);
}
