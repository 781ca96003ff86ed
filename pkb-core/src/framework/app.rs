//! What an application gives the framework's server: each user's state for its handlers, the
//! resources it lists beside the declared ones, and how it introduces itself.

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
    /// The state handlers of a request by `user` reach through
    /// [`Context::state`](super::context::Context::state). An error is answered as an
    /// internal error, with its text.
    fn state_for<'a>(&'a self, user: &'a User) -> BoxFuture<'a, Result<AppState, String>>;

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
        state: &'a AppState,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<ResourcePage, String>> {
        let _ = (state, after, limit);
        Box::pin(async { Ok(ResourcePage::default()) })
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
    fn state_for<'a>(&'a self, _user: &'a User) -> BoxFuture<'a, Result<AppState, String>> {
        Box::pin(async { Ok(std::sync::Arc::new(()) as AppState) })
    }

    fn implementation(&self) -> Implementation {
        self.implementation.clone()
    }

    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }
}
