//! Compile tests for `#[pkb_tool]`, `#[pkb_resource]`, `#[pkb_prompt]` and `declarations!`: every mistake a
//! user can make gets one clear error at the offending token (`ui/fail/<category>/`), and
//! every supported form compiles (`ui/pass/`).
//!
//! After changing a diagnostic, regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p pkb-compile-tests --test compiletest`, then review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail/*/*.rs");
    t.pass("ui/pass/*.rs");
}
