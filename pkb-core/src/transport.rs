//! The transports: stdio ([`stdio::serve`]) and, with the `http` feature, Streamable HTTP.

#[cfg(feature = "http")]
pub mod http;
mod standard_streams;
pub mod stdio;

pub use standard_streams::{Input, Output, standard_streams};
pub use stdio::MAX_IN_FLIGHT;

/// The longest message accepted, in bytes. A longer one is answered with a parse error and
/// skipped, so memory stays bounded whatever a client sends.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
