//! Newline-delimited JSON-RPC over a byte stream (stdio), on PKB's dispatcher: each line is
//! parsed once and handed to [`McpServer::handle`]; answers and everything else the session
//! sends its client are written by one writer, a line each.
//!
//! What a line can be is answered too: not JSON (-32700), JSON that is no message (-32600),
//! longer than [`MAX_MESSAGE_BYTES`] (-32700, refused without being buffered).
//!
//! A request is polled once where it was read: one that is done at once (an `echo`, a
//! `fetch` from memory) is answered with no task at all; one that waits (a read from disk, a
//! write, sampling) moves to a task of its own while reading goes on. Reading pauses while
//! [`MAX_IN_FLIGHT`] requests are unanswered.

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use rmcp::model::ServerJsonRpcMessage;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::MAX_MESSAGE_BYTES;
use crate::McpServer;
use crate::framework::client_link::{ClientLink, Outbox, encode};
use crate::framework::incoming::{Incoming, Refusal};

/// The most requests read and not yet answered: then reading pauses, and the pipe carries the
/// pressure back to the client, as it would for any program reading a pipe. A client that
/// keeps sending requests but stops reading its answers would otherwise have the server read
/// on and hold every answer in memory (pipelined `echo` calls into an unread pipe took it
/// past 900 MB in two seconds). Far above what clients keep in flight (the benchmark's
/// pipelined run keeps 32), far below what memory notices: a few tens of KB per answer.
///
/// A request waiting on the client (`summarize` asking for a sample) holds its place, so a
/// client with more such calls open than this would have to wait for their sampling timeout.
pub const MAX_IN_FLIGHT: usize = 256;

/// How long the end of input waits for requests still being answered.
pub const END_OF_INPUT_WAIT: Duration = Duration::from_secs(5);

/// How long a stop (SIGTERM) waits for them. What could only finish through the client (a
/// notification, a sampling request) gives up at once; what is left is the store's work: a
/// burst of pipelined writes, each with its fsync, takes a few seconds, and each saved note is
/// answered.
pub const STOP_WAIT: Duration = END_OF_INPUT_WAIT;

/// Serves one client reading `reader` and writing `writer`, with a session of its own made
/// from `server`, until the input ends or `stop` completes; then the requests still being
/// answered get their answers (within [`END_OF_INPUT_WAIT`], or [`STOP_WAIT`] after a stop).
pub async fn serve<R, W>(
    server: &McpServer,
    reader: R,
    writer: W,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (link, outgoing) = ClientLink::new();
    let session = server.session_over(link.clone());
    let finished = CancellationToken::new();
    let output_failed = CancellationToken::new();
    let output = Arc::new(tokio::sync::Mutex::new(Output {
        writer: Box::new(writer),
        line: Vec::with_capacity(4096),
        failed: output_failed.clone(),
    }));
    let writing = tokio::spawn(write_lines(
        Arc::clone(&output),
        link.clone(),
        outgoing,
        finished.clone(),
    ));
    let mut lines = Lines::new(reader);
    let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let tasks = TaskTracker::new();
    let mut stop = std::pin::pin!(stop);
    // Whatever the loop waits on, a stop (SIGTERM) or an output that cannot be written ends
    // it: the client may have stopped reading, and every wait below may then last for ever.
    let stopped = loop {
        let line = tokio::select! {
            line = lines.next() => line,
            () = &mut stop => break true,
            () = output_failed.cancelled() => break true,
        };
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) => break false,
            Err(error) => {
                tracing::info!(%error, "stdin closed");
                break false;
            }
        };
        let message = match line {
            Line::TooLong => Err(Some(Refusal {
                id: Value::Null,
                code: -32700,
                message: format!("parse error: message longer than {MAX_MESSAGE_BYTES} bytes"),
            })),
            Line::Text(text) if text.trim_ascii().is_empty() => continue,
            Line::Text(text) => match serde_json::from_slice::<Value>(text.trim_ascii()) {
                Ok(value) => Incoming::read(value),
                Err(error) => Err(Some(Refusal {
                    id: Value::Null,
                    code: -32700,
                    message: format!("parse error: {error}"),
                })),
            },
        };
        // Only what is answered takes a place: the client's answers to the server's own
        // requests, and its notifications (a cancellation), are read however many requests
        // wait, or a call waiting on the client could not hear back.
        let answered = matches!(message, Ok(Incoming::Request(_)) | Err(Some(_)));
        let permit = if answered {
            tokio::select! {
                // The semaphore is never closed.
                permit = permits.clone().acquire_owned() => permit.ok(),
                () = &mut stop => break true,
                () = output_failed.cancelled() => break true,
            }
        } else {
            None
        };
        match message {
            Ok(message) => answer(&session, &link, &output, &tasks, message, permit).await,
            Err(Some(refusal)) => tokio::select! {
                () = send(&link, &output, refusal.answer(), permit) => {}
                () = &mut stop => break true,
                () = output_failed.cancelled() => break true,
            },
            Err(None) => tracing::debug!("ignored an invalid message without an id"),
        }
    };
    tasks.close();
    if stopped {
        tracing::info!("stopping: answering the requests still running");
        session.close_session();
        wait_for(&tasks, STOP_WAIT).await;
    } else {
        // Handlers still running may notify the client before they answer: the session
        // closes once they are done. What waits on the client's answers (sampling, a listen
        // stream) can never end now, and gives up at once rather than hold the exit.
        link.end_input();
        wait_for(&tasks, END_OF_INPUT_WAIT).await;
        session.close_session();
    }
    finished.cancel();
    // An answer stuck writing to a client that no longer reads holds the writer: exit
    // rather than wait for it.
    match tokio::time::timeout(STOP_WAIT, writing).await {
        Ok(Ok(written)) => written,
        Ok(Err(error)) => Err(std::io::Error::other(error)),
        Err(_) => {
            tracing::warn!("output still blocked when closing; exiting without flushing");
            Ok(())
        }
    }
}

/// Answers `message` through `link`, holding `permit` until its answer is handed to the
/// writer: polled here once, then, if it waits, from a task of its own.
async fn answer(
    session: &McpServer,
    link: &ClientLink,
    output: &SharedOutput,
    tasks: &TaskTracker,
    message: Incoming,
    permit: Option<OwnedSemaphorePermit>,
) {
    let answering = {
        let session = session.clone();
        let link = link.clone();
        let output = Arc::clone(output);
        async move {
            if let Some(answer) = session.handle(message, None).await {
                send(&link, &output, answer, permit).await;
            }
        }
    };
    let mut answering = Box::pin(answering);
    // One poll here, with the reading task's waker: a finished call costs no task. One that
    // is not finished is polled again by its own task, which registers its own waker.
    if let Poll::Ready(()) = futures::poll!(answering.as_mut()) {
        return;
    }
    tasks.spawn(answering);
}

/// Sends an answer, holding `permit` until it is written or handed to the writer. Written
/// here at once when nothing sent before it is left to write and the output is free: what a
/// handler sent before its answer is then already out, so the order holds.
async fn send(
    link: &ClientLink,
    output: &SharedOutput,
    message: ServerJsonRpcMessage,
    permit: Option<OwnedSemaphorePermit>,
) {
    if link.unwritten() == 0
        && let Ok(mut out) = output.try_lock()
        && link.unwritten() == 0
    {
        // A failed write stops the session (`Output::failed`).
        if out.write(&message).await.is_ok() {
            let _ = out.flush().await;
        }
    } else if link.send(message, None).await.is_err() {
        tracing::warn!("could not write an answer: the output is closed");
    }
    drop(permit);
}

async fn wait_for(tasks: &TaskTracker, within: Duration) {
    if tokio::time::timeout(within, tasks.wait()).await.is_err() {
        tracing::warn!("timed out waiting for requests still being answered");
    }
}

/// The output, shared by the writer task and the reading task, which writes an answer ready
/// at once itself (see [`send`]): a hop to the writer task costs a context switch per answer.
struct Output {
    writer: Box<dyn AsyncWrite + Unpin + Send>,
    line: Vec<u8>,
    /// Cancelled once a write fails: the session stops.
    failed: CancellationToken,
}

type SharedOutput = Arc<tokio::sync::Mutex<Output>>;

impl Output {
    /// Writes `message` as a line, not yet flushed.
    async fn write(&mut self, message: &ServerJsonRpcMessage) -> std::io::Result<()> {
        self.line.clear();
        encode(message, &mut self.line).map_err(std::io::Error::other)?;
        self.line.push(b'\n');
        let written = self.writer.write_all(&self.line).await;
        self.failed_if(written)
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        let flushed = self.writer.flush().await;
        self.failed_if(flushed)
    }

    fn failed_if(&self, done: std::io::Result<()>) -> std::io::Result<()> {
        if let Err(error) = &done
            && !self.failed.is_cancelled()
        {
            tracing::warn!(%error, "stopping: the output cannot be written");
            self.failed.cancel();
        }
        done
    }
}

/// Writes each message of `outgoing` as a line, until `finished` and nothing is left.
async fn write_lines(
    output: SharedOutput,
    link: ClientLink,
    mut outgoing: Outbox,
    finished: CancellationToken,
) -> std::io::Result<()> {
    loop {
        let next = tokio::select! {
            biased;
            next = outgoing.recv() => next,
            () = finished.cancelled() => outgoing.try_recv().ok(),
        };
        let mut out = output.lock().await;
        let Some(next) = next else {
            return out.flush().await;
        };
        out.write(&next.message).await?;
        link.written();
        // A burst goes out in one flush.
        while let Ok(next) = outgoing.try_recv() {
            out.write(&next.message).await?;
            link.written();
        }
        out.flush().await?;
    }
}

/// One line of input.
enum Line<'a> {
    Text(&'a [u8]),
    /// Longer than [`MAX_MESSAGE_BYTES`]: its bytes were skipped.
    TooLong,
}

/// The lines of a byte stream, each held at most [`MAX_MESSAGE_BYTES`] long.
struct Lines<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// The line being read is longer than the limit: its bytes are being skipped.
    overflow: bool,
    /// `line` holds a line already handed out; cleared before the next is read.
    delivered: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    fn new(reader: R) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::with_capacity(4096),
            overflow: false,
            delivered: false,
        }
    }

    /// The next line; `None` at the end of input. Cancel-safe: all progress lives in `self`,
    /// so a call dropped at an await is resumed by the next one without losing bytes.
    async fn next(&mut self) -> std::io::Result<Option<Line<'_>>> {
        if self.delivered {
            self.line.clear();
            self.overflow = false;
            self.delivered = false;
        }
        loop {
            let buffer = self.reader.fill_buf().await?;
            if buffer.is_empty() {
                if self.line.is_empty() && !self.overflow {
                    return Ok(None);
                }
                break;
            }
            let (chunk, found) = match buffer.iter().position(|&b| b == b'\n') {
                Some(end) => (&buffer[..end], Some(end + 1)),
                None => (buffer, None),
            };
            if !self.overflow {
                if self.line.len() + chunk.len() > MAX_MESSAGE_BYTES {
                    self.overflow = true;
                    self.line = Vec::with_capacity(4096);
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let consumed = found.unwrap_or(buffer.len());
            self.reader.consume(consumed);
            if found.is_some() {
                break;
            }
        }
        self.delivered = true;
        Ok(Some(if self.overflow {
            Line::TooLong
        } else {
            Line::Text(&self.line)
        }))
    }
}
