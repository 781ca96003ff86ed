//! Any JSON sent as the arguments of any tool: the call never panics, and a refused call is
//! refused by validation (`invalid arguments: ...`), never by a failure inside a handler.
#![no_main]

#[path = "shared.rs"]
mod shared;

use libfuzzer_sys::fuzz_target;
use pkb_core::store::Store;
use pkb_core::{Context, Registry};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, json)) = data.split_first() else { return };
    let Ok(Value::Object(arguments)) = serde_json::from_slice::<Value>(json) else { return };
    let registry = registry();
    let tools: Vec<String> = registry.tools().map(|t| t.name.to_string()).collect();
    let name = &tools[selector as usize % tools.len()];
    let ctx = Context::detached(shared::store().clone());
    let result = shared::runtime()
        .block_on(registry.call_tool(ctx, name, Some(arguments)))
        .expect("registered tool")
        .expect("PKB's tools need no client capability");
    let text = serde_json::to_value(&result.content).expect("content serializes");
    let text = text[0]["text"].as_str().unwrap_or_default();
    assert!(!text.starts_with("internal error"), "{name}: {text}");
    assert!(!text.starts_with("storage error"), "{name}: {text}");
});

fn registry() -> &'static Registry<Store> {
    static REGISTRY: std::sync::OnceLock<Registry<Store>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| Registry::new(pkb_core::notes_declarations()).expect("registry"))
}
