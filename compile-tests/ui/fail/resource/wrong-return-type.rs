use pkb_core::{ResourceError, pkb_resource};

/// Every note.
#[pkb_resource(uri = "pkb://notes")]
async fn notes() -> Result<Vec<u8>, ResourceError> {
    Ok(Vec::new())
}

fn main() {}
