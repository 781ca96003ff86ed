use pkb_core::{Context, ResourceError, pkb_resource};

/// One note.
#[pkb_resource(uri = "pkb://notes/{id}", complete(note_id = complete_id))]
async fn note(id: String) -> Result<String, ResourceError> {
    Ok(id)
}

async fn complete_id(_ctx: &Context, prefix: String) -> Vec<String> {
    vec![prefix]
}

fn main() {}
