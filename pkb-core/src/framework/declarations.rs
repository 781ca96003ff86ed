//! What a server serves, chosen explicitly: a set of declarations built from their names with
//! [`declarations!`](crate::declarations), merged with `+`, filtered by name; or, as a
//! convenience, every declaration linked crates left to be collected.

use std::ops::{Add, AddAssign};

use super::prompt::PromptDef;
use super::registry::{PromptRegistration, ResourceRegistration, ToolRegistration};
use super::resource::ResourceDef;
use super::tool::ToolDef;

/// One tool, resource or prompt, as its attribute declared it.
#[derive(Clone, Copy, Debug)]
pub enum Declaration {
    /// A `#[pkb_tool]`.
    Tool(&'static ToolDef),
    /// A `#[pkb_resource]`.
    Resource(&'static ResourceDef),
    /// A `#[pkb_prompt]`.
    Prompt(&'static PromptDef),
}

impl Declaration {
    /// The name it is served under.
    pub fn name(&self) -> &'static str {
        match self {
            Declaration::Tool(def) => def.name,
            Declaration::Resource(def) => def.name,
            Declaration::Prompt(def) => def.name,
        }
    }

    /// `tool`, `resource` or `prompt`.
    pub fn kind(&self) -> &'static str {
        match self {
            Declaration::Tool(_) => "tool",
            Declaration::Resource(_) => "resource",
            Declaration::Prompt(_) => "prompt",
        }
    }

    /// The module it was declared in, as `module_path!()` gives it.
    pub fn module(&self) -> &'static str {
        match self {
            Declaration::Tool(def) => def.module,
            Declaration::Resource(def) => def.module,
            Declaration::Prompt(def) => def.module,
        }
    }

    fn same(&self, other: &Declaration) -> bool {
        match (self, other) {
            (Declaration::Tool(a), Declaration::Tool(b)) => std::ptr::eq(*a, *b),
            (Declaration::Resource(a), Declaration::Resource(b)) => std::ptr::eq(*a, *b),
            (Declaration::Prompt(a), Declaration::Prompt(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

/// The tools, resources and prompts a server serves, in the order they were added. A
/// declaration added twice is kept once; two different ones of a kind with one name are
/// refused when the [`Registry`](super::registry::Registry) is built.
///
/// ```
/// use pkb_core::{Context, Declarations, ToolError, declarations, pkb_tool};
///
/// /// Says hello.
/// #[pkb_tool(read_only)]
/// async fn hello(_ctx: &Context) -> Result<String, ToolError> {
///     Ok("hello".into())
/// }
///
/// /// Says goodbye.
/// #[pkb_tool(read_only)]
/// async fn goodbye(_ctx: &Context) -> Result<String, ToolError> {
///     Ok("goodbye".into())
/// }
///
/// let both = declarations![hello] + declarations![goodbye];
/// assert_eq!(both.names().collect::<Vec<_>>(), ["hello", "goodbye"]);
/// let polite = both.without(&["goodbye"]);
/// assert_eq!(polite.names().collect::<Vec<_>>(), ["hello"]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Declarations {
    items: Vec<Declaration>,
}

impl Declarations {
    /// No declarations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every declaration of every linked crate, except those declared with `collect = false`
    /// (as a library's are, such as PKB's notes tools): what a small binary that serves
    /// everything it declares wants.
    pub fn collected() -> Self {
        let tools = inventory::iter::<ToolRegistration>
            .into_iter()
            .map(|r| Declaration::Tool(r.0));
        let resources = inventory::iter::<ResourceRegistration>
            .into_iter()
            .map(|r| Declaration::Resource(r.0));
        let prompts = inventory::iter::<PromptRegistration>
            .into_iter()
            .map(|r| Declaration::Prompt(r.0));
        tools.chain(resources).chain(prompts).collect()
    }

    /// The same set with `declaration` added.
    pub fn with(mut self, declaration: Declaration) -> Self {
        self.push(declaration);
        self
    }

    /// Those whose name is not one of `names`.
    pub fn without(self, names: &[&str]) -> Self {
        self.filter(|declaration| !names.contains(&declaration.name()))
    }

    /// Those whose name is one of `names`.
    pub fn only(self, names: &[&str]) -> Self {
        self.filter(|declaration| names.contains(&declaration.name()))
    }

    /// Those declared in `module` or a module inside it, such as `"my_server"` or
    /// `"my_server::fixtures"`.
    pub fn in_module(self, module: &str) -> Self {
        self.filter(|declaration| {
            declaration
                .module()
                .strip_prefix(module)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        })
    }

    /// Those `keep` says yes to.
    pub fn filter(mut self, keep: impl Fn(&Declaration) -> bool) -> Self {
        self.items.retain(keep);
        self
    }

    /// Each declaration, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = Declaration> + '_ {
        self.items.iter().copied()
    }

    /// Each declaration's name, in the order added.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.items.iter().map(Declaration::name)
    }

    fn push(&mut self, declaration: Declaration) {
        if !self.items.iter().any(|known| known.same(&declaration)) {
            self.items.push(declaration);
        }
    }
}

impl FromIterator<Declaration> for Declarations {
    fn from_iter<I: IntoIterator<Item = Declaration>>(iter: I) -> Self {
        let mut declarations = Self::new();
        declarations.extend(iter);
        declarations
    }
}

impl Extend<Declaration> for Declarations {
    fn extend<I: IntoIterator<Item = Declaration>>(&mut self, iter: I) {
        for declaration in iter {
            self.push(declaration);
        }
    }
}

impl Add for Declarations {
    type Output = Declarations;

    fn add(mut self, other: Declarations) -> Declarations {
        self += other;
        self
    }
}

impl AddAssign for Declarations {
    fn add_assign(&mut self, other: Declarations) {
        self.extend(other.items);
    }
}
