use pkb_core::{ResourceError, pkb_resource};

/// Every note.
#[pkb_resource(uri = "pkb://notes")]
async fn notes() -> Result<u32, ResourceError> {
    Ok(0)
}

fn main() {}
