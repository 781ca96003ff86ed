//! The transports: stdio ([`stdio::serve`]) and, with the `http` feature, Streamable HTTP.

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
mod inline_tool_calls;
#[cfg(feature = "http")]
mod rmcp_reading;
pub mod stdio;

#[cfg(feature = "http")]
pub use inline_tool_calls::InlineToolCalls;
#[cfg(feature = "http")]
pub(crate) use rmcp_reading::{known_params_error, plain_call_tool, unreadable_message_answer};
pub use stdio::MAX_IN_FLIGHT;

/// The longest message accepted, in bytes. A longer one is answered with a parse error and
/// skipped, so memory stays bounded whatever a client sends.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
