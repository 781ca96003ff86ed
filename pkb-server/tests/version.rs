//! The binary names itself and its version. Being an integration test of this package, it
//! also makes `cargo test --workspace` build the binary the end-to-end tests in `tests/` run.

#[test]
fn version_names_the_binary_and_its_version() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_pkb-server"))
        .arg("--version")
        .output()
        .expect("run pkb-server");
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("pkb-server {}\n", env!("CARGO_PKG_VERSION"))
    );
}
