//! Another model instead of the bundled encoder: an OpenAI-compatible embeddings endpoint
//! (`--embeddings-url`, such as a local Ollama's `/v1`), asked over HTTP. Its failures (down,
//! slow, an answer of the wrong shape or size) are told as search-by-meaning errors; word
//! search and writes never wait for it.

use std::sync::OnceLock;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::encoder::MeaningError;

/// How long one request may take: a batch of passages on a slow local model included.
const PATIENCE: Duration = Duration::from_secs(30);

/// An embeddings endpoint and the model asked of it.
#[derive(Debug)]
pub struct EmbeddingsEndpoint {
    url: String,
    model: String,
    key: Option<String>,
    client: reqwest::Client,
    /// The model's id as stored with its vectors.
    id: String,
    /// The length of the vectors its first answer gave; every later one must match.
    dimensions: OnceLock<usize>,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Embedding>,
}

#[derive(Deserialize)]
struct Embedding {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl EmbeddingsEndpoint {
    /// The endpoint at `url` (its `/embeddings` path added unless given), asked for `model`,
    /// sending `key` as a bearer token when there is one.
    pub fn new(url: &str, model: &str, key: Option<String>) -> Result<Self, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("{url}: must be an http or https URL"));
        }
        if model.trim().is_empty() {
            return Err("the embeddings model must be named".to_owned());
        }
        let url = url.trim_end_matches('/');
        let url = if url.ends_with("/embeddings") {
            url.to_owned()
        } else {
            format!("{url}/embeddings")
        };
        crate::crypto_provider::install();
        let client = reqwest::Client::builder()
            .timeout(PATIENCE)
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(EmbeddingsEndpoint {
            id: format!("{model} at {url}"),
            url,
            model: model.to_owned(),
            key,
            client,
            dimensions: OnceLock::new(),
        })
    }

    /// The id stored with this model's vectors: a change of model or endpoint makes every
    /// note's vectors again.
    pub fn model_id(&self) -> &str {
        &self.id
    }

    /// One unit vector per text, in order.
    pub async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, MeaningError> {
        let failed =
            |why: String| MeaningError(format!("the embeddings endpoint {} {why}", self.url));
        let mut request = self
            .client
            .post(&self.url)
            .json(&json!({"model": self.model, "input": texts}));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                failed(format!("did not answer within {} s", PATIENCE.as_secs()))
            } else {
                failed(format!("cannot be reached ({e})"))
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(failed(format!("answered {status}")));
        }
        let answer: Answer = response
            .json()
            .await
            .map_err(|e| failed(format!("answered something other than embeddings ({e})")))?;
        if answer.data.len() != texts.len() {
            return Err(failed(format!(
                "answered {} vectors for {} texts",
                answer.data.len(),
                texts.len()
            )));
        }
        let mut data = answer.data;
        data.sort_by_key(|embedding| embedding.index.unwrap_or(0));
        let mut vectors = Vec::with_capacity(data.len());
        for Embedding { embedding, .. } in data {
            let expected = *self.dimensions.get_or_init(|| embedding.len());
            if embedding.len() != expected || expected == 0 {
                return Err(failed(format!(
                    "answered a vector of {} numbers where its first had {expected}",
                    embedding.len()
                )));
            }
            vectors.push(
                unit(embedding).ok_or_else(|| {
                    failed("answered a vector of zeros or non-numbers".to_owned())
                })?,
            );
        }
        Ok(vectors)
    }
}

/// `vector` scaled to length 1, as the stored vectors are compared by their dot product.
fn unit(mut vector: Vec<f32>) -> Option<Vec<f32>> {
    let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !length.is_finite() || length == 0.0 {
        return None;
    }
    vector.iter_mut().for_each(|x| *x /= length);
    Some(vector)
}

/// The endpoint this process uses instead of the bundled encoder, if one was chosen.
static CHOSEN: OnceLock<EmbeddingsEndpoint> = OnceLock::new();

/// Makes `endpoint` the model of this process's searches by meaning; once, before serving.
pub fn use_embeddings_endpoint(endpoint: EmbeddingsEndpoint) -> Result<(), String> {
    CHOSEN
        .set(endpoint)
        .map_err(|_| "an embeddings endpoint was chosen already".to_owned())
}

/// The chosen endpoint.
pub(super) fn chosen() -> Option<&'static EmbeddingsEndpoint> {
    CHOSEN.get()
}
