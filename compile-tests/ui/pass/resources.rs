use pkb_core::{Context, Registry, ResourceError, pkb_resource};

/// Every item.
#[pkb_resource(
    uri = "demo://items",
    title = "All items",
    mime_type = "application/json"
)]
async fn items(ctx: &Context) -> Result<String, ResourceError> {
    let _ = ctx;
    Ok("[]".into())
}

/// One item.
#[pkb_resource(uri = "demo://items/{id}", name = "item", complete(id = complete_id))]
async fn item(id: String) -> Result<String, ResourceError> {
    Ok(id)
}

async fn complete_id(_ctx: &Context, prefix: String) -> Vec<String> {
    vec![prefix]
}

fn main() {
    let registry: Registry = Registry::collect().unwrap();
    let (def, variables) = registry.resolve_resource("demo://items").unwrap();
    assert_eq!(def.name, "items");
    assert!(variables.is_empty());
    let (def, variables) = registry.resolve_resource("demo://items/42").unwrap();
    assert_eq!(def.name, "item");
    assert_eq!(variables, ["42"]);
}
