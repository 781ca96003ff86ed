//! `fetch`: one note by its exact id, as it is or as one of its versions was.

use schemars::JsonSchema;
use serde::Serialize;

use crate::links::{Backlink, Link};
use crate::note::Note;
use crate::store::{Store, VersionLookup};
use crate::{ToolError, pkb_tool};

/// What `fetch` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchOutput {
    /// The note, with its body.
    pub note: Note,
    /// The notes its body links to (`[[Title]]`, `[[id|label]]`, `pkb://notes/<id>`), in
    /// order, with `id` and `title` null where no note has that name (yet).
    pub links: Vec<Link>,
    /// The notes that link to it, sorted by ID.
    pub backlinks: Vec<Backlink>,
}

/// Fetches one note, with its full body, by its exact ID (as `search` returns it), with the
/// notes it links to and the notes that link to it: follow them with `fetch` too. With
/// `version`, that version of it as `history` lists it (also of a deleted note), with that
/// version's links.
#[pkb_tool(collect = false, read_only, idempotent)]
pub async fn fetch(
    #[state] store: &Store,
    /// The note's ID, for example `deploy-checklist`.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
    /// A version of the note to read instead of its current state.
    #[arg(default, min = 1)]
    version: Option<u64>,
) -> Result<FetchOutput, ToolError> {
    let Some(version) = version else {
        let found = store
            .get_with_links(&id)
            .await?
            .ok_or_else(|| not_found(&id))?;
        return Ok(FetchOutput {
            note: found.note,
            links: found.links,
            backlinks: found.backlinks,
        });
    };
    let note = match store.version(&id, version).await? {
        VersionLookup::Found(found) => found.note,
        VersionLookup::NoSuchVersion => return Err(no_such_version(&id, version)),
        VersionLookup::NoSuchNote => return Err(not_found(&id)),
    };
    Ok(FetchOutput {
        links: store.links_now(&note).await?,
        backlinks: store.backlinks(&id).await?,
        note,
    })
}

/// The contract's text for a missing note, shared by every tool that looks one up.
pub fn not_found(id: &str) -> ToolError {
    ToolError::new(format!("No note found with ID: {id}"))
}

/// The contract's text for a version a note never had.
pub fn no_such_version(id: &str, version: u64) -> ToolError {
    ToolError::new(format!("{id} has no version {version}"))
}
