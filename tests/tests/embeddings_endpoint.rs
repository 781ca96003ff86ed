//! `--embeddings-url`: search by meaning through an OpenAI-compatible embeddings endpoint
//! instead of the bundled encoder. The endpoint here is a small HTTP server of the test's own
//! speaking that API, whose model counts words into 64 buckets (so a query sharing a note's
//! words is nearest to it); it records what PKB asks of it, and can be made to fail.

#[macro_use]
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::{RecordingClient, call, connect, structured, temp_store};

/// How the endpoint answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Good,
    Down,
    /// Vectors of another length than its first answers'.
    WrongSize,
}

/// One request: its model, its `Authorization` header and how many texts it sent.
type Asked = (String, Option<String>, usize);

#[derive(Clone)]
struct Endpoint {
    behaviour: Arc<Mutex<Behaviour>>,
    asked: Arc<Mutex<Vec<Asked>>>,
    /// Each request's query string.
    queries: Arc<Mutex<Vec<Option<String>>>>,
}

fn bag_of_words(text: &str, size: usize) -> Vec<f32> {
    let mut vector = vec![0.0; size];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let bucket = word
            .to_lowercase()
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        vector[(bucket % size as u64) as usize] += 1.0;
    }
    vector[size - 1] += 0.01;
    vector
}

async fn embeddings(
    State(endpoint): State<Endpoint>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    endpoint.queries.lock().unwrap().push(query);
    let behaviour = *endpoint.behaviour.lock().unwrap();
    let inputs: Vec<String> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    let key = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    endpoint.asked.lock().unwrap().push((
        body["model"].as_str().unwrap_or("").to_owned(),
        key,
        inputs.len(),
    ));
    let size = match behaviour {
        Behaviour::Down => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Behaviour::Good => 64,
        Behaviour::WrongSize => 32,
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": bag_of_words(text, size)}))
        .collect();
    Json(json!({"object": "list", "data": data, "model": body["model"]})).into_response()
}

async fn start_endpoint() -> (String, Endpoint) {
    let endpoint = Endpoint {
        behaviour: Arc::new(Mutex::new(Behaviour::Good)),
        asked: Arc::default(),
        queries: Arc::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/embeddings", post(embeddings))
        .with_state(endpoint.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, endpoint)
}

async fn meaning(
    client: &RunningService<RoleClient, RecordingClient>,
    query: &str,
) -> Result<Vec<String>, String> {
    let result = call(client, "search", json!({"query": query, "mode": "meaning"})).await;
    if result.is_error == Some(true) {
        return Err(support::text(&result));
    }
    Ok(structured(&result)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect())
}

async fn until_first(client: &RunningService<RoleClient, RecordingClient>, query: &str, id: &str) {
    let start = Instant::now();
    loop {
        let found = meaning(client, query).await;
        if found
            .as_ref()
            .is_ok_and(|ids| ids.first().map(String::as_str) == Some(id))
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{query}: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn write(client: &RunningService<RoleClient, RecordingClient>, title: &str, body: &str) {
    structured(&call(client, "write", json!({"title": title, "body": body})).await);
}

both_transports! {
#[tokio::test]
async fn search_by_meaning_through_an_embeddings_endpoint() {
    let (url, endpoint) = start_endpoint().await;
    let (_dir, db) = temp_store();
    let args = ["--db", db.as_str(), "--no-seed", "--embeddings-url", url.as_str(), "--embeddings-model", "test-embed"];
    let client = support::connect_with_env(&args, &[("PKB_EMBEDDINGS_KEY", "sk-test-key")]).await;
    write(&client, "Telescope night", "saturn rings jupiter moons observatory").await;
    write(&client, "Bread baking", "flour yeast dough oven crust").await;
    until_first(&client, "observatory saturn", "telescope-night").await;
    until_first(&client, "dough and yeast", "bread-baking").await;
    {
        let asked = endpoint.asked.lock().unwrap();
        assert!(asked.iter().all(|(model, key, _)| model == "test-embed" && key.as_deref() == Some("Bearer sk-test-key")), "model and key sent");
    }

    // The endpoint down: search by meaning says so; word search and writes go on.
    *endpoint.behaviour.lock().unwrap() = Behaviour::Down;
    let error = meaning(&client, "saturn").await.unwrap_err();
    assert!(error.contains(&format!("the embeddings endpoint {url}/embeddings answered 503")), "{error}");
    write(&client, "Garden", "tomatoes basil compost").await;
    let words = structured(&call(&client, "search", json!({"query": "compost", "mode": "words"})).await);
    assert_eq!(words["results"][0]["id"], "garden");

    // Vectors of another size than before: refused, named.
    *endpoint.behaviour.lock().unwrap() = Behaviour::WrongSize;
    let error = meaning(&client, "saturn").await.unwrap_err();
    assert!(error.contains("answered a vector of 32 numbers where its first had 64"), "{error}");

    // Back up: the note written meanwhile gets its vectors and is found.
    *endpoint.behaviour.lock().unwrap() = Behaviour::Good;
    until_first(&client, "basil and tomatoes", "garden").await;
}
}

#[tokio::test]
async fn a_change_of_model_makes_every_note_s_vectors_again() {
    let (url, endpoint) = start_endpoint().await;
    let (_dir, db) = temp_store();
    let with_model = |model: &'static str| {
        vec![
            "--db".to_owned(),
            db.clone(),
            "--no-seed".to_owned(),
            "--embeddings-url".to_owned(),
            url.clone(),
            "--embeddings-model".to_owned(),
            model.to_owned(),
        ]
    };
    let first = with_model("model-a");
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let client = connect(&first, support::Sampling::Unsupported).await;
    for n in 0..5 {
        write(
            &client,
            &format!("Note {n}"),
            &format!("topic{n} words here"),
        )
        .await;
    }
    until_first(&client, "topic4", "note-4").await;
    drop(client);
    let texts_for = |model: &str| {
        endpoint
            .asked
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _, _)| m == model)
            .map(|(_, _, n)| n)
            .sum::<usize>()
    };
    assert!(texts_for("model-a") >= 5);
    let second = with_model("model-b");
    let second: Vec<&str> = second.iter().map(String::as_str).collect();
    let client = connect(&second, support::Sampling::Unsupported).await;
    until_first(&client, "topic0", "note-0").await;
    until_first(&client, "topic3", "note-3").await;
    // Every note embedded again by the new model (plus the queries).
    assert!(texts_for("model-b") >= 5 + 2, "{}", texts_for("model-b"));
}

/// A key in the URL's query (as some hosted endpoints take it) goes with every request, after
/// the `/embeddings` path; no client and no log line is ever shown it.
#[tokio::test]
async fn a_key_in_the_url_is_sent_and_never_shown() {
    let (url, endpoint) = start_endpoint().await;
    let (_dir, db) = temp_store();
    let with_key = format!("{url}?api-key=KEY-123");
    let args = [
        "--db",
        db.as_str(),
        "--no-seed",
        "--embeddings-url",
        with_key.as_str(),
        "--embeddings-model",
        "m",
    ];
    let server = support::HttpServerProcess::start_with_env(&args, &[("RUST_LOG", "debug")]).await;
    let client = support::connect_http(
        RecordingClient::new(support::Sampling::Unsupported),
        &server.url,
        None,
    )
    .await;
    write(
        &client,
        "Telescope night",
        "saturn rings jupiter moons observatory",
    )
    .await;
    until_first(&client, "observatory saturn", "telescope-night").await;
    let queries = endpoint.queries.lock().unwrap().clone();
    assert!(
        queries
            .iter()
            .all(|q| q.as_deref() == Some("api-key=KEY-123")),
        "{queries:?}"
    );

    *endpoint.behaviour.lock().unwrap() = Behaviour::Down;
    let error = meaning(&client, "saturn").await.unwrap_err();
    assert!(
        error.contains(&format!(
            "the embeddings endpoint {url}/embeddings answered 503"
        )),
        "{error}"
    );
    assert!(!error.contains("KEY-123"), "{error}");
    let logged = server.stderr.lock().unwrap().join("\n");
    assert!(
        logged.contains("answered 503"),
        "the failure is logged: {logged}"
    );
    assert!(!logged.contains("KEY-123"), "{logged}");
}

#[tokio::test]
async fn a_bad_embeddings_url_is_refused_at_start() {
    let (status, _, err) = support::run_command(&[
        "--memory",
        "--embeddings-url",
        "ftp://x",
        "--embeddings-model",
        "m",
        "call",
        "echo",
        r#"{"text":"x"}"#,
    ]);
    assert!(!status.success());
    assert!(
        err.contains("--embeddings-url: ftp://x: must be an http or https URL"),
        "{err}"
    );
}
