//! The web page's whole story with a real browser: a model changes notes through MCP (rmcp's
//! client), the person finds the change in headless Chromium (Playwright, as the sign-in test
//! drives it: tests/web_browser/story.py), compares, restores; MCP then reads what was
//! restored and `history` shows the restore by the web page. Screenshots of each step are kept
//! under the target directory's `tmp/web-pages`.
//!
//! Needs `PKB_TEST_OAUTH_PYTHON`, a Python with `playwright` (the sign-in test's), and Chromium
//! (`PKB_TEST_CHROMIUM`, default `/usr/bin/chromium`); without them each test passes at once,
//! saying so, unless `PKB_REQUIRE_OAUTH_PYTHON` is set.

#[macro_use]
mod support;

use std::path::PathBuf;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::json;
use support::local_oauth::{LocalServer, PASSWORD};
use support::{HttpServerProcess, RecordingClient, Sampling, call, connect_http, structured};

/// The Python to run the script with, or `None` to skip.
fn python() -> Option<String> {
    support::browser_python()
}

/// Runs one step of the story against `origin`.
async fn step(python: &str, step: &str, origin: &str, args: &[&str]) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("web_browser/story.py");
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-pages");
    let mut command = tokio::process::Command::new(python);
    command
        .arg(script)
        .arg(step)
        .arg(origin)
        .arg(&artifacts)
        .args(args)
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the step finishes within two minutes")
        .expect("the script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.trim_end().ends_with("ok"),
        "{step}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

type Mcp = RunningService<RoleClient, RecordingClient>;

async fn latest_change(client: &Mcp, id: &str) -> (String, String) {
    let history = structured(&call(client, "history", json!({"id": id})).await);
    let newest = &history["versions"][0];
    (
        newest["change"].as_str().unwrap().to_owned(),
        newest["by"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_person_undoes_a_models_overwrite_and_delete_from_the_page() {
    let Some(python) = python() else {
        return;
    };
    let server = HttpServerProcess::start(&["--memory", "--no-seed"]).await;
    let model = connect_http(
        RecordingClient::new(Sampling::Unsupported),
        &server.url,
        None,
    )
    .await;
    let write = |title: &str, body: &str| json!({"title": title, "body": body, "overwrite": true});
    structured(
        &call(
            &model,
            "write",
            write(
                "Trip plan",
                "Fly to Lisbon on Friday.\nHotel near the river.",
            ),
        )
        .await,
    );
    structured(&call(&model, "write", write("Groceries", "Milk, eggs, bread.")).await);
    // The model's mistake: the plan overwritten with something else.
    structured(
        &call(
            &model,
            "write",
            write("Trip plan", "Fly to Nowhere.\nHotel near the river."),
        )
        .await,
    );
    // The client the model is, as `history` names it.
    let (_, label) = latest_change(&model, "trip-plan").await;

    step(&python, "undo-overwrite", server.origin(), &[&label]).await;
    let fetched = structured(&call(&model, "fetch", json!({"id": "trip-plan"})).await);
    assert_eq!(
        fetched["note"]["body"],
        "Fly to Lisbon on Friday.\nHotel near the river."
    );
    assert_eq!(fetched["note"]["version"], 3);
    assert_eq!(
        latest_change(&model, "trip-plan").await,
        ("restored".to_owned(), "web page".to_owned())
    );

    // The model's second mistake: a note deleted.
    structured(&call(&model, "delete", json!({"id": "groceries"})).await);
    step(&python, "undo-delete", server.origin(), &["Groceries"]).await;
    let fetched = structured(&call(&model, "fetch", json!({"id": "groceries"})).await);
    assert_eq!(fetched["note"]["body"], "Milk, eggs, bread.");
    assert_eq!(
        latest_change(&model, "groceries").await,
        ("restored".to_owned(), "web page".to_owned())
    );
    let _ = model.cancel().await;
}

#[tokio::test]
async fn under_auth_local_a_person_sees_only_their_notes_and_forged_posts_change_nothing() {
    let Some(python) = python() else {
        return;
    };
    let server = LocalServer::start(&["--no-seed"]).await;
    // A token's name and an account's are one user.
    let (alice_token, bob_token) = (server.token("alice"), server.token("bob"));
    let alice = connect_http(
        RecordingClient::new(Sampling::Unsupported),
        server.resource(),
        Some(&alice_token),
    )
    .await;
    let bob = connect_http(
        RecordingClient::new(Sampling::Unsupported),
        server.resource(),
        Some(&bob_token),
    )
    .await;
    let write = |title: &str, body: &str| json!({"title": title, "body": body, "overwrite": true});
    structured(&call(&alice, "write", write("Alice plan", "alice one")).await);
    structured(&call(&alice, "write", write("Alice plan", "alice two")).await);
    structured(&call(&bob, "write", write("Bob secret", "bob only")).await);

    step(&python, "two-people", server.origin(), &[PASSWORD]).await;

    let fetched = structured(&call(&alice, "fetch", json!({"id": "alice-plan"})).await);
    assert_eq!(fetched["note"]["body"], "alice one");
    let history = structured(&call(&alice, "history", json!({"id": "alice-plan"})).await);
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(
        versions.len(),
        3,
        "the forged posts changed nothing: {versions:?}"
    );
    assert_eq!(versions[0]["by"], "web page (alice)");
    let bobs = structured(&call(&bob, "history", json!({"id": "bob-secret"})).await);
    assert_eq!(bobs["versions"].as_array().unwrap().len(), 1);
    let _ = alice.cancel().await;
    let _ = bob.cancel().await;
}
