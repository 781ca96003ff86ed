//! Building the binaries the end-to-end tests run, as the `cargo test --workspace` running
//! them built them. Shared with the examples' tests (`#[path]`).

/// Runs `cargo test --workspace --no-run`: a no-op after the outer `cargo test --workspace`,
/// and with the features of the whole workspace's tests (`cargo build -p` would resolve them
/// without the dev-dependencies' and rebuild half of the workspace).
pub fn build_workspace_tests() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command.args(["test", "--workspace", "--no-run", "--quiet"]);
    // cargo gives a test its own package's variables (CARGO_PKG_NAME, CARGO_MANIFEST_DIR…).
    // Crates and build scripts that read them would see them changed and rebuild a third of
    // the workspace, over a minute in every test process.
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        let from_the_package = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|prefix| name_text.starts_with(prefix))
            || ["CARGO_TARGET_TMPDIR", "CARGO_PRIMARY_PACKAGE", "OUT_DIR"].contains(&&*name_text);
        if from_the_package {
            command.env_remove(&name);
        }
    }
    let status = command.status().expect("cargo runs");
    assert!(
        status.success(),
        "building the workspace's test binaries failed"
    );
}
