use pkb_core::{ResourceError, pkb_resource};

/// One note.
#[pkb_resource(uri = "pkb://notes/{id}")]
async fn note(id: u32) -> Result<String, ResourceError> {
    Ok(id.to_string())
}

fn main() {}
