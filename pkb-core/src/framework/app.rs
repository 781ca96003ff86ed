//! What an application gives the framework's server: each user's state for its handlers, the
//! resources it lists beside the declared ones, and how it introduces itself.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{Implementation, Resource};

use super::context::AppState;
use crate::identity::User;

/// Resources an application lists after the declared fixed ones, a page at a time.
#[derive(Debug, Default)]
pub struct ResourcePage {
    /// At most the `limit` asked for.
    pub resources: Vec<Resource>,
    /// Where the next page starts, when there is one: passed back as `after`. The framework
    /// seals it into the client's cursor, so the application only ever sees its own.
    pub next_after: Option<String>,
}

/// The application behind an [`McpServer`](super::server::McpServer).
pub trait App: Send + Sync + 'static {
    /// What its handlers take as their state (`#[state] state: &State`): the server serves
    /// only declarations whose handlers take this type, or none.
    type State: Send + Sync + 'static;

    /// The state of the requests of `user`. An error is answered as an internal error, with
    /// its text.
    fn state_for<'a>(&'a self, user: &'a User) -> BoxFuture<'a, Result<Arc<Self::State>, String>>;

    /// How the server names itself in `initialize` and `server/discover`.
    fn implementation(&self) -> Implementation;

    /// What the server tells the client's model about itself.
    fn instructions(&self) -> Option<String> {
        None
    }

    /// Resources listed after the declared fixed ones, starting after `after` (the
    /// `next_after` of the page before, or `None` for the first page).
    fn list_resources<'a>(
        &'a self,
        state: &'a Self::State,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<ResourcePage, String>> {
        let _ = (state, after, limit);
        Box::pin(async { Ok(ResourcePage::default()) })
    }
}

/// An [`App`] as the server holds it, its state's type erased: one server type for every
/// application.
pub(crate) trait ServedApp: Send + Sync + 'static {
    fn state_for<'a>(&'a self, user: &'a User) -> BoxFuture<'a, Result<AppState, String>>;
    fn implementation(&self) -> Implementation;
    fn instructions(&self) -> Option<String>;
    fn list_resources<'a>(
        &'a self,
        state: &'a AppState,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<ResourcePage, String>>;
}

impl<A: App> ServedApp for A {
    fn state_for<'a>(&'a self, user: &'a User) -> BoxFuture<'a, Result<AppState, String>> {
        Box::pin(async move {
            let state = App::state_for(self, user).await?;
            Ok(state as AppState)
        })
    }

    fn implementation(&self) -> Implementation {
        App::implementation(self)
    }

    fn instructions(&self) -> Option<String> {
        App::instructions(self)
    }

    fn list_resources<'a>(
        &'a self,
        state: &'a AppState,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<ResourcePage, String>> {
        // The state is the one `state_for` made: it is always of this type.
        match state.downcast_ref::<A::State>() {
            Some(state) => App::list_resources(self, state, after, limit),
            None => Box::pin(async { Err("internal error: the request has another state".into()) }),
        }
    }
}

/// An application with no state of its own: its handlers need only what they are called
/// with, and it lists only what it declares.
pub struct Stateless {
    implementation: Implementation,
    instructions: Option<String>,
}

impl Stateless {
    /// An application introducing itself as `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        let mut implementation = Implementation::from_build_env();
        implementation.name = name.into();
        implementation.version = version.into();
        Self {
            implementation,
            instructions: None,
        }
    }

    /// The same application with a title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.implementation.title = Some(title.into());
        self
    }

    /// The same application, telling clients' models `instructions`.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }
}

impl App for Stateless {
    type State = ();

    fn state_for<'a>(&'a self, _user: &'a User) -> BoxFuture<'a, Result<Arc<()>, String>> {
        Box::pin(async { Ok(Arc::new(())) })
    }

    fn implementation(&self) -> Implementation {
        self.implementation.clone()
    }

    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }
}
