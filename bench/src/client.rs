//! A JSON-RPC client over a child's pipes, as an MCP client speaks to a stdio server, and the
//! checks every answer must pass.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::corpus::Note;

/// A failed run: what went wrong, for the user.
pub type Error = String;

/// How to start a server.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The `serverInfo.name` its initialize answer must carry.
    pub name: &'static str,
}

/// A running server.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: String,
    next_id: u64,
    name: &'static str,
    /// The `_meta` every request carries on the stateless revision; `None` in a session.
    meta: Option<Value>,
}

/// The initialize request, sent first.
fn initialize_line() -> String {
    let request = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "pkb-bench", "version": env!("CARGO_PKG_VERSION") },
        },
    });
    format!("{request}\n")
}

impl Peer {
    /// Spawns the server and completes the MCP handshake. The duration runs from just before
    /// the spawn to the arrival of the initialize answer.
    pub fn start(launch: &Launch) -> Result<(Peer, Duration), Error> {
        let init = initialize_line();
        let started = Instant::now();
        let mut peer = Peer::spawn(launch, None)?;
        peer.send(init.as_bytes())?;
        let answer = loop {
            let message = peer.read()?;
            if message.get("id") == Some(&json!(0)) {
                break message;
            }
        };
        let elapsed = started.elapsed();
        let server = answer
            .pointer("/result/serverInfo/name")
            .and_then(Value::as_str);
        if server != Some(launch.name) {
            return Err(format!(
                "{}: unexpected initialize answer: {answer}",
                launch.name
            ));
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        peer.send(format!("{initialized}\n").as_bytes())?;
        Ok((peer, elapsed))
    }

    /// Starts the server's process with its pipes; `meta` goes on every request.
    fn spawn(launch: &Launch, meta: Option<Value>) -> Result<Peer, Error> {
        let mut child = Command::new(&launch.program)
            .args(&launch.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", launch.program.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        Ok(Peer {
            child,
            stdin: Some(stdin),
            stdout: BufReader::with_capacity(256 * 1024, stdout),
            line: String::with_capacity(64 * 1024),
            next_id: 1,
            name: launch.name,
            meta,
        })
    }

    /// Spawns the server and speaks the stateless 2026-07-28 revision to it: no
    /// initialize, `server/discover` first, `_meta` on every request.
    pub fn start_stateless(launch: &Launch) -> Result<Peer, Error> {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "pkb-bench", "version": env!("CARGO_PKG_VERSION") },
        });
        let mut peer = Peer::spawn(launch, Some(meta.clone()))?;
        let discover = json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta}});
        let (_, answer) = peer.round_trip(0, &format!("{discover}\n"))?;
        let versions = answer
            .pointer("/result/supportedVersions")
            .and_then(Value::as_array);
        if !versions.is_some_and(|v| v.contains(&json!("2026-07-28"))) {
            return Err(format!(
                "{}: 2026-07-28 is not served: {answer}",
                launch.name
            ));
        }
        Ok(peer)
    }

    /// The name it answers initialize with.
    pub fn name(&self) -> &'static str {
        self.name
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(bytes)
            .map_err(|e| format!("{}: write failed: {e}", self.name))
    }

    /// Reads one line into `self.line`.
    fn read_line(&mut self) -> Result<(), Error> {
        self.line.clear();
        match self.stdout.read_line(&mut self.line) {
            Ok(0) => Err(format!("{}: the server closed its stdout", self.name)),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("{}: read failed: {e}", self.name)),
        }
    }

    fn read(&mut self) -> Result<Value, Error> {
        self.read_line()?;
        serde_json::from_str(&self.line)
            .map_err(|e| format!("{}: an answer is not JSON ({e}): {}", self.name, self.line))
    }

    /// A tools/call request line and its id.
    pub fn tool_request(&mut self, tool: &str, args: &Value) -> (u64, String) {
        let id = self.next_id;
        self.next_id += 1;
        let mut request = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": args },
        });
        if let Some(meta) = &self.meta {
            request["params"]["_meta"] = meta.clone();
        }
        (id, format!("{request}\n"))
    }

    /// Sends one prepared request and waits for its answer; the time is from the write to the
    /// arrival of the answer. Notifications on the way are skipped.
    pub fn round_trip(&mut self, id: u64, line: &str) -> Result<(Duration, Value), Error> {
        let started = Instant::now();
        self.send(line.as_bytes())?;
        loop {
            self.read_line()?;
            let elapsed = started.elapsed();
            let message: Value = serde_json::from_str(&self.line).map_err(|e| {
                format!("{}: an answer is not JSON ({e}): {}", self.name, self.line)
            })?;
            if message.get("id").is_some() {
                if message.get("id") != Some(&json!(id)) {
                    return Err(format!("{}: answer to the wrong id: {message}", self.name));
                }
                return Ok((elapsed, message));
            }
        }
    }

    /// Sends `lines` (prepared requests with distinct ids) keeping `window` of them in flight,
    /// and returns the answers by id with the time from the first write to the last answer.
    pub fn pipeline(
        &mut self,
        lines: &[(u64, String)],
        window: usize,
    ) -> Result<(Duration, HashMap<u64, Value>), Error> {
        let mut raw: Vec<String> = Vec::with_capacity(lines.len());
        let started = Instant::now();
        let mut sent = 0;
        while sent < lines.len().min(window) {
            self.send(lines[sent].1.as_bytes())?;
            sent += 1;
        }
        let mut answered = 0;
        while answered < lines.len() {
            self.read_line()?;
            // A cheap look while the clock runs; every line is parsed and checked afterwards.
            let head = &self.line.as_bytes()[..self.line.len().min(48)];
            let notification = head.windows(8).any(|w| w == b"\"method\"");
            raw.push(std::mem::take(&mut self.line));
            if !notification {
                answered += 1;
                if sent < lines.len() {
                    let line = &lines[sent].1;
                    sent += 1;
                    self.send(line.as_bytes())?;
                }
            }
        }
        let elapsed = started.elapsed();
        let mut answers = HashMap::with_capacity(lines.len());
        for line in raw {
            let message: Value = serde_json::from_str(&line)
                .map_err(|e| format!("{}: an answer is not JSON ({e}): {line}", self.name))?;
            match message.get("id").and_then(Value::as_u64) {
                Some(id) => {
                    if answers.insert(id, message).is_some() {
                        return Err(format!("{}: two answers to id {id}", self.name));
                    }
                }
                None if message.get("method").is_some() => {}
                None => return Err(format!("{}: an answer without id: {message}", self.name)),
            }
        }
        for (id, _) in lines {
            if !answers.contains_key(id) {
                return Err(format!("{}: no answer to id {id}", self.name));
            }
        }
        Ok((elapsed, answers))
    }

    /// The peak resident set size so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// CPU time used so far by all of the server's live threads.
    pub fn cpu_time(&self) -> Duration {
        pkb_bench::cpu_time(self.child.id())
    }

    /// Closes stdin, which ends a stdio server, and waits for it to exit.
    pub fn stop(mut self) -> Result<(), Error> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "{}: did not exit within 30 s of stdin closing",
                        self.name
                    ));
                }
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            drop(self.stdin.take());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What a call's answer must hold.
#[derive(Debug, Clone)]
pub enum Expect {
    /// `echo` of this text.
    Echo(String),
    /// `fetch` of this note.
    Fetch(Note),
    /// `search`: at most `limit` results, all among `matches`, and as many as there are.
    Search {
        /// The most results asked for.
        limit: usize,
        /// Every note matching the query, by number (see [`Catalog`]), newest first.
        matches: std::sync::Arc<Vec<u32>>,
    },
    /// `write` of a new note.
    Write(Note),
    /// `edit` of a note that leaves it at `version`.
    Edit {
        /// The note's id.
        id: String,
        /// Its version after the edit.
        version: u64,
    },
    /// `search` whose matches are not known here: at most `limit` stored notes, best first.
    Ranked {
        /// The most results asked for.
        limit: usize,
    },
    /// `history` of one note whose newest version is `newest`, listing `listed` versions.
    History {
        /// The note's id.
        id: String,
        /// Its newest version.
        newest: u64,
        /// How many versions the answer lists.
        listed: usize,
    },
}

/// The notes a server holds, numbered in load order (seed notes first).
#[derive(Default)]
pub struct Catalog {
    /// The notes by number.
    pub notes: Vec<Note>,
    /// Note numbers by id.
    pub by_id: HashMap<String, u32>,
}

impl Catalog {
    /// Adds a note; its number is the next one.
    pub fn push(&mut self, note: Note) {
        self.by_id.insert(note.id.clone(), self.notes.len() as u32);
        self.notes.push(note);
    }
}

/// Checks a tools/call answer; `Err` says what is wrong.
pub fn check(answer: &Value, expect: &Expect, catalog: &Catalog) -> Result<(), Error> {
    let fail = |why: &str| Err(format!("{why}: {answer}"));
    if answer.get("error").is_some() {
        return fail("a JSON-RPC error");
    }
    let Some(result) = answer.get("result") else {
        return fail("no result");
    };
    if result.get("isError") == Some(&Value::Bool(true)) {
        return fail("a tool error");
    }
    let text = result.pointer("/content/0/text").and_then(Value::as_str);
    let structured = result.get("structuredContent");
    let (Some(text), Some(structured)) = (text, structured) else {
        return fail("no text item or no structuredContent");
    };
    if result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::len)
        != Some(1)
    {
        return fail("not exactly one content item");
    }
    let text_is_json = || serde_json::from_str::<Value>(text).ok().as_ref() == Some(structured);
    match expect {
        Expect::Echo(sent) => {
            if text != sent || structured.get("text").and_then(Value::as_str) != Some(sent) {
                return fail("echo did not return the text");
            }
        }
        Expect::Fetch(note) => {
            let got = structured.get("note");
            let field = |key: &str| got.and_then(|n| n.get(key)).and_then(Value::as_str);
            if field("id") != Some(&note.id)
                || field("title") != Some(&note.title)
                || field("body") != Some(&note.body)
                || got.and_then(|n| n.get("tags")) != Some(&json!(note.tags))
                || field("created_at").is_none()
                || field("updated_at").is_none()
            {
                return fail(&format!("fetch did not return note {}", note.id));
            }
            if !text_is_json() {
                return fail("the text item is not the structured content");
            }
        }
        Expect::Search { limit, matches } => {
            let Some(results) = structured.get("results").and_then(Value::as_array) else {
                return fail("no results array");
            };
            if results.len() != matches.len().min(*limit) {
                return fail(&format!(
                    "{} results where {} notes match (limit {limit})",
                    results.len(),
                    matches.len()
                ));
            }
            let mut last_score = f64::INFINITY;
            let mut seen = std::collections::HashSet::new();
            for hit in results {
                let id = hit.get("id").and_then(Value::as_str).unwrap_or_default();
                let Some(&number) = catalog.by_id.get(id) else {
                    return fail(&format!("result {id:?} is not a stored note"));
                };
                // `matches` is sorted newest (highest number) first.
                if matches.binary_search_by(|m| number.cmp(m)).is_err() {
                    return fail(&format!("result {id} does not match the query"));
                }
                let note = &catalog.notes[number as usize];
                let score = hit.get("score").and_then(Value::as_f64);
                if !seen.insert(id)
                    || hit.get("title").and_then(Value::as_str) != Some(&note.title)
                    || hit.get("tags") != Some(&json!(note.tags))
                    || hit.get("uri").and_then(Value::as_str) != Some(&format!("pkb://notes/{id}"))
                    || score.is_none_or(|s| s > last_score)
                {
                    return fail(&format!("result {id} is malformed or out of order"));
                }
                last_score = score.unwrap_or_default();
            }
            if !text_is_json() {
                return fail("the text item is not the structured content");
            }
        }
        Expect::Write(note) => {
            if structured.get("id").and_then(Value::as_str) != Some(&note.id)
                || structured.get("title").and_then(Value::as_str) != Some(&note.title)
                || structured.get("created") != Some(&Value::Bool(true))
                || text != format!("saved: {}", note.id)
            {
                return fail(&format!("write did not create {}", note.id));
            }
        }
        Expect::Edit { id, version } => {
            if structured.get("id").and_then(Value::as_str) != Some(id)
                || structured.get("version") != Some(&json!(version))
                || text != format!("edited: {id} (version {version})")
            {
                return fail(&format!("edit did not make version {version} of {id}"));
            }
        }
        Expect::Ranked { limit } => {
            let Some(results) = structured.get("results").and_then(Value::as_array) else {
                return fail("no results array");
            };
            if results.len() > *limit {
                return fail(&format!("{} results of {limit}", results.len()));
            }
            let mut last = f64::INFINITY;
            for hit in results {
                let id = hit.get("id").and_then(Value::as_str).unwrap_or_default();
                let score = hit.get("score").and_then(Value::as_f64);
                if !catalog.by_id.contains_key(id) || score.is_none_or(|s| s > last) {
                    return fail(&format!(
                        "result {id:?} is not a stored note or out of order"
                    ));
                }
                last = score.unwrap_or_default();
            }
        }
        Expect::History { id, newest, listed } => {
            let versions = structured.get("versions").and_then(Value::as_array);
            if structured.get("id").and_then(Value::as_str) != Some(id)
                || versions.map(Vec::len) != Some(*listed)
                || versions
                    .and_then(|v| v.first())
                    .and_then(|v| v.get("version"))
                    != Some(&json!(newest))
                || !text_is_json()
            {
                return fail(&format!(
                    "history of {id} is not its newest {listed} versions"
                ));
            }
        }
    }
    Ok(())
}
