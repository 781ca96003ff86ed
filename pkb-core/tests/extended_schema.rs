//! A tool's `extend_schema` keywords are part of its input schema and are enforced before the
//! fn runs, with every violation named; the tool below exists only in this test binary.

use pkb_core::{Context, Declarations, Registry, Stateless};
use serde_json::{Value, json};

mod good {
    use pkb_core::{Contents, ToolError, pkb_tool};
    use serde_json::{Value, json};

    /// A phone number or an email address, and with `via: "phone"` the phone number.
    pub fn reachable() -> Value {
        json!({
            "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }],
            "if": { "properties": { "via": { "const": "phone" } }, "required": ["via"] },
            "then": { "required": ["phone"] }
        })
    }

    /// Records how to reach someone.
    #[pkb_tool(read_only, extend_schema = reachable)]
    async fn contact(
        /// How to reach them first.
        #[arg(default, max_len = 10)]
        via: String,
        /// A phone number.
        #[arg(default, max_len = 20)]
        phone: String,
        /// An email address.
        #[arg(default, max_len = 100)]
        email: String,
    ) -> Result<Contents, ToolError> {
        Ok(Contents::text(format!("{via}:{phone}:{email}")))
    }
}

mod bad {
    use pkb_core::{Contents, ToolError, pkb_tool};
    use serde_json::{Value, json};

    /// Restates what the arguments derive.
    fn properties() -> Value {
        json!({ "properties": { "a": { "type": "integer" } } })
    }

    /// Takes an argument whose rules the extension contradicts.
    #[pkb_tool(read_only, extend_schema = properties)]
    async fn contradicted(
        /// An argument.
        a: String,
    ) -> Result<Contents, ToolError> {
        Ok(Contents::text(a))
    }
}

fn registry() -> Registry {
    Registry::new(Declarations::collected().in_module(concat!(module_path!(), "::good")))
        .expect("the test tool registers")
}

async fn call(registry: &Registry, arguments: Value) -> (bool, String) {
    let ctx = Context::detached(Stateless::new("test", "0"));
    let result = registry
        .call_tool(ctx, "contact", arguments.as_object().cloned())
        .await
        .expect("the tool exists")
        .expect("the call is not refused");
    let text = result.content[0].as_text().expect("text").text.clone();
    (result.is_error == Some(true), text)
}

#[test]
fn the_listing_states_the_extension_beside_the_derived_schema() {
    let registry = registry();
    let schema = &registry.tool_description("contact").unwrap().input_schema;
    assert_eq!(schema["anyOf"], good::reachable()["anyOf"]);
    assert_eq!(schema["then"], json!({ "required": ["phone"] }));
    assert_eq!(schema["properties"]["phone"]["maxLength"], 20);
    assert_eq!(schema["additionalProperties"], false);
}

#[test]
fn an_unusable_extension_stops_the_registry_at_startup() {
    let error =
        Registry::<()>::new(Declarations::collected().in_module(concat!(module_path!(), "::bad")))
            .err()
            .expect("the registry refuses the tool");
    assert_eq!(
        error.to_string(),
        "the input schema of tool `contradicted` is unusable: `properties` comes from the fn's arguments; state it with `#[arg(...)]`, not in the extension"
    );
}

#[tokio::test]
async fn calls_that_break_the_extension_never_reach_the_fn() {
    let registry = registry();
    let (failed, text) = call(&registry, json!({})).await;
    assert!(failed);
    assert!(
        text.starts_with("invalid arguments: arguments: "),
        "the call as a whole is named: {text}"
    );
    let (failed, text) = call(&registry, json!({"via": "phone", "email": "a@b.c"})).await;
    assert!(
        failed,
        "with via = phone the phone number is required: {text}"
    );
    assert!(
        !text.contains("a@b.c"),
        "messages do not quote values: {text}"
    );
    let (failed, text) = call(&registry, json!({"phone": "x".repeat(21)})).await;
    assert!(failed);
    assert!(
        text.contains("phone: "),
        "the derived rules count too: {text}"
    );
    assert_eq!(
        call(&registry, json!({"via": "phone", "phone": "123"})).await,
        (false, "phone:123:".to_owned())
    );
    assert_eq!(
        call(&registry, json!({"email": "a@b.c"})).await,
        (false, "::a@b.c".to_owned())
    );
}
