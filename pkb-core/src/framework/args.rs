//! Client arguments: the rules declared once at each argument, enforced before the handler
//! runs, and rendered into the input schema from the same values (see [`super::schema`]).

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The declared rules of one argument. `None` means "no such rule".
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ArgRules {
    /// Trim whitespace from the string (or from each string item) before every other rule.
    pub trim: bool,
    /// The string must hold no control characters (so no line breaks).
    pub single_line: bool,
    /// Fewest characters of a string (Unicode scalar values, not bytes).
    pub min_len: Option<usize>,
    /// Most characters of a string.
    pub max_len: Option<usize>,
    /// Fewest items of a list.
    pub min_items: Option<usize>,
    /// Most items of a list.
    pub max_items: Option<usize>,
    /// Fewest characters of each string item of a list.
    pub item_min_len: Option<usize>,
    /// Most characters of each string item of a list.
    pub item_max_len: Option<usize>,
    /// Smallest number allowed.
    pub min: Option<f64>,
    /// Largest number allowed.
    pub max: Option<f64>,
}

/// One argument as declared on a handler fn: name, description, rules, default and type.
#[derive(Clone, Copy)]
pub struct ArgSpec {
    /// The JSON property name.
    pub name: &'static str,
    /// The HTTP header that mirrors the argument over Streamable HTTP (`Mcp-Param-{header}`,
    /// SEP-2243), stated in the schema as `x-mcp-header`.
    pub header: Option<&'static str>,
    /// The doc comment of the argument.
    pub description: &'static str,
    /// The declared constraints.
    pub rules: ArgRules,
    /// The default used when the client omits the argument; `None` makes it required.
    pub default: Option<fn() -> Value>,
    /// The JSON Schema of the argument's Rust type, before the rules are added.
    pub schema: fn(&mut SchemaGenerator) -> Schema,
    /// Whether a JSON value deserializes into the argument's Rust type.
    pub accepts: fn(&Value) -> bool,
}

impl fmt::Debug for ArgSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgSpec")
            .field("name", &self.name)
            .field("rules", &self.rules)
            .field("required", &self.default.is_none())
            .finish_non_exhaustive()
    }
}

/// Every problem found in one set of arguments, in declaration order, unknown fields last.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InvalidArguments {
    problems: Vec<(String, String)>,
}

impl InvalidArguments {
    pub(crate) fn push(&mut self, field: impl Into<String>, rule: impl Into<String>) {
        self.problems.push((field.into(), rule.into()));
    }

    /// The `(field, rule)` pairs.
    pub fn problems(&self) -> &[(String, String)] {
        &self.problems
    }
}

impl fmt::Display for InvalidArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid arguments: ")?;
        for (index, (field, rule)) in self.problems.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{field}: {rule}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidArguments {}

/// Checks `arguments` against `specs` and returns one normalised value per spec (trimmed,
/// defaults filled in), or every problem found.
pub fn validate_args(
    specs: &[ArgSpec],
    arguments: Option<Map<String, Value>>,
) -> Result<Vec<Value>, InvalidArguments> {
    let mut arguments = arguments.unwrap_or_default();
    let mut invalid = InvalidArguments::default();
    let mut values = Vec::with_capacity(specs.len());
    for spec in specs {
        // A JSON null is a value like any other: the schema gives optional arguments a
        // default, not a null type, so null is refused unless the type takes it (`Option`).
        let given = arguments.remove(spec.name);
        let value = match (given, spec.default) {
            (Some(value), _) => value,
            (None, Some(default)) => {
                values.push(default());
                continue;
            }
            (None, None) => {
                invalid.push(spec.name, "required");
                values.push(Value::Null);
                continue;
            }
        };
        values.push(check_value(spec, value, &mut invalid));
    }
    let mut unknown: Vec<String> = arguments.into_iter().map(|(key, _)| key).collect();
    unknown.sort();
    for key in unknown {
        invalid.push(key, "unknown field");
    }
    if invalid.problems.is_empty() {
        Ok(values)
    } else {
        Err(invalid)
    }
}

fn check_value(spec: &ArgSpec, mut value: Value, invalid: &mut InvalidArguments) -> Value {
    let rules = &spec.rules;
    if rules.trim {
        trim_strings(&mut value);
    }
    if !(spec.accepts)(&value) {
        // `10.0` is an integer to JSON Schema, though not to serde.
        if let Some(whole) = whole_number(&value)
            && (spec.accepts)(&whole)
        {
            value = whole;
        } else {
            // A number past a declared bound breaks that bound, whatever else it breaks
            // (4294967297 is out of a `u32`'s range too, but the rule is `at most 50`).
            if !(matches!(value, Value::Number(_)) && check_range(spec, &value, invalid)) {
                invalid.push(spec.name, type_rule(spec));
            }
            return value;
        }
    }
    match &value {
        Value::String(text) => check_text(
            spec.name,
            text,
            rules.min_len,
            rules.max_len,
            rules.single_line,
            invalid,
        ),
        Value::Array(items) => {
            if let Some(min) = rules.min_items
                && items.len() < min
            {
                invalid.push(
                    spec.name,
                    format!("must have at least {}", plural(min, "item")),
                );
            }
            if let Some(max) = rules.max_items
                && items.len() > max
            {
                invalid.push(
                    spec.name,
                    format!("must have at most {}", plural(max, "item")),
                );
            }
            for (index, item) in items.iter().enumerate() {
                if let Value::String(text) = item {
                    let field = format!("{}[{index}]", spec.name);
                    check_text(
                        &field,
                        text,
                        rules.item_min_len,
                        rules.item_max_len,
                        rules.single_line,
                        invalid,
                    );
                }
            }
        }
        Value::Number(_) => {
            check_range(spec, &value, invalid);
        }
        _ => {}
    }
    value
}

/// Checks a number against the declared `min` and `max`; whether it broke one.
fn check_range(spec: &ArgSpec, value: &Value, invalid: &mut InvalidArguments) -> bool {
    let Some(n) = value.as_f64() else {
        return false;
    };
    let mut broken = false;
    if let Some(min) = spec.rules.min
        && n < min
    {
        invalid.push(spec.name, format!("must be at least {}", number_text(min)));
        broken = true;
    }
    if let Some(max) = spec.rules.max
        && n > max
    {
        invalid.push(spec.name, format!("must be at most {}", number_text(max)));
        broken = true;
    }
    broken
}

/// A number written with a fraction of zero (`10.0`) as the integer it is.
fn whole_number(value: &Value) -> Option<Value> {
    let n = value.as_number()?;
    if !n.is_f64() {
        return None;
    }
    let f = n.as_f64()?;
    // Within 2^53 every whole f64 is exactly an i64.
    (f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0).then(|| Value::from(f as i64))
}

fn check_text(
    field: &str,
    text: &str,
    min_len: Option<usize>,
    max_len: Option<usize>,
    single_line: bool,
    invalid: &mut InvalidArguments,
) {
    let chars = text.chars().count();
    if let Some(min) = min_len
        && chars < min
    {
        invalid.push(
            field,
            format!("must be at least {}", plural(min, "character")),
        );
    }
    if let Some(max) = max_len
        && chars > max
    {
        invalid.push(
            field,
            format!("must be at most {}", plural(max, "character")),
        );
    }
    if single_line && let Some(problem) = crate::text::single_line_problem(text) {
        invalid.push(field, problem);
    }
}

fn trim_strings(value: &mut Value) {
    match value {
        Value::String(text) => {
            let trimmed = text.trim();
            if trimmed.len() != text.len() {
                *text = trimmed.to_string();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(trim_strings),
        _ => {}
    }
}

/// JSON Schema draft 2020-12, as MCP requires: how every argument's type is rendered, in its
/// schema and in the rule its violations are told.
pub(crate) fn schema_settings() -> schemars::generate::SchemaSettings {
    schemars::generate::SchemaSettings::draft2020_12()
        .with_transform(schemars::transform::RecursiveTransform(without_null_type))
}

/// An `Option<T>` argument as `T`: it is optional by being left out of `required`, and a
/// `type: [T, "null"]` is refused by clients that map schemas onto a single-type dialect
/// (the MCP Inspector's `--strict` check warns of it). A `null` sent is still taken as absent.
fn without_null_type(schema: &mut Schema) {
    if let Some(object) = schema.as_object_mut() {
        single_type(object);
    }
}

/// `object`'s `type` without `"null"`: see [`schema_settings`]. The generator's transforms
/// reach only definitions, so the input schema applies it to each argument's own schema too.
pub(crate) fn single_type(object: &mut Map<String, Value>) {
    if let Some(Value::Array(kinds)) = object.get_mut("type") {
        kinds.retain(|kind| kind != "null");
        if let [kind] = kinds.as_slice() {
            let kind = kind.clone();
            object.insert("type".into(), kind);
        }
    }
}

/// "must be a string", "must be an array of strings", ... from the type's own schema.
fn type_rule(spec: &ArgSpec) -> String {
    let mut generator = schema_settings().into_generator();
    let schema = (spec.schema)(&mut generator);
    // A type of the fn's crate (an enum, a struct) is a reference to its definition.
    let referenced = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.rsplit('/').next())
        .and_then(|name| generator.definitions().get(name).cloned());
    let described = referenced.as_ref().unwrap_or(schema.as_value());
    format!("must be {}", describe_type(described, 0))
}

fn describe_type(schema: &Value, depth: usize) -> String {
    let kind = |name: &str| match name {
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "a boolean",
        "array" => "an array",
        "object" => "an object",
        "null" => "null",
        _ => "a value of the declared type",
    };
    match schema.get("type") {
        Some(Value::String(name)) if name == "array" && depth == 0 => {
            match schema.get("items").and_then(|items| items.get("type")) {
                Some(Value::String(item)) => format!(
                    "an array of {}s",
                    kind(item)
                        .trim_start_matches("an ")
                        .trim_start_matches("a ")
                ),
                _ => "an array".into(),
            }
        }
        Some(Value::String(name)) => {
            let minimum = schema.get("minimum").and_then(Value::as_f64);
            if name == "integer" && minimum == Some(0.0) {
                "a non-negative integer".into()
            } else {
                kind(name).into()
            }
        }
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .map(kind)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => {
            // An enum of unit variants: `enum`, or `oneOf` of `const`s (with their docs).
            let consts = schema
                .get("oneOf")
                .and_then(Value::as_array)
                .and_then(|options| options.iter().map(|o| o.get("const").cloned()).collect());
            match schema
                .get("enum")
                .and_then(Value::as_array)
                .cloned()
                .or(consts)
            {
                Some(options) => format!(
                    "one of {}",
                    options
                        .iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => "a value of the declared type".into(),
            }
        }
    }
}

pub(crate) fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

pub(crate) fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// Deserializes one validated value. Validation already proved it fits, so an error here
/// means the declaration and the type disagree; it is still reported, never a panic.
pub fn from_validated<T: DeserializeOwned>(
    value: Option<Value>,
    spec: &ArgSpec,
) -> Result<T, InvalidArguments> {
    serde_json::from_value(value.unwrap_or(Value::Null)).map_err(|_| {
        let mut invalid = InvalidArguments::default();
        invalid.push(spec.name, type_rule(spec));
        invalid
    })
}

/// The schema of `T` as an argument type.
pub fn arg_schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// Whether `value` deserializes into `T`.
pub fn arg_accepts<T: DeserializeOwned>(value: &Value) -> bool {
    T::deserialize(value).is_ok()
}

/// A default value as JSON, for the schema's `default` and for omitted arguments.
pub fn default_json<T: Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
