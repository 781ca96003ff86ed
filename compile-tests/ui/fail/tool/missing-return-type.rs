use pkb_core::pkb_tool;

/// Does nothing.
#[pkb_tool]
async fn noop() {}

fn main() {}
