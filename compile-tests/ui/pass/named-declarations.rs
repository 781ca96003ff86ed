// A set named by its declarations, merged and narrowed; `collect = false` keeps a declaration
// out of `Registry::collect()` but not out of a set that names it.
use pkb_core::{
    Contents, Declarations, PromptError, Registry, ResourceError, ToolError, declarations,
    pkb_prompt, pkb_resource, pkb_tool,
};
use rmcp::model::{PromptMessage, Role};

mod library {
    use pkb_core::{Contents, ToolError, pkb_tool};

    /// Offered by a library, served only when named.
    #[pkb_tool(read_only, collect = false)]
    pub async fn offered() -> Result<Contents, ToolError> {
        Ok(Contents::text("offered"))
    }
}

/// Says hello.
#[pkb_tool(read_only)]
async fn hello() -> Result<Contents, ToolError> {
    Ok(Contents::text("hello"))
}

/// A greeting.
#[pkb_resource(uri = "test://greeting", collect = false)]
async fn greeting() -> Result<String, ResourceError> {
    Ok("hello".into())
}

/// Asks for a greeting.
#[pkb_prompt(collect = false)]
async fn greet() -> Result<Vec<PromptMessage>, PromptError> {
    Ok(vec![PromptMessage::new_text(Role::User, "Say hello.")])
}

fn main() {
    let collected: Registry = Registry::collect().unwrap();
    let names: Vec<_> = collected.tools().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["hello"]);
    assert_eq!(collected.prompts().count(), 0);

    let set: Declarations = declarations![hello, greeting] + declarations![greet, library::offered,];
    let registry = Registry::new(set.clone()).unwrap();
    assert!(registry.tool("offered").is_some() && registry.prompt("greet").is_some());
    assert_eq!(registry.static_resources().count(), 1);

    let narrowed = Registry::new(set.without(&["hello", "greet"])).unwrap();
    assert_eq!(narrowed.tools().count(), 1);
    assert!(narrowed.prompt("greet").is_none());

    // A declaration named twice is served once.
    let twice: Declarations = declarations![hello] + declarations![hello];
    assert_eq!(twice.names().count(), 1);
}
