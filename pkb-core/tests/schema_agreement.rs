//! For every registered tool and prompt, the advertised input schema and the enforced checks
//! agree: each rule is in the schema with its value, and a value at each advertised limit is
//! accepted while one past it is refused, naming the field.

use pkb_core::Registry;
use pkb_core::framework::args::{ArgSpec, validate_args};
use serde_json::{Map, Value, json};

/// The type a property declares; an optional one's (`["string", "null"]`) is its other type.
fn declared_type(schema: &Value) -> Option<&str> {
    match &schema["type"] {
        Value::String(kind) => Some(kind),
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null"),
        _ => None,
    }
}

/// A value the schema of one property accepts, as small as its limits allow.
fn valid_value(schema: &Value) -> Value {
    match declared_type(schema) {
        Some("string") => {
            json!("a".repeat(schema["minLength"].as_u64().unwrap_or(1).max(1) as usize))
        }
        Some("integer") | Some("number") => json!(schema["minimum"].as_i64().unwrap_or(1)),
        Some("boolean") => json!(false),
        Some("array") => {
            let item = valid_value(&schema["items"]);
            json!(vec![
                item;
                schema["minItems"].as_u64().unwrap_or(0) as usize
            ])
        }
        other => panic!("no sample value for type {other:?}"),
    }
}

/// Every required argument with a valid value.
fn base_arguments(schema: &Value) -> Map<String, Value> {
    let mut base = Map::new();
    for name in schema["required"].as_array().unwrap() {
        let name = name.as_str().unwrap();
        base.insert(name.into(), valid_value(&schema["properties"][name]));
    }
    base
}

fn with(base: &Map<String, Value>, name: &str, value: Value) -> Map<String, Value> {
    let mut arguments = base.clone();
    arguments.insert(name.into(), value);
    arguments
}

fn assert_accepts(tool: &str, specs: &[ArgSpec], arguments: Map<String, Value>) {
    if let Err(invalid) = validate_args(specs, Some(arguments.clone())) {
        panic!("{tool}: schema-valid {arguments:?} refused: {invalid}");
    }
}

fn assert_refuses(tool: &str, specs: &[ArgSpec], arguments: Map<String, Value>, field: &str) {
    match validate_args(specs, Some(arguments.clone())) {
        Ok(_) => panic!("{tool}: schema-invalid {arguments:?} accepted"),
        Err(invalid) => assert!(
            invalid
                .problems()
                .iter()
                .any(|(f, _)| f == field || f.starts_with(&format!("{field}["))),
            "{tool}: error does not name `{field}`: {invalid}"
        ),
    }
}

/// Probes every limit the schema advertises, at the limit and one past it.
fn probe(tool: &str, schema: &Value, specs: &[ArgSpec]) {
    assert_eq!(schema["additionalProperties"], false, "{tool}");
    let base = base_arguments(schema);
    assert_accepts(tool, specs, base.clone());
    assert_refuses(
        tool,
        specs,
        with(&base, "surely_unknown", json!(1)),
        "surely_unknown",
    );
    for required in schema["required"].as_array().unwrap() {
        let name = required.as_str().unwrap();
        let mut missing = base.clone();
        missing.remove(name);
        assert_refuses(tool, specs, missing, name);
    }
    for (name, property) in schema["properties"].as_object().unwrap() {
        let char_string = |n: u64| json!("é".repeat(n as usize));
        if let Some(max) = property["maxLength"].as_u64() {
            assert_accepts(tool, specs, with(&base, name, char_string(max)));
            assert_refuses(tool, specs, with(&base, name, char_string(max + 1)), name);
        }
        if let Some(min) = property["minLength"].as_u64().filter(|&m| m > 0) {
            assert_accepts(tool, specs, with(&base, name, char_string(min)));
            assert_refuses(tool, specs, with(&base, name, char_string(min - 1)), name);
        }
        let item = valid_value(
            &property["items"]
                .clone()
                .as_object()
                .map_or(json!({"type": "string"}), |_| property["items"].clone()),
        );
        if let Some(max) = property["maxItems"].as_u64() {
            assert_accepts(
                tool,
                specs,
                with(&base, name, json!(vec![item.clone(); max as usize])),
            );
            assert_refuses(
                tool,
                specs,
                with(&base, name, json!(vec![item.clone(); max as usize + 1])),
                name,
            );
        }
        if let Some(max) = property["items"]["maxLength"].as_u64() {
            assert_accepts(tool, specs, with(&base, name, json!([char_string(max)])));
            assert_refuses(
                tool,
                specs,
                with(&base, name, json!([char_string(max + 1)])),
                name,
            );
        }
        if let Some(min) = property["items"]["minLength"].as_u64().filter(|&m| m > 0) {
            assert_refuses(
                tool,
                specs,
                with(&base, name, json!([char_string(min - 1)])),
                name,
            );
        }
        if let Some(max) = property["maximum"].as_i64() {
            assert_accepts(tool, specs, with(&base, name, json!(max)));
            assert_refuses(tool, specs, with(&base, name, json!(max + 1)), name);
        }
        if let Some(min) = property["minimum"].as_i64() {
            assert_accepts(tool, specs, with(&base, name, json!(min)));
            assert_refuses(tool, specs, with(&base, name, json!(min - 1)), name);
        }
        if property.get("pattern").is_some() {
            assert_refuses(tool, specs, with(&base, name, json!("line\nbreak")), name);
        }
        if property["items"].get("pattern").is_some() {
            assert_refuses(tool, specs, with(&base, name, json!(["line\nbreak"])), name);
        }
        let wrong_type = match declared_type(property) {
            Some("string") => json!(17),
            _ => json!("not the declared type"),
        };
        assert_refuses(tool, specs, with(&base, name, wrong_type), name);
        if let Some(default) = property.get("default") {
            assert_accepts(tool, specs, with(&base, name, default.clone()));
        }
    }
}

/// Each declared rule is advertised with the same value.
fn assert_rules_advertised(tool: &str, schema: &Value, specs: &[ArgSpec]) {
    for spec in specs {
        let property = &schema["properties"][spec.name];
        let rules = &spec.rules;
        let expect = |key: &str, value: Option<Value>| {
            assert_eq!(
                property.get(key).cloned(),
                value,
                "{tool}.{}: `{key}`",
                spec.name
            );
        };
        expect("minLength", rules.min_len.map(Value::from));
        expect("maxLength", rules.max_len.map(Value::from));
        expect("minItems", rules.min_items.map(Value::from));
        expect("maxItems", rules.max_items.map(Value::from));
        expect("minimum", rules.min.map(|m| json!(m as i64)));
        expect("maximum", rules.max.map(|m| json!(m as i64)));
        // On the property for a string, on its items for a list.
        let pattern = property.get("pattern").or(property["items"].get("pattern"));
        assert_eq!(pattern.is_some(), rules.single_line, "{tool}.{}", spec.name);
        assert_eq!(
            property["items"].get("maxLength").cloned(),
            rules.item_max_len.map(Value::from),
            "{tool}.{}",
            spec.name
        );
        let required = schema["required"]
            .as_array()
            .unwrap()
            .contains(&json!(spec.name));
        assert_eq!(
            required,
            spec.default.is_none(),
            "{tool}.{}: required",
            spec.name
        );
        assert_eq!(
            property["description"], spec.description,
            "{tool}.{}",
            spec.name
        );
    }
}

#[test]
fn every_tool_schema_matches_its_validation() {
    let registry = Registry::new(pkb_core::notes_declarations()).unwrap();
    let mut probed = 0;
    for tool in registry.tools() {
        let def = registry.tool(&tool.name).unwrap();
        let schema = Value::Object((*tool.input_schema).clone());
        assert_rules_advertised(&tool.name, &schema, def.args);
        probe(&tool.name, &schema, def.args);
        let output = tool
            .output_schema
            .as_ref()
            .expect("every tool has an outputSchema");
        assert_eq!(output.get("type"), Some(&json!("object")), "{}", tool.name);
        probed += 1;
    }
    assert_eq!(probed, 10, "the contract's ten tools are registered");
}

#[test]
fn prompt_arguments_match_their_validation() {
    let registry = Registry::new(pkb_core::notes_declarations()).unwrap();
    for prompt in registry.prompts() {
        let def = registry.prompt(&prompt.name).unwrap();
        for (argument, spec) in prompt.arguments.unwrap().iter().zip(def.args) {
            assert_eq!(argument.name, spec.name);
            assert_eq!(argument.required, Some(spec.default.is_none()));
        }
        let missing = validate_args(def.args, None);
        let required: Vec<_> = def.args.iter().filter(|a| a.default.is_none()).collect();
        assert_eq!(missing.is_err(), !required.is_empty());
    }
}

/// The places where a bare boolean is a keyword's value rather than a schema standing alone.
const BOOLEAN_VALUED: [&str; 4] = [
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];

/// Where `schema` breaks the MCP Inspector's `--strict` portability rules: a `type` array, or
/// a bare `true` or `false` where a schema object is expected.
fn unportable(schema: &Value, path: &str, keyword: Option<&str>, found: &mut Vec<String>) {
    match schema {
        Value::Bool(_) if keyword.is_some_and(|k| BOOLEAN_VALUED.contains(&k)) => {}
        Value::Bool(b) => found.push(format!("{path}: bare `{b}`")),
        Value::Object(object) => {
            if let Some(Value::Array(kinds)) = object.get("type") {
                found.push(format!("{path}: type {kinds:?}"));
            }
            for (key, value) in object {
                match (key.as_str(), value) {
                    (
                        "properties" | "patternProperties" | "dependentSchemas" | "$defs",
                        Value::Object(map),
                    ) => {
                        for (name, sub) in map {
                            unportable(sub, &format!("{path}.{key}.{name}"), Some(key), found);
                        }
                    }
                    ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(list)) => {
                        for (i, sub) in list.iter().enumerate() {
                            unportable(sub, &format!("{path}.{key}[{i}]"), Some(key), found);
                        }
                    }
                    (
                        "items"
                        | "contains"
                        | "not"
                        | "if"
                        | "then"
                        | "else"
                        | "propertyNames"
                        | "additionalProperties"
                        | "unevaluatedProperties",
                        sub,
                    ) => unportable(sub, &format!("{path}.{key}"), Some(key), found),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// `tools/list` passes the Inspector's `--strict` check: clients that map schemas onto a
/// single-type dialect (Gemini's function declarations) take every tool.
#[test]
fn every_schema_is_portable() {
    let registry = Registry::new(pkb_core::notes_declarations()).unwrap();
    let mut found = Vec::new();
    for tool in registry.tools() {
        let input = Value::Object((*tool.input_schema).clone());
        unportable(
            &input,
            &format!("{}.inputSchema", tool.name),
            None,
            &mut found,
        );
        if let Some(output) = &tool.output_schema {
            let output = Value::Object((**output).clone());
            unportable(
                &output,
                &format!("{}.outputSchema", tool.name),
                None,
                &mut found,
            );
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
