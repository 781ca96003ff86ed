//! What the examples' tests share.

/// The example `name` (target/<profile>/examples/<name>), built as `cargo test --workspace`
/// builds it: with the features of the whole workspace's tests. `cargo build -p pkb-examples
/// --example` would resolve them without the dev-dependencies' and rebuild half of the
/// workspace (a minute and a half in CI); after `cargo test --workspace` this is a no-op.
pub fn example_binary(name: &str) -> std::path::PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["test", "--workspace", "--no-run", "--quiet"])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the example {name} failed");
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(|p| p.parent()).expect("target dir");
    profile_dir.join("examples").join(name)
}
