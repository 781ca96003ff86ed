//! What the examples' tests share.

#[path = "../../../tests/tests/support/workspace_build.rs"]
mod workspace_build;

/// The example `name` (target/<profile>/examples/<name>), built once per test process as
/// `cargo test --workspace` builds it.
pub fn example_binary(name: &str) -> std::path::PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(workspace_build::build_workspace_tests);
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(|p| p.parent()).expect("target dir");
    profile_dir.join("examples").join(name)
}
