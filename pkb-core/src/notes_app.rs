//! PKB as an application of the framework: each user's note store as the state its handlers
//! reach, the notes listed as resources, and how PKB introduces itself.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{Implementation, Resource};

use crate::framework::access::ScopeNames;
use crate::framework::app::{App, ResourcePage};
use crate::identity::User;
use crate::resources::note_uri;
use crate::store::per_user::UserStores;
use crate::store::{Store, StoreError};
use crate::{
    Context, Declarations, ResourceError, ToolError, declarations, prompts, resources, tools,
};

/// PKB's scopes: `notes:read` to read notes, `notes:write` to change them.
pub const NOTES_SCOPES: ScopeNames = ScopeNames::new("notes:read", "notes:write");

/// PKB's tools, resources and prompt. They are declared with `collect = false`: a server
/// gets them only by asking, all of them here or each by its path
/// (`declarations![pkb_core::tools::fetch::fetch]`).
pub fn notes_declarations() -> Declarations<Store> {
    declarations![
        tools::delete::delete,
        tools::echo::echo,
        tools::edit::edit,
        tools::fetch::fetch,
        tools::history::history,
        tools::restore::restore,
        tools::search::search,
        tools::summarize::summarize,
        tools::summarize::summarize_and_save,
        tools::write::write,
        resources::history::note_history,
        resources::index::notes_index,
        resources::note::note_resource,
        prompts::quick_capture::quick_capture,
    ]
}

/// Whose notes a request reaches.
#[derive(Clone)]
pub enum NotesApp {
    /// One store for every request: one user.
    Shared(Store),
    /// Each authenticated user's own store.
    PerUser(Arc<UserStores>),
}

impl App for NotesApp {
    type State = Store;

    fn state_for<'a>(&'a self, user: &'a User) -> BoxFuture<'a, Result<Arc<Store>, String>> {
        Box::pin(async move {
            let store = match self {
                Self::Shared(store) => store.clone(),
                Self::PerUser(users) => users
                    .store_for(user)
                    .await
                    .map_err(|error| told(&error, "opening a user's store"))?,
            };
            Ok(Arc::new(store))
        })
    }

    fn implementation(&self) -> Implementation {
        let mut implementation = Implementation::from_build_env();
        implementation.name = "pkb".into();
        implementation.title = Some("PKB".into());
        implementation.version = env!("CARGO_PKG_VERSION").into();
        implementation
    }

    fn instructions(&self) -> Option<String> {
        Some(
            "PKB is a personal knowledge base. Use `search` to find notes by words (it returns \
             IDs and titles), `fetch` to read one, `write` to save one and `edit` to change part of \
             one. Every change is kept: `history` shows what changed and `restore` undoes it."
                .into(),
        )
    }

    /// The notes by ID, after the note ID `after`.
    fn list_resources<'a>(
        &'a self,
        store: &'a Store,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<ResourcePage, String>> {
        Box::pin(async move {
            let mut notes = store
                .list(after, limit + 1)
                .await
                .map_err(|error| told(&error, "listing resources"))?;
            let more = notes.len() > limit;
            notes.truncate(limit);
            let next_after = more.then(|| notes.last().map(|n| n.id.clone())).flatten();
            let resources = notes
                .into_iter()
                .map(|note| {
                    Resource::new(note_uri(&note.id), note.id.clone())
                        .with_title(note.title)
                        .with_mime_type("text/markdown")
                })
                .collect();
            Ok(ResourcePage {
                resources,
                next_after,
            })
        })
    }
}

/// The note store of the user a PKB handler serves.
pub trait NotesContext {
    /// The note store.
    fn store(&self) -> &Store;
    /// Who the request's changes are recorded as made by: the client's `<name> <version>`,
    /// or `unknown client`.
    fn client_label(&self) -> String;
}

impl NotesContext for Context {
    fn client_label(&self) -> String {
        match self.client_info() {
            Some(client) if !client.name.trim().is_empty() => {
                format!("{} {}", client.name.trim(), client.version.trim())
                    .trim_end()
                    .to_owned()
            }
            _ => crate::store::UNKNOWN_CLIENT.to_owned(),
        }
    }

    fn store(&self) -> &Store {
        // Every PKB server is made with a `NotesApp`, whose state is the store: without one,
        // the handler's panic is answered as an internal error of the call.
        self.state::<Store>()
            .expect("PKB's handlers are served with a NotesApp, whose state is the note store")
    }
}

impl From<StoreError> for ToolError {
    fn from(error: StoreError) -> Self {
        Self::new(told(&error, "a tool"))
    }
}

impl From<StoreError> for ResourceError {
    fn from(error: StoreError) -> Self {
        Self::Failed(told(&error, "a resource"))
    }
}

/// Logs a store's failure in `doing` whole, and gives what the client is told of it: without
/// the server's paths ([`StoreError::told_to_clients`]).
fn told(error: &StoreError, doing: &str) -> String {
    tracing::error!(%error, "store error in {doing}");
    format!("storage error: {}", error.told_to_clients())
}
