use pkb_core::{ResourceError, pkb_resource};

/// One note.
#[pkb_resource(uri = "pkb://notes/{id}")]
async fn note() -> Result<String, ResourceError> {
    Ok(String::new())
}

fn main() {}
