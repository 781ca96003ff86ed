//! The server merges its search index once its store goes quiet.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Sampling, call, structured};

fn segments(path: &str) -> i64 {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the store beside the server");
    conn.query_row("SELECT count(DISTINCT segid) FROM notes_fts_idx", [], |r| {
        r.get(0)
    })
    .expect("count segments")
}

#[tokio::test]
async fn a_quiet_server_merges_the_segments_its_writes_added() {
    let (_dir, path) = support::temp_store();
    let client = support::connect(&["--db", &path], Sampling::Unsupported).await;
    // Each write is a transaction of its own and adds a segment to the index (FTS5 itself
    // merges them all once there are 16).
    for i in 0..10 {
        let written = call(
            &client,
            "write",
            json!({"title": format!("MergeProgress note {i}"), "body": format!("merged words {i}")}),
        )
        .await;
        structured(&written);
    }
    let written = segments(&path);
    assert!(written > 8, "the writes added segments: {written}");

    let deadline = Instant::now() + Duration::from_secs(60);
    while segments(&path) > 1 {
        assert!(Instant::now() < deadline, "the index was not merged");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let found = call(
        &client,
        "search",
        json!({"query": "merged words", "limit": 50, "mode": "words"}),
    )
    .await;
    let hits = structured(&found)["results"].as_array().unwrap().len();
    assert_eq!(hits, 10);
    client.cancel().await.unwrap();
}
