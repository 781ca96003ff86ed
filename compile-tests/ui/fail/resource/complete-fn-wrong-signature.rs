use pkb_core::{ResourceError, pkb_resource};

/// One note.
#[pkb_resource(uri = "pkb://notes/{id}", complete(id = complete_id))]
async fn note(id: String) -> Result<String, ResourceError> {
    Ok(id)
}

async fn complete_id(prefix: String) -> Vec<String> {
    vec![prefix]
}

fn main() {}
