//! Two servers on one store, as two client windows run them: what one writes, the other
//! fetches next, even a note it has just fetched (and keeps in memory).

mod support;

use serde_json::json;
use support::{Sampling, call, structured};

#[tokio::test]
async fn a_note_fetched_again_after_another_server_replaced_it_is_the_new_one() {
    let (_dir, path) = support::temp_store();
    let writer = support::connect(&["--db", &path], Sampling::Unsupported).await;
    let reader = support::connect(&["--db", &path], Sampling::Unsupported).await;

    let body_of = |round: usize| format!("version {round} of the shared plan");
    let written = call(
        &writer,
        "write",
        json!({"title": "Shared plan", "body": body_of(0)}),
    )
    .await;
    let id = structured(&written)["id"].as_str().unwrap().to_owned();

    for round in 0..20 {
        // Twice, so the second answer can come from what the reader keeps.
        for _ in 0..2 {
            let fetched = structured(&call(&reader, "fetch", json!({"id": id})).await);
            assert_eq!(fetched["note"]["body"], body_of(round), "round {round}");
        }
        let replaced = call(
            &writer,
            "write",
            json!({"title": "Shared plan", "body": body_of(round + 1), "overwrite": true}),
        )
        .await;
        assert_eq!(structured(&replaced)["created"], false);
    }
    let last = structured(&call(&reader, "fetch", json!({"id": id})).await);
    assert_eq!(last["note"]["body"], body_of(20));
    writer.cancel().await.unwrap();
    reader.cancel().await.unwrap();
}
