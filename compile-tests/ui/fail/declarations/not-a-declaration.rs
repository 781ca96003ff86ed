use pkb_core::{Registry, declarations};

/// A plain fn, declared as nothing.
async fn helper() {}

fn main() {
    let _ = Registry::new(declarations![helper]);
}
