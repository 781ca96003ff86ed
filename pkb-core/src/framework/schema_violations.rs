//! The rules a tool's `extend_schema` adds, enforced with the `jsonschema` crate, and told as
//! the argument specs tell theirs: `field: rule`, named by where the value is
//! (`replace.old`, or `arguments` for the call as a whole), without quoting values.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use rmcp::model::JsonObject;
use serde_json::Value;

use super::args::{ArgSpec, InvalidArguments, number_text, plural};

/// Every way `arguments` break the whole input schema (`schema`, compiled as `rules`) of a
/// tool with an extension. An optional argument sent as `null` counts as left out. A rule
/// of one argument's own that its spec states too (a length, a type) is left for the spec
/// to tell, as it tells it for every tool.
pub(super) fn schema_violations(
    rules: &Validator,
    schema: &Value,
    specs: &[ArgSpec],
    arguments: Option<&JsonObject>,
) -> Result<(), InvalidArguments> {
    let mut instance = arguments.cloned().unwrap_or_default();
    instance.retain(|name, value| {
        !value.is_null()
            || !specs
                .iter()
                .any(|spec| spec.name == name && spec.default.is_some())
    });
    let instance = Value::Object(instance);
    let mut invalid = InvalidArguments::default();
    for error in rules.iter_errors(&instance) {
        if !told_by_spec(&error) {
            describe(&error, schema, &mut invalid);
        }
    }
    if invalid.problems().is_empty() {
        Ok(())
    } else {
        Err(invalid)
    }
}

/// Whether an argument spec checks this too: a rule written on an argument itself
/// (`/properties/<name>/<keyword>`), or the required and unknown fields of the call.
fn told_by_spec(error: &ValidationError<'_>) -> bool {
    let path = error.schema_path().to_string();
    let steps: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match steps.as_slice() {
        ["required"] | ["additionalProperties"] => true,
        ["properties", _, keyword, ..] => !matches!(*keyword, "anyOf" | "oneOf" | "allOf"),
        _ => false,
    }
}

fn describe(error: &ValidationError<'_>, schema: &Value, invalid: &mut InvalidArguments) {
    let at = field_of(&error.instance_path().to_string());
    let schema_path = error.schema_path().to_string();
    let limit_text = |limit: &Value| {
        limit
            .as_f64()
            .map_or_else(|| limit.to_string(), number_text)
    };
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            invalid.push(joined(&at, name), "required");
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for name in unexpected {
                invalid.push(joined(&at, name), "unknown field");
            }
        }
        ValidationErrorKind::MinLength { limit } => invalid.push(
            named(&at),
            format!("must be at least {}", plural(count(*limit), "character")),
        ),
        ValidationErrorKind::MaxLength { limit } => invalid.push(
            named(&at),
            format!("must be at most {}", plural(count(*limit), "character")),
        ),
        ValidationErrorKind::MinItems { limit } => invalid.push(
            named(&at),
            format!("must have at least {}", plural(count(*limit), "item")),
        ),
        ValidationErrorKind::MaxItems { limit } => invalid.push(
            named(&at),
            format!("must have at most {}", plural(count(*limit), "item")),
        ),
        ValidationErrorKind::Minimum { limit } => {
            invalid.push(
                named(&at),
                format!("must be at least {}", limit_text(limit)),
            );
        }
        ValidationErrorKind::Maximum { limit } => {
            invalid.push(named(&at), format!("must be at most {}", limit_text(limit)));
        }
        ValidationErrorKind::Type {
            kind: TypeKind::Single(expected),
        } => invalid.push(named(&at), format!("must be of type {expected}")),
        // `{"not": {}}` is the always-false schema as an object, which portable schemas use
        // in place of a bare `false`.
        ValidationErrorKind::FalseSchema | ValidationErrorKind::Not { .. } => {
            let rule = match given_with(&schema_path) {
                Some(other) => format!("cannot be given with {other}"),
                None => "not allowed".to_owned(),
            };
            invalid.push(named(&at), rule);
        }
        ValidationErrorKind::AnyOf { context } => {
            let branches = schema
                .pointer(&schema_path)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if let Some(names) = one_required_each(branches) {
                invalid.push(
                    named(&at),
                    format!("give at least one of {}", names.join(", ")),
                );
            } else if branches.iter().any(is_null_type) && branches.len() == context.len() {
                // A nullable value: what its other branches found.
                for (branch, errors) in branches.iter().zip(context) {
                    if !is_null_type(branch) {
                        errors.iter().for_each(|e| describe(e, schema, invalid));
                    }
                }
            } else {
                invalid.push(named(&at), error.masked().to_string());
            }
        }
        _ => invalid.push(named(&at), error.masked().to_string()),
    }
}

/// `replace.old` for the instance path `/replace/old`; empty for the call itself.
fn field_of(instance_path: &str) -> String {
    instance_path.trim_start_matches('/').replace('/', ".")
}

fn named(field: &str) -> String {
    if field.is_empty() {
        "arguments".to_owned()
    } else {
        field.to_owned()
    }
}

fn joined(field: &str, name: &str) -> String {
    if field.is_empty() {
        name.to_owned()
    } else {
        format!("{field}.{name}")
    }
}

fn count(limit: u64) -> usize {
    usize::try_from(limit).unwrap_or(usize::MAX)
}

/// The property whose presence forbids this one, for a `false` schema reached through
/// `dependentSchemas/<property>/properties/<this>`.
fn given_with(schema_path: &str) -> Option<&str> {
    let (_, after) = schema_path.split_once("/dependentSchemas/")?;
    let (property, rest) = after.split_once('/')?;
    rest.starts_with("properties/").then_some(property)
}

/// The names of `anyOf` branches that each only require one property: "at least one of".
fn one_required_each(branches: &[Value]) -> Option<Vec<&str>> {
    if branches.is_empty() {
        return None;
    }
    branches
        .iter()
        .map(
            |branch| match branch.get("required")?.as_array()?.as_slice() {
                [name] => name.as_str(),
                _ => None,
            },
        )
        .collect()
}

fn is_null_type(branch: &Value) -> bool {
    branch.get("type").and_then(Value::as_str) == Some("null")
}
