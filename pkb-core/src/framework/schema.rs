//! The input schema of a handler, rendered from the same [`ArgSpec`]s that validation enforces.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use super::args::{ArgSpec, schema_settings, single_type};

/// The `inputSchema` object for `specs`: every rule of every argument is stated here.
pub fn input_schema(specs: &[ArgSpec]) -> Arc<JsonObject> {
    let mut generator = schema_settings().into_generator();
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
        single_type(&mut property);
        property.insert("description".into(), json!(spec.description));
        if let Some(header) = spec.header {
            property.insert("x-mcp-header".into(), json!(header));
        }
        let rules = &spec.rules;
        // An optional list is `["array", "null"]`.
        let list = match property.get("type") {
            Some(Value::String(kind)) => kind == "array",
            Some(Value::Array(kinds)) => kinds.contains(&json!("array")),
            _ => false,
        };
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

/// The keywords of the schema derived from the arguments, which an extension cannot restate.
const DERIVED_KEYWORDS: [&str; 4] = ["type", "properties", "required", "additionalProperties"];

/// The dialect every input schema is written in.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// `schema` (derived from the arguments) with the keywords of `extension` added: the
/// cross-argument rules a tool states with `extend_schema` (`allOf`, `if`/`then`/`else`,
/// more `$defs`). Refused when it is not an object, restates what the arguments derive, names a
/// definition twice, or names another dialect than 2020-12.
pub fn extend_schema(schema: &JsonObject, extension: Value) -> Result<JsonObject, String> {
    let Value::Object(extension) = extension else {
        return Err("the extension is not a JSON object".into());
    };
    let mut extended = schema.clone();
    for (keyword, value) in extension {
        if DERIVED_KEYWORDS.contains(&keyword.as_str()) {
            return Err(format!(
                "`{keyword}` comes from the fn's arguments; state it with `#[arg(...)]`, not in the extension"
            ));
        }
        match (keyword.as_str(), value) {
            ("$schema", value) if value != json!(DRAFT_2020_12) => {
                return Err(format!(
                    "`$schema` must be {DRAFT_2020_12}, as MCP requires"
                ));
            }
            ("$defs", Value::Object(definitions)) => {
                let derived = extended
                    .entry("$defs")
                    .or_insert_with(|| Value::Object(Map::new()));
                let Value::Object(derived) = derived else {
                    unreachable!("the derived `$defs` is an object");
                };
                for (name, definition) in definitions {
                    if derived.insert(name.clone(), definition).is_some() {
                        return Err(format!(
                            "`$defs.{name}` is also the definition of an argument's type"
                        ));
                    }
                }
            }
            (keyword, value) => {
                extended.insert(keyword.to_owned(), value);
            }
        }
    }
    Ok(extended)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn derived() -> JsonObject {
        let schema = json!({
            "type": "object",
            "properties": { "a": { "type": "string" } },
            "required": [],
            "additionalProperties": false,
            "$defs": { "Kind": { "type": "string" } }
        });
        schema.as_object().cloned().unwrap()
    }

    #[test]
    fn an_extension_adds_keywords_and_definitions() {
        let extended = extend_schema(
            &derived(),
            json!({
                "$schema": DRAFT_2020_12,
                "allOf": [{ "required": ["a"] }],
                "$defs": { "address": { "$anchor": "addressDef" } }
            }),
        )
        .unwrap();
        assert_eq!(extended["allOf"], json!([{ "required": ["a"] }]));
        assert_eq!(extended["$defs"]["address"]["$anchor"], "addressDef");
        assert_eq!(extended["$defs"]["Kind"], json!({ "type": "string" }));
        assert_eq!(extended["$schema"], DRAFT_2020_12);
    }

    #[test]
    fn an_extension_cannot_restate_or_clash_with_what_the_arguments_derive() {
        for (extension, problem) in [
            (json!([1]), "not a JSON object"),
            (
                json!({ "properties": {} }),
                "`properties` comes from the fn's arguments",
            ),
            (json!({ "required": ["a"] }), "`required` comes from"),
            (
                json!({ "additionalProperties": true }),
                "`additionalProperties` comes",
            ),
            (json!({ "$defs": { "Kind": {} } }), "`$defs.Kind` is also"),
            (
                json!({ "$schema": "http://json-schema.org/draft-07/schema#" }),
                "`$schema` must be",
            ),
        ] {
            let error = extend_schema(&derived(), extension).unwrap_err();
            assert!(error.contains(problem), "{error}");
        }
    }
}
