//! Completions: the providers a template variable or a prompt argument declares, and what a
//! completion answers with.

use futures::future::BoxFuture;

use super::context::Context;

/// A completion provider: the context and the typed prefix, to at most 100 values.
pub type CompleteFn = fn(Context, String) -> BoxFuture<'static, Vec<String>>;

/// A completion provider attached to a template variable or prompt argument.
#[derive(Debug)]
pub struct CompletionDef {
    /// The variable or argument it completes.
    pub argument: &'static str,
    /// The provider.
    pub complete: CompleteFn,
}

/// The most values a completion answers with, as the MCP spec allows. A completion fn that
/// returns more has the first ones answered and `hasMore` set, so it may ask its source for
/// one more than this to find out whether there are more.
pub const MAX_COMPLETIONS: usize = 100;

/// The values a completion answers with.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// At most [`MAX_COMPLETIONS`] values.
    pub values: Vec<String>,
    /// Whether the completion fn had more than it answers with.
    pub has_more: bool,
}

/// What a completion request refers to.
#[derive(Debug, Clone, Copy)]
pub enum CompletionTarget<'a> {
    /// A prompt, by name.
    Prompt(&'a str),
    /// A resource template, by its URI template.
    ResourceTemplate(&'a str),
}
