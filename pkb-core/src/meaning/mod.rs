//! Search by meaning: a note's passages as vectors of the sentence encoder bundled in the
//! binary, the nearest notes to a query's vector, and the fusion of word and meaning ranks.
//! The encoder is loaded when first needed; nothing is downloaded, at build or run time. An
//! OpenAI-compatible embeddings endpoint may be used instead ([`use_embeddings_endpoint`]).

mod encoder;
#[cfg(feature = "meaning")]
mod endpoint;
pub mod fusion;
#[cfg(feature = "meaning")]
mod idle_priority;
pub mod indexer;
mod matrix;
mod matrix_cache;
pub mod passages;
mod query_turns;

pub use encoder::{MeaningError, embed, embed_in_background, embed_now, model_id};
#[cfg(feature = "meaning")]
pub use endpoint::{EmbeddingsEndpoint, use_embeddings_endpoint};
pub use matrix::{Matrix, vector_bytes};
pub use matrix_cache::MatrixCache;
pub use query_turns::take_turn;
