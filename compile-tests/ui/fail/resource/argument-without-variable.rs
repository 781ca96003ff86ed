use pkb_core::{ResourceError, pkb_resource};

/// One note.
#[pkb_resource(uri = "pkb://notes/{id}")]
async fn note(id: String, version: String) -> Result<String, ResourceError> {
    Ok(format!("{id}@{version}"))
}

fn main() {}
