//! The process's standard input and output, as the stdio transport reads and writes them.
//!
//! MCP clients start a server with pipes for both. A pipe is then read and written through
//! tokio's non-blocking pipe driver, on the reactor, rather than through a blocking thread per
//! read and write (a thread hand-off per message). The pipes are opened anew through
//! `/proc/self/fd`, so the non-blocking mode is this transport's own: the process's standard
//! streams, and children that inherit them, stay blocking. Anything else (a terminal, a
//! file, another system) is read and written as tokio's `stdin` and `stdout`.

use tokio::io::{AsyncRead, AsyncWrite};

/// Standard input, for [`super::stdio::serve`].
pub type Input = Box<dyn AsyncRead + Unpin + Send>;

/// Standard output, for [`super::stdio::serve`].
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// Standard input and output; call it inside a tokio runtime.
pub fn standard_streams() -> (Input, Output) {
    #[cfg(target_os = "linux")]
    if let Some((input, output)) = pipes() {
        return (Box::new(input), Box::new(output));
    }
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

/// Both streams as non-blocking pipes, when both are pipes.
#[cfg(target_os = "linux")]
fn pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use tokio::net::unix::pipe;
    let input = std::fs::File::open("/proc/self/fd/0").ok()?;
    let output = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/fd/1")
        .ok()?;
    // Each refuses what is not a pipe, and makes its own open file non-blocking.
    Some((
        pipe::Receiver::from_file(input).ok()?,
        pipe::Sender::from_file(output).ok()?,
    ))
}
