//! `--auth local` with a real client and a real browser: the official MCP Python SDK's
//! `OAuthClientProvider` (discovery, registration or a client metadata document, PKCE,
//! refresh), its redirect handler driving headless Chromium through PKB's pages with the
//! keyboard (tests/oauth_client/sdk_and_browser.py). Screenshots of the pages are kept under
//! the target directory's `tmp/oauth-pages`.
//!
//! Needs `PKB_TEST_OAUTH_PYTHON`, a Python with the `mcp` and `playwright` packages, and
//! Chromium (`PKB_TEST_CHROMIUM`, default `/usr/bin/chromium`); without them each test passes
//! at once, saying so, unless `PKB_REQUIRE_OAUTH_PYTHON` is set.

#[macro_use]
mod support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use support::local_oauth::{DocumentServer, LocalServer};

/// The client's callback in the script.
const SCRIPT_CALLBACK: &str = "http://127.0.0.1:33418/callback";

/// The Python to run the script with, or `None` to skip.
fn python() -> Option<String> {
    support::browser_python()
}

/// Runs the script against `server`, with `metadata_url` as the client id if given.
async fn run_script(
    python: &str,
    server: &LocalServer,
    metadata_url: Option<&str>,
    env: &[(&str, &str)],
) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("oauth_client/sdk_and_browser.py");
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("oauth-pages");
    let mut command = tokio::process::Command::new(python);
    command
        .arg(script)
        .arg(server.resource())
        .arg(&artifacts)
        .arg(support::server_binary())
        .arg(&server.data_dir)
        .args(metadata_url)
        .envs(env.iter().copied())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the script finishes within two minutes")
        .expect("the script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.trim_end().ends_with("ok"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn the_python_sdk_registers_signs_in_in_chromium_refreshes_and_is_revoked() {
    let Some(python) = python() else {
        return;
    };
    let server = LocalServer::start(&[]).await;
    run_script(&python, &server, None, &[]).await;
}

#[tokio::test]
async fn the_python_sdk_uses_a_client_metadata_document() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let certificates = support::test_certificates(dir.path());
    let documents = DocumentServer::start(&certificates, |origin| {
        let client_id = format!("{origin}/pkb-sdk-test/client.json");
        let document = json!({
            "client_id": client_id,
            "client_name": "PKB SDK test",
            "redirect_uris": [SCRIPT_CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        HashMap::from([(
            "/pkb-sdk-test/client.json".to_owned(),
            (Duration::ZERO, document.to_string().into_bytes()),
        )])
    })
    .await;
    let ca = [("SSL_CERT_FILE", certificates.ca.as_str())];
    let server = LocalServer::start_with_env(&["--allow-local-clients"], &ca).await;
    let metadata_url = format!("{}/pkb-sdk-test/client.json", documents.origin);
    run_script(&python, &server, Some(&metadata_url), &[]).await;
}
