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

/// The longest vector assumed before the endpoint's first answer says its length: above the
/// 3,072 of the largest hosted models.
const MAX_DIMENSIONS: usize = 8_192;

/// The most bytes one number takes in an answer: `-1.2345678901234567e-10,` with room to spare.
const BYTES_PER_NUMBER: usize = 32;

/// Room for each vector's object around its numbers (`{"object":"embedding","index":31,...}`).
const BYTES_PER_VECTOR: usize = 1_024;

/// The least an answer may take, whatever the batch: its list's own fields, a usage count.
const ANSWER_FLOOR: usize = 1024 * 1024;

/// The most bytes an answer to `texts` texts can need, with vectors of `dimensions` numbers
/// (or [`MAX_DIMENSIONS`] before the first answer): an endpoint that sends more is refused
/// before it is read, so a broken or hostile one cannot fill the server's memory.
fn answer_limit(texts: usize, dimensions: Option<usize>) -> usize {
    let per_vector = dimensions.unwrap_or(MAX_DIMENSIONS) * BYTES_PER_NUMBER + BYTES_PER_VECTOR;
    texts.saturating_mul(per_vector).max(ANSWER_FLOOR)
}

/// An embeddings endpoint and the model asked of it.
#[derive(Debug)]
pub struct EmbeddingsEndpoint {
    /// Where requests go, whole: its user information and query may hold a key.
    url: reqwest::Url,
    /// How the endpoint is named to clients and in logs: scheme, host and path, never the
    /// URL's credentials.
    name: String,
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

/// `url` named without what may be a secret in it: scheme, host, port and path, without the
/// user information, query or fragment.
fn name_of(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    let port = url
        .port()
        .map(|port| format!(":{port}"))
        .unwrap_or_default();
    let path = url.path().trim_end_matches('/');
    format!("{}://{host}{port}{path}", url.scheme())
}

impl EmbeddingsEndpoint {
    /// The endpoint at `url` (its `/embeddings` path added unless given, before any query,
    /// which is sent as given), asked for `model`, sending `key` as a bearer token when
    /// there is one. Errors never show the URL's user information or query.
    pub fn new(url: &str, model: &str, key: Option<String>) -> Result<Self, String> {
        // The parser's error never quotes the URL, which may hold a key.
        let mut url =
            reqwest::Url::parse(url).map_err(|e| format!("cannot be read as a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{}: must be an http or https URL", name_of(&url)));
        }
        if model.trim().is_empty() {
            return Err("the embeddings model must be named".to_owned());
        }
        url.set_fragment(None);
        // An http(s) URL always has a path to join to, so neither `if let` can fail.
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty();
        }
        if url.path_segments().and_then(|mut s| s.next_back()) != Some("embeddings")
            && let Ok(mut path) = url.path_segments_mut()
        {
            path.push("embeddings");
        }
        crate::crypto_provider::install();
        let client = reqwest::Client::builder()
            .timeout(PATIENCE)
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        let name = name_of(&url);
        Ok(EmbeddingsEndpoint {
            id: format!("{model} at {name}"),
            url,
            name,
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
            |why: String| MeaningError(format!("the embeddings endpoint {} {why}", self.name));
        let mut request = self
            .client
            .post(self.url.clone())
            .json(&json!({"model": self.model, "input": texts}));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let mut response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                failed(format!("did not answer within {} s", PATIENCE.as_secs()))
            } else {
                // reqwest's error quotes the whole URL, credentials included.
                failed(format!("cannot be reached ({})", e.without_url()))
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(failed(format!("answered {status}")));
        }
        let limit = answer_limit(texts.len(), self.dimensions.get().copied());
        let too_large = || {
            let s = if texts.len() == 1 { "" } else { "s" };
            failed(format!(
                "answered more than {limit} bytes for {} text{s}",
                texts.len()
            ))
        };
        if response
            .content_length()
            .is_some_and(|length| length > limit as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                let e = e.without_url();
                failed(format!("broke off its answer ({e})"))
            })?;
            let Some(chunk) = chunk else { break };
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let answer: Answer = serde_json::from_slice(&body)
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

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET_URL: &str = "http://someone:pass-word@127.0.0.1:1/v1/?api-key=KEY-123";

    fn shows_no_credentials(text: &str) {
        for secret in ["someone", "pass-word", "KEY-123", "api-key"] {
            assert!(!text.contains(secret), "{secret} shown in: {text}");
        }
    }

    #[test]
    fn the_path_is_joined_before_the_query_which_is_kept_on_the_request() {
        let endpoint = EmbeddingsEndpoint::new(SECRET_URL, "m", None).unwrap();
        assert_eq!(
            endpoint.url.as_str(),
            "http://someone:pass-word@127.0.0.1:1/v1/embeddings?api-key=KEY-123"
        );
        let given = EmbeddingsEndpoint::new("http://h/v1/embeddings/", "m", None).unwrap();
        assert_eq!(given.url.as_str(), "http://h/v1/embeddings");
    }

    #[test]
    fn the_endpoint_is_named_by_scheme_host_and_path_alone() {
        let endpoint = EmbeddingsEndpoint::new(SECRET_URL, "m", None).unwrap();
        assert_eq!(endpoint.model_id(), "m at http://127.0.0.1:1/v1/embeddings");
        let refused =
            EmbeddingsEndpoint::new("ftp://someone:pass-word@x/?api-key=KEY-123", "m", None);
        let refused = refused.unwrap_err();
        assert_eq!(refused, "ftp://x: must be an http or https URL");
        let unreadable = EmbeddingsEndpoint::new("http://[KEY-123", "m", None).unwrap_err();
        shows_no_credentials(&unreadable);
    }

    /// A local endpoint whose every answer is a good embedding followed by `padding` bytes of
    /// white space, with or without a `Content-Length`; its URL.
    async fn answering_padded(padding: usize, with_length: bool) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = [0; 4096];
                    let _ = socket.read(&mut request).await;
                    let head = br#"{"data":[{"embedding":[1.0,0.5],"index":0}]"#;
                    let length = match with_length {
                        true => format!("Content-Length: {}\r\n", head.len() + padding + 1),
                        false => String::new(),
                    };
                    let header = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{length}Connection: close\r\n\r\n"
                    );
                    let _ = socket.write_all(header.as_bytes()).await;
                    let _ = socket.write_all(head).await;
                    let spaces = vec![b' '; 64 * 1024];
                    for _ in 0..padding / spaces.len() {
                        if socket.write_all(&spaces).await.is_err() {
                            return;
                        }
                    }
                    let _ = socket.write_all(b"}").await;
                });
            }
        });
        url
    }

    #[tokio::test]
    async fn an_answer_larger_than_the_batch_can_need_is_refused() {
        let huge = 64 * 1024 * 1024;
        for with_length in [true, false] {
            let endpoint =
                EmbeddingsEndpoint::new(&answering_padded(huge, with_length).await, "m", None)
                    .unwrap();
            let error = endpoint
                .embed(vec!["x".to_owned()])
                .await
                .unwrap_err()
                .to_string();
            let limit = answer_limit(1, None);
            assert!(
                error.contains(&format!("answered more than {limit} bytes for 1 text")),
                "{error}"
            );
        }
        let endpoint =
            EmbeddingsEndpoint::new(&answering_padded(4096, false).await, "m", None).unwrap();
        let vectors = endpoint.embed(vec!["x".to_owned()]).await.unwrap();
        assert_eq!(vectors.len(), 1, "an answer within the bound is read");
    }

    #[test]
    fn the_bound_grows_with_the_batch_and_its_vectors() {
        assert_eq!(answer_limit(1, Some(384)), ANSWER_FLOOR);
        assert!(answer_limit(32, None) > 32 * 8192 * 20);
        assert!(answer_limit(32, Some(3072)) < answer_limit(32, None));
    }

    #[tokio::test]
    async fn a_failure_names_the_endpoint_without_its_credentials() {
        let endpoint = EmbeddingsEndpoint::new(SECRET_URL, "m", None).unwrap();
        let error = endpoint
            .embed(vec!["x".to_owned()])
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "the embeddings endpoint http://127.0.0.1:1/v1/embeddings cannot be reached"
            ),
            "{error}"
        );
        shows_no_credentials(&error);
    }
}
