//! What the examples' tests share.

/// Builds the example `name` and returns its path (target/<profile>/examples/<name>).
pub fn example_binary(name: &str) -> std::path::PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet", "-p", "pkb-examples", "--example", name])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the example {name} failed");
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(|p| p.parent()).expect("target dir");
    profile_dir.join("examples").join(name)
}
