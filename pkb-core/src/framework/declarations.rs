//! What a server serves, chosen explicitly: a set of declarations built from their names with
//! [`declarations!`](crate::declarations), merged with `+`, filtered by name; or, as a
//! convenience, every declaration linked crates left to be collected.
//!
//! A set is typed by the application state its handlers take (`#[state] store: &Store`), so
//! naming a declaration whose handler takes another state than the server's fails to compile
//! at its name.

use std::marker::PhantomData;
use std::ops::{Add, AddAssign};

use super::prompt::PromptDef;
use super::resource::ResourceDef;
use super::state::StateType;
use super::tool::ToolDef;

/// The declaration of a handler that takes no application state: it can be served with any.
/// What `#[pkb_tool]` and its siblings make beside such a fn.
#[derive(Debug)]
pub struct Declared(pub Declaration);

/// The declaration of a handler that takes the application state `S` (`#[state] s: &S`): it
/// can be served only by a server whose application gives an `S`.
pub struct DeclaredWith<S: 'static> {
    declaration: Declaration,
    state: PhantomData<fn(&S)>,
}

impl<S: 'static> DeclaredWith<S> {
    /// The declaration of a handler taking `S`.
    pub const fn new(declaration: Declaration) -> Self {
        Self {
            declaration,
            state: PhantomData,
        }
    }
}

/// A declaration that a server whose application state is `S` can serve.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be served with the state `{S}`",
    label = "its handler takes another state than this server's",
    note = "a handler's `#[state]` parameter must take `&{S}`, the `State` of the server's `App`"
)]
pub trait ServedWith<S: ?Sized> {
    /// The declaration.
    fn declaration(&self) -> Declaration;
}

impl<S: ?Sized> ServedWith<S> for Declared {
    fn declaration(&self) -> Declaration {
        self.0
    }
}

impl<S: 'static> ServedWith<S> for DeclaredWith<S> {
    fn declaration(&self) -> Declaration {
        self.declaration
    }
}

/// Submitted by each `#[pkb_tool]` expansion.
pub struct ToolRegistration(pub &'static ToolDef);
/// Submitted by each `#[pkb_resource]` expansion.
pub struct ResourceRegistration(pub &'static ResourceDef);
/// Submitted by each `#[pkb_prompt]` expansion.
pub struct PromptRegistration(pub &'static PromptDef);

inventory::collect!(ToolRegistration);
inventory::collect!(ResourceRegistration);
inventory::collect!(PromptRegistration);

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

    /// The application state its handler takes, if it takes one.
    pub fn state(&self) -> Option<StateType> {
        let state = match self {
            Declaration::Tool(def) => def.state,
            Declaration::Resource(def) => def.state,
            Declaration::Prompt(def) => def.state,
        };
        state.map(|state_type| state_type())
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

/// The tools, resources and prompts a server serves, in the order they were added, for an
/// application whose state is `S`. A declaration added twice is kept once; two different ones
/// of a kind with one name are refused when the [`Registry`](super::registry::Registry) is
/// built. A set whose handlers take no state can be served with any `S`: `Declarations`
/// alone, as a type, is `Declarations<()>`.
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
/// let both: Declarations = declarations![hello] + declarations![goodbye];
/// assert_eq!(both.names().collect::<Vec<_>>(), ["hello", "goodbye"]);
/// let polite = both.without(&["goodbye"]);
/// assert_eq!(polite.names().collect::<Vec<_>>(), ["hello"]);
/// ```
pub struct Declarations<S: ?Sized = ()> {
    items: Vec<Declaration>,
    state: PhantomData<fn(&S)>,
}

impl<S: ?Sized> Clone for Declarations<S> {
    fn clone(&self) -> Self {
        Self {
            items: self.items.clone(),
            state: PhantomData,
        }
    }
}

impl<S: ?Sized> Default for Declarations<S> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            state: PhantomData,
        }
    }
}

impl<S: ?Sized> std::fmt::Debug for Declarations<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl<S: ?Sized> Declarations<S> {
    /// No declarations.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same set with `declared` added: what `declarations!` calls for each name, so that a
    /// declaration needing another state fails to compile there.
    pub fn with<D: ServedWith<S>>(mut self, declared: &D) -> Self {
        self.push(declared.declaration());
        self
    }

    /// Every declaration of every linked crate, except those declared with `collect = false`
    /// (as a library's are, such as PKB's notes tools): what a small binary that serves
    /// everything it declares wants. Their states are checked when the registry is built,
    /// not at compile time.
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
        Self::from_declarations(tools.chain(resources).chain(prompts))
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

    fn from_declarations(declarations: impl IntoIterator<Item = Declaration>) -> Self {
        let mut set = Self::new();
        for declaration in declarations {
            set.push(declaration);
        }
        set
    }

    fn push(&mut self, declaration: Declaration) {
        if !self.items.iter().any(|known| known.same(&declaration)) {
            self.items.push(declaration);
        }
    }
}

impl<S: ?Sized> Add for Declarations<S> {
    type Output = Declarations<S>;

    fn add(mut self, other: Declarations<S>) -> Declarations<S> {
        self += other;
        self
    }
}

impl<S: ?Sized> AddAssign for Declarations<S> {
    fn add_assign(&mut self, other: Declarations<S>) {
        for declaration in other.items {
            self.push(declaration);
        }
    }
}
