use pkb_core::{ResourceError, pkb_resource};

/// One note.
#[pkb_resource(uri = "pkb://notes/{id}")]
async fn note(#[arg(max_len = 40)] id: String) -> Result<String, ResourceError> {
    Ok(id)
}

fn main() {}
