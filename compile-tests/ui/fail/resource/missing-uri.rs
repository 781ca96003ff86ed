use pkb_core::{ResourceError, pkb_resource};

/// Every note.
#[pkb_resource(name = "notes")]
async fn notes() -> Result<String, ResourceError> {
    Ok(String::new())
}

fn main() {}
