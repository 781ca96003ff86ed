//! The input schema of a handler, rendered from the same [`ArgSpec`]s that validation enforces.

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::args::ArgSpec;

/// JSON Schema draft 2020-12, as MCP requires.
pub(crate) fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12()
}

/// The `inputSchema` object for `specs`: every rule of every argument is stated here.
pub fn input_schema(specs: &[ArgSpec]) -> Arc<JsonObject> {
    let mut generator = settings().into_generator();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for spec in specs {
        let mut property = match (spec.schema)(&mut generator).to_value() {
            Value::Object(object) => object,
            // `true` (any value) or a bare reference: wrap so keywords can be added.
            other => {
                let mut object = Map::new();
                object.insert("allOf".into(), Value::Array(vec![other]));
                object
            }
        };
        property.insert("description".into(), json!(spec.description));
        if let Some(header) = spec.header {
            property.insert("x-mcp-header".into(), json!(header));
        }
        let rules = &spec.rules;
        let list = property.get("type") == Some(&json!("array"));
        let mut set = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                property.insert(key.into(), value);
            }
        };
        set("minLength", rules.min_len.map(Value::from));
        set("maxLength", rules.max_len.map(Value::from));
        set("minItems", rules.min_items.map(Value::from));
        set("maxItems", rules.max_items.map(Value::from));
        set("minimum", rules.min.map(number));
        set("maximum", rules.max.map(number));
        if rules.single_line && !list {
            set("pattern", Some(json!(SINGLE_LINE_PATTERN)));
        }
        let item_rules = rules.item_min_len.is_some()
            || rules.item_max_len.is_some()
            || (rules.single_line && list);
        if item_rules {
            let items = property.entry("items").or_insert_with(|| json!({}));
            if let Value::Object(items) = items {
                if let Some(min) = rules.item_min_len {
                    items.insert("minLength".into(), min.into());
                }
                if let Some(max) = rules.item_max_len {
                    items.insert("maxLength".into(), max.into());
                }
                if rules.single_line {
                    items.insert("pattern".into(), json!(SINGLE_LINE_PATTERN));
                }
            }
        }
        match spec.default {
            Some(default) => {
                property.insert("default".into(), default());
            }
            None => required.push(json!(spec.name)),
        }
        properties.insert(spec.name.into(), Value::Object(property));
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), Value::Array(required));
    schema.insert("additionalProperties".into(), json!(false));
    let definitions = generator.take_definitions(true);
    if !definitions.is_empty() {
        schema.insert("$defs".into(), Value::Object(definitions));
    }
    Arc::new(schema)
}

/// What `single_line` forbids, as an ECMA-262 pattern: the C0 and C1 control characters and
/// DEL (what `char::is_control` rejects), the line and paragraph separators, and the
/// bidirectional overrides and isolates. That a value must hold a visible character (see
/// [`super::text`]) is checked but not in the pattern: clients' regex engines differ too
/// much on Unicode categories for a schema to say it.
pub const SINGLE_LINE_PATTERN: &str =
    "^[^\\u0000-\\u001F\\u007F-\\u009F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*$";

/// Integers stay integers in the schema (`50`, not `50.0`).
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}
