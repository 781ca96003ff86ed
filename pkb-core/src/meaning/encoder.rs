//! The bundled sentence encoder: all-MiniLM-L6-v2 in PKB's copy of pocket-encoder (8-bit
//! weights and a 4-bit word-piece table in the crate itself, 384 coordinates, unit vectors),
//! loaded once per process when first asked for.

#[cfg(feature = "meaning")]
use std::sync::OnceLock;

/// Why text could not be made a vector.
#[derive(Debug, Clone, thiserror::Error)]
#[error("search by meaning failed: {0}")]
pub struct MeaningError(pub String);

/// The model's full identity, stored with every vector: vectors of another identity are
/// never compared with these, and are made again. The embeddings endpoint's model when one
/// was chosen, else the bundled encoder.
#[cfg(feature = "meaning")]
pub fn model_id() -> &'static str {
    if let Some(endpoint) = super::endpoint::chosen() {
        return endpoint.model_id();
    }
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let info = pocket_encoder::model_info();
        format!("{}@{}", info.id, info.revision)
    })
}

/// One unit vector per text, in order. Blocks for the encoder's work (tens of milliseconds a
/// passage, and the loading of the weights at the first call): call it off the async runtime.
#[cfg(feature = "meaning")]
pub fn embed(texts: &[String]) -> Result<Vec<Vec<f32>>, MeaningError> {
    let encoder = pocket_encoder::Encoder::new().map_err(|e| MeaningError(e.to_string()))?;
    encoder
        .embed(texts)
        .map_err(|e| MeaningError(e.to_string()))
}

/// The unit vector of one text (a query), made now: by the embeddings endpoint when one was
/// chosen, else by the bundled encoder on a blocking thread.
pub async fn embed_now(text: String) -> Result<Vec<f32>, MeaningError> {
    #[cfg(feature = "meaning")]
    if let Some(endpoint) = super::endpoint::chosen() {
        return endpoint
            .embed(vec![text])
            .await?
            .pop()
            .ok_or_else(no_vector);
    }
    tokio::task::spawn_blocking(move || embed(&[text]))
        .await
        .map_err(|e| MeaningError(e.to_string()))??
        .pop()
        .ok_or_else(no_vector)
}

fn no_vector() -> MeaningError {
    MeaningError("the encoder gave no vector".into())
}

/// [`embed`] on the encoder's own threads, which run in the idle scheduling class
/// ([`super::idle_priority`]): the background indexer's work takes only the CPU that requests
/// do not want, so that writes and searches are not slowed by it.
#[cfg(feature = "meaning")]
pub async fn embed_in_background(texts: Vec<String>) -> Result<Vec<Vec<f32>>, MeaningError> {
    if let Some(endpoint) = super::endpoint::chosen() {
        return endpoint.embed(texts).await;
    }
    let (answer, answered) = tokio::sync::oneshot::channel();
    super::idle_priority::spawn(move || {
        // A passage at a time, each after the calls being served: see `give_way`.
        let vectors = texts
            .iter()
            .map(|text| {
                super::idle_priority::give_way();
                embed(std::slice::from_ref(text))?
                    .pop()
                    .ok_or_else(no_vector)
            })
            .collect();
        // The trim locks every arena in turn, the calls' too.
        super::idle_priority::give_way();
        super::idle_priority::release_free_memory();
        let _ = answer.send(vectors);
    });
    answered
        .await
        .map_err(|_| MeaningError("the encoder's threads have stopped".into()))?
}

/// Without the `meaning` feature there is no encoder.
#[cfg(not(feature = "meaning"))]
pub async fn embed_in_background(texts: Vec<String>) -> Result<Vec<Vec<f32>>, MeaningError> {
    embed(&texts)
}

/// Without the `meaning` feature there is no encoder.
#[cfg(not(feature = "meaning"))]
pub fn model_id() -> &'static str {
    "none"
}

/// Without the `meaning` feature there is no encoder.
#[cfg(not(feature = "meaning"))]
pub fn embed(_texts: &[String]) -> Result<Vec<Vec<f32>>, MeaningError> {
    Err(MeaningError(
        "this build of PKB has no encoder (the `meaning` feature)".into(),
    ))
}
