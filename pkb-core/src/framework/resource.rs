//! Resources: the definition a `#[pkb_resource]` fn registers, and URI template matching.

use futures::future::BoxFuture;

use super::completion::CompletionDef;
use super::context::Context;
use super::state::StateTypeFn;

/// The generated entry point of a resource: the template's variable values in order.
pub type ResourceReadFn =
    fn(Context, Vec<String>) -> BoxFuture<'static, Result<ResourceBody, ResourceError>>;

/// A resource's contents: text, or bytes (sent base64 as a `blob`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// Text contents.
    Text(String),
    /// Binary contents.
    Blob(Vec<u8>),
}

/// A resource or resource template, as declared by one `#[pkb_resource]` fn.
#[derive(Debug)]
pub struct ResourceDef {
    /// The module the fn is declared in, as `module_path!()` names it.
    pub module: &'static str,
    /// The URI, or the URI template when it has `{variables}`.
    pub uri: &'static str,
    /// The resource's name.
    pub name: &'static str,
    /// A human-readable title.
    pub title: Option<&'static str>,
    /// The doc comment of the fn.
    pub description: &'static str,
    /// The MIME type of the contents.
    pub mime_type: Option<&'static str>,
    /// The literal text around the template's variables, one piece more than there are
    /// variables (the whole URI when it has none), as the macro parsed it.
    pub literals: &'static [&'static str],
    /// The template's variables, in the order they appear.
    pub variables: &'static [&'static str],
    /// Reads the contents.
    pub read: ResourceReadFn,
    /// Completion providers for template variables.
    pub completions: &'static [CompletionDef],
    /// The application state its handler takes (`#[state]`), if it takes one.
    pub state: Option<StateTypeFn>,
}

impl ResourceDef {
    /// Whether this is a template (has variables).
    pub fn is_template(&self) -> bool {
        !self.variables.is_empty()
    }

    /// The variable values if `uri` matches this resource, in template order.
    pub fn match_uri(&self, uri: &str) -> Option<Vec<String>> {
        match_literals(self.literals, uri)
    }
}

/// Matches `uri` against a template split into `literals` around its variables; each
/// variable takes one non-empty path segment.
fn match_literals(literals: &[&str], uri: &str) -> Option<Vec<String>> {
    let (first, between) = literals.split_first()?;
    let mut rest = uri.strip_prefix(first)?;
    let mut values = Vec::with_capacity(between.len());
    for literal in between {
        let end = if literal.is_empty() {
            rest.len()
        } else {
            rest.find(literal)?
        };
        let value = &rest[..end];
        if value.is_empty() || value.contains('/') {
            return None;
        }
        values.push(value.to_string());
        rest = &rest[end + literal.len()..];
    }
    rest.is_empty().then_some(values)
}

/// Why a resource could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// Nothing lives at this URI: answered with JSON-RPC -32002 and `data.uri`.
    #[error("resource not found")]
    NotFound,
    /// Reading failed: answered with an internal error.
    #[error("{0}")]
    Failed(String),
}

/// What a `#[pkb_resource]` fn returns: text as `Result<String, ResourceError>`, bytes as
/// `Result<Vec<u8>, ResourceError>`, or either as `Result<ResourceBody, ResourceError>`.
#[diagnostic::on_unimplemented(
    message = "a `#[pkb_resource]` fn must return `Result<T, ResourceError>`, where `T` is `String` (text), `Vec<u8>` (bytes) or `ResourceBody`",
    label = "found `{Self}`"
)]
pub trait ResourceReturn {
    /// The contents, or why there are none.
    fn into_body(self) -> Result<ResourceBody, ResourceError>;
}

impl ResourceReturn for Result<String, ResourceError> {
    fn into_body(self) -> Result<ResourceBody, ResourceError> {
        self.map(ResourceBody::Text)
    }
}

impl ResourceReturn for Result<Vec<u8>, ResourceError> {
    fn into_body(self) -> Result<ResourceBody, ResourceError> {
        self.map(ResourceBody::Blob)
    }
}

impl ResourceReturn for Result<ResourceBody, ResourceError> {
    fn into_body(self) -> Result<ResourceBody, ResourceError> {
        self
    }
}

/// Moves the variable at `index` out of the matched values.
pub fn take_variable(values: &mut [String], index: usize) -> String {
    values
        .get_mut(index)
        .map(std::mem::take)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::match_literals;

    #[test]
    fn matches_templates() {
        assert_eq!(
            match_literals(&["pkb://notes/", ""], "pkb://notes/todo"),
            Some(vec!["todo".into()])
        );
        assert_eq!(match_literals(&["pkb://notes/", ""], "pkb://notes/"), None);
        assert_eq!(
            match_literals(&["pkb://notes/", ""], "pkb://notes/a/b"),
            None
        );
        assert_eq!(match_literals(&["pkb://notes/", ""], "pkb://other/a"), None);
        assert_eq!(
            match_literals(&["pkb://notes"], "pkb://notes"),
            Some(vec![])
        );
        assert_eq!(match_literals(&["pkb://notes"], "pkb://notes/x"), None);
        assert_eq!(
            match_literals(&["a://", "/y/", ""], "a://1/y/2"),
            Some(vec!["1".into(), "2".into()])
        );
        assert_eq!(
            match_literals(&["a://", ".md"], "a://note.md"),
            Some(vec!["note".into()])
        );
    }
}
