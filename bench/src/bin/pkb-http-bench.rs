//! `pkb-http-bench`: PKB over Streamable HTTP against an HTTP floor, in one run.
//!
//! ```sh
//! cargo run --release -p pkb-bench --bin pkb-http-bench -- [--calls N] [--sessions N]
//! ```
//!
//! The floor is this binary re-executed as `--floor`: a minimal hyper server (HTTP/1.1,
//! `TCP_NODELAY`) answering the same JSON-RPC from a map, as JSON. Against it, the release
//! `pkb-server --http` (without authorization, with `--auth tokens`, and with `--auth oauth`
//! against an issuer in this process, [`pkb_bench::issuer`]) is measured for
//! tools/call latency on one session, throughput over concurrent sessions, fetch and word
//! search beside 16 sessions searching by meaning, and the memory of idle sessions. Every answer is checked. Figures are ratios to the floor of the same run;
//! nothing here is a wall-clock assertion.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const USAGE: &str = "\
pkb-http-bench: PKB over Streamable HTTP against a minimal hyper floor

usage: cargo run --release -p pkb-bench --bin pkb-http-bench -- [options]

  --calls N        sequential fetches on one session, after warm-up [default: 5000]
  --sessions N     concurrent sessions for the throughput run [default: 64]
  --seconds N      length of the throughput run [default: 3]
  --idle N         idle sessions for the memory figure [default: 1000]
  --server PATH    the server binary [default: pkb-server next to this binary]
  --no-build       do not run `cargo build --release -p pkb-server` first
";

/// How many sessions search by meaning at once beside the one measured.
const MEANING_LOAD: usize = 16;

struct Config {
    calls: usize,
    sessions: usize,
    seconds: u64,
    idle: usize,
    server: Option<PathBuf>,
    build: bool,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--floor") {
        return run_floor();
    }
    let config = match parse(&args) {
        Ok(Some(config)) => config,
        Ok(None) => {
            eprint!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("pkb-http-bench: {message}\n\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    match runtime.block_on(bench(&config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("pkb-http-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

fn parse(args: &[String]) -> Result<Option<Config>, String> {
    let mut config = Config {
        calls: 5000,
        sessions: 64,
        seconds: 3,
        idle: 1000,
        server: None,
        build: true,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name} needs a positive number"))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--calls" => config.calls = number("--calls")?,
            "--sessions" => config.sessions = number("--sessions")?,
            "--seconds" => config.seconds = number("--seconds")? as u64,
            "--idle" => config.idle = number("--idle")?,
            "--no-build" => config.build = false,
            "--server" => {
                config.server = Some(PathBuf::from(args.next().ok_or("--server needs a path")?))
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(config))
}

/// A server process listening on a loopback port.
struct Listening {
    child: Child,
    origin: String,
    name: &'static str,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Listening {
    async fn start(name: &'static str, program: &Path, args: &[&str]) -> Result<Self, String> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "warn")
            .spawn()
            .map_err(|e| format!("{name}: cannot start {}: {e}", program.display()))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let stderr = tokio::process::ChildStderr::from_std(stderr).map_err(|e| e.to_string())?;
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            match lines.next_line().await.map_err(|e| e.to_string())? {
                Some(line) => {
                    if let Some(url) = line.split("listening on ").nth(1) {
                        break url.trim().to_owned();
                    }
                }
                None => return Err(format!("{name} exited before listening")),
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let origin = url
            .trim_end_matches("/mcp")
            .trim_start_matches("http://")
            .to_owned();
        Ok(Self {
            child,
            origin,
            name,
        })
    }

    fn rss_kib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0)
    }

    fn cpu(&self) -> Duration {
        pkb_bench::cpu_time(self.child.id())
    }
}

/// One MCP session over one HTTP/1.1 connection.
struct Session {
    sender: SendRequest<Full<Bytes>>,
    host: String,
    token: Option<String>,
    session: Option<String>,
    next_id: u64,
}

impl Session {
    /// A session whose client declares `capabilities` (as VS Code declares sampling,
    /// elicitation and roots).
    async fn open(origin: &str, token: Option<&str>, capabilities: &Value) -> Result<Self, String> {
        let tcp = tokio::net::TcpStream::connect(origin)
            .await
            .map_err(|e| format!("connect {origin}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let mut session = Self {
            sender,
            host: origin.to_owned(),
            token: token.map(str::to_owned),
            session: None,
            next_id: 0,
        };
        let (headers, answer) = session
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "pkb-http-bench", "version": "1"}}}),
            )
            .await?;
        if answer.and_then(|a| a.get("result").cloned()).is_none() {
            return Err("initialize was not answered".into());
        }
        session.session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(session)
    }

    async fn post(&mut self, body: Value) -> Result<(http::HeaderMap, Option<Value>), String> {
        let mut request = http::Request::post("/mcp")
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())?;
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        let message = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .chain(std::iter::once(text.as_ref()))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some());
        Ok((headers, message))
    }

    /// One call of the tool `name`: its round trip and its structured answer.
    async fn call(&mut self, name: &str, arguments: Value) -> Result<(Duration, Value), String> {
        self.next_id += 1;
        let started = Instant::now();
        let (_, answer) = self
            .post(
                json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}),
            )
            .await?;
        let took = started.elapsed();
        match answer
            .as_ref()
            .and_then(|a| a.pointer("/result/structuredContent"))
        {
            Some(content) => Ok((took, content.clone())),
            None => Err(format!("a wrong answer to {name}: {answer:?}")),
        }
    }

    /// One checked fetch of `id`; its round trip.
    async fn fetch(&mut self, id: &str) -> Result<Duration, String> {
        let (took, note) = self.call("fetch", json!({"id": id})).await?;
        if note.pointer("/note/id").and_then(Value::as_str) != Some(id) {
            return Err(format!("a wrong answer to fetch {id}: {note}"));
        }
        Ok(took)
    }

    /// One search of `query` in `mode` that finds something; its round trip.
    async fn search(&mut self, query: &str, mode: &str) -> Result<Duration, String> {
        let (took, found) = self
            .call("search", json!({"query": query, "mode": mode}))
            .await?;
        match found.get("results").and_then(Value::as_array) {
            Some(results) if !results.is_empty() => Ok(took),
            _ => Err(format!(
                "{mode} search for {query:?} found nothing: {found}"
            )),
        }
    }
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// p50 and p99 of `calls` sequential fetches on one session, in µs, and the server's CPU
/// time per call.
async fn latency(
    server: &Listening,
    token: Option<&str>,
    calls: usize,
) -> Result<(f64, f64, f64), String> {
    latency_declaring(server, token, calls, &json!({})).await
}

/// [`latency`] of a session whose client declares `capabilities`.
async fn latency_declaring(
    server: &Listening,
    token: Option<&str>,
    calls: usize,
    capabilities: &Value,
) -> Result<(f64, f64, f64), String> {
    let mut session = Session::open(&server.origin, token, capabilities).await?;
    for _ in 0..calls / 10 {
        session.fetch("deploy-checklist").await?;
    }
    let cpu_before = server.cpu();
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        samples.push(session.fetch("deploy-checklist").await?.as_secs_f64() * 1e6);
    }
    let cpu = (server.cpu() - cpu_before).as_secs_f64() * 1e6 / calls as f64;
    samples.sort_by(f64::total_cmp);
    Ok((percentile(&samples, 0.5), percentile(&samples, 0.99), cpu))
}

/// Calls per second over `sessions` concurrent sessions, each calling in sequence.
async fn throughput(server: &Listening, sessions: usize, seconds: u64) -> Result<f64, String> {
    let mut open = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        open.push(Session::open(&server.origin, None, &json!({})).await?);
    }
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for mut session in open {
        let done = Arc::clone(&done);
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                session.fetch("todo").await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// Fetch and word-search p50 (µs) on one session, `calls` of each, while `load` other
/// sessions search by meaning one query after another (none when `load` is 0), and the
/// searches by meaning answered per second meanwhile.
async fn beside_meaning_searches(
    server: &Listening,
    load: usize,
    calls: usize,
) -> Result<([f64; 2], f64), String> {
    let mut searching = Vec::with_capacity(load);
    for _ in 0..load {
        searching.push(Session::open(&server.origin, None, &json!({})).await?);
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for (k, mut session) in searching.into_iter().enumerate() {
        let stop = Arc::clone(&stop);
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                // A new query each time: nothing the server keeps can answer it.
                let query = format!("how do we ship release {k}.{n} after the tests pass");
                session.search(&query, "meaning").await?;
                n += 1;
            }
            Ok::<_, String>(n)
        }));
    }
    let mut measured = Session::open(&server.origin, None, &json!({})).await?;
    // The encoder is loaded and every searcher under way before anything is timed.
    measured.search("ship a release", "meaning").await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (mut fetches, mut searches) = (Vec::new(), Vec::new());
    let started = Instant::now();
    for _ in 0..calls {
        fetches.push(measured.fetch("deploy-checklist").await?.as_secs_f64() * 1e6);
        searches.push(measured.search("deploy", "words").await?.as_secs_f64() * 1e6);
    }
    stop.store(true, Ordering::Relaxed);
    let took = started.elapsed().as_secs_f64();
    let mut meaning = 0;
    for task in tasks {
        meaning += task.await.map_err(|e| e.to_string())??;
    }
    fetches.sort_by(f64::total_cmp);
    searches.sort_by(f64::total_cmp);
    let p50s = [percentile(&fetches, 0.5), percentile(&searches, 0.5)];
    Ok((p50s, f64::from(meaning) / took))
}

/// The server's RSS growth, in KiB, once `count` sessions are open and idle.
async fn idle_sessions(server: &Listening, count: usize) -> Result<(f64, f64), String> {
    let before = server.rss_kib();
    for _ in 0..count {
        // The connection closes; the session stays until it idles out.
        drop(Session::open(&server.origin, None, &json!({})).await?);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = server.rss_kib();
    Ok((after, after - before))
}

fn server_binary(config: &Config) -> Result<PathBuf, String> {
    if config.build {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "-p", "pkb-server"])
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("building pkb-server failed".into());
        }
    }
    match &config.server {
        Some(path) => Ok(path.clone()),
        None => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            Ok(exe.with_file_name("pkb-server"))
        }
    }
}

async fn bench(config: &Config) -> Result<(), String> {
    let program = server_binary(config)?;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let data = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data_dir = data.path().to_str().ok_or("a temp path")?.to_owned();
    let token = Command::new(&program)
        .args(["--data-dir", &data_dir, "token", "create", "bench"])
        .output()
        .map_err(|e| e.to_string())?;
    let token = String::from_utf8_lossy(&token.stdout).trim().to_owned();

    let floor = Listening::start("floor", &me, &["--floor"]).await?;
    let pkb = Listening::start("pkb", &program, &["--http", "127.0.0.1:0", "--memory"]).await?;
    let tokens = Listening::start(
        "pkb --auth tokens",
        &program,
        &[
            "--http",
            "127.0.0.1:0",
            "--memory",
            "--auth",
            "tokens",
            "--data-dir",
            &data_dir,
        ],
    )
    .await?;
    let issuer = pkb_bench::issuer::Issuer::start().await?;
    let jwks_url = format!("{}/jwks", issuer.url);
    let oauth = Listening::start(
        "pkb --auth oauth",
        &program,
        &[
            "--http",
            "127.0.0.1:0",
            "--memory",
            "--auth",
            "oauth",
            "--oauth-issuer",
            &issuer.url,
            "--oauth-jwks-url",
            &jwks_url,
            "--oauth-audience",
            pkb_bench::issuer::AUDIENCE,
            "--data-dir",
            &data_dir,
        ],
    )
    .await?;

    let mut rows: Vec<(String, String, String, String)> = Vec::new();
    let mut targets: Vec<(String, String, bool)> = Vec::new();

    let floor_latency = latency(&floor, None, config.calls).await?;
    let pkb_latency = latency(&pkb, None, config.calls).await?;
    let tokens_latency = latency(&tokens, Some(&token), config.calls).await?;
    let oauth_latency = latency(&oauth, Some(&issuer.token), config.calls).await?;
    let declaring = json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}});
    let declaring_latency = latency_declaring(&pkb, None, config.calls, &declaring).await?;
    for (who, (p50, p99, cpu)) in [
        (floor.name, floor_latency),
        (pkb.name, pkb_latency),
        (
            "pkb, client declaring sampling, elicitation and roots",
            declaring_latency,
        ),
        (tokens.name, tokens_latency),
        (oauth.name, oauth_latency),
    ] {
        rows.push((
            format!("fetch, one session ({})", who),
            format!("p50 {p50:.1} µs, p99 {p99:.1} µs"),
            format!("server CPU {cpu:.1} µs/call"),
            format!("{:.2}x", p50 / floor_latency.0),
        ));
    }
    let ratio = pkb_latency.0 / floor_latency.0;
    targets.push((
        "tools/call p50 <= 1.5x floor".into(),
        format!("{ratio:.2}x"),
        ratio <= 1.5,
    ));
    let ratio = declaring_latency.0 / floor_latency.0;
    targets.push((
        "tools/call p50 <= 1.5x floor, client declaring sampling, elicitation and roots".into(),
        format!("{ratio:.2}x"),
        ratio <= 1.5,
    ));
    let auth_ratio = tokens_latency.0 / pkb_latency.0;
    targets.push((
        "tokens add <= 10% to a fetch (p50)".into(),
        format!("{:+.1}%", (auth_ratio - 1.0) * 100.0),
        auth_ratio <= 1.10,
    ));
    let jwt_ratio = oauth_latency.0 / pkb_latency.0;
    targets.push((
        "JWT checks add <= 10% to a fetch (p50)".into(),
        format!("{:+.1}%", (jwt_ratio - 1.0) * 100.0),
        jwt_ratio <= 1.10,
    ));

    let floor_rate = throughput(&floor, config.sessions, config.seconds).await?;
    let pkb_rate = throughput(&pkb, config.sessions, config.seconds).await?;
    rows.push((
        format!("{} sessions, sequential fetches", config.sessions),
        format!("pkb {pkb_rate:.0}/s"),
        format!("floor {floor_rate:.0}/s"),
        format!("{:.2}x", pkb_rate / floor_rate),
    ));
    let ratio = pkb_rate / floor_rate;
    targets.push((
        format!("{} sessions >= 0.5x floor calls/s", config.sessions),
        format!("{ratio:.2}x"),
        ratio >= 0.5,
    ));

    let (floor_rss, floor_growth) = idle_sessions(&floor, config.idle).await?;
    let (pkb_rss, pkb_growth) = idle_sessions(&pkb, config.idle).await?;
    rows.push((
        format!("{} idle sessions, RSS", config.idle),
        format!(
            "pkb {:.1} MiB (+{:.1})",
            pkb_rss / 1024.0,
            pkb_growth / 1024.0
        ),
        format!(
            "floor {:.1} MiB (+{:.1})",
            floor_rss / 1024.0,
            floor_growth / 1024.0
        ),
        format!("{:.1} KiB/session", pkb_growth / config.idle as f64),
    ));
    targets.push((
        format!("{} idle sessions <= 50 MB RSS", config.idle),
        format!("{:.1} MiB", pkb_rss / 1024.0),
        pkb_rss / 1024.0 <= 50.0,
    ));

    // Issue 52, item 14: searches by meaning share the machine. Last, since the encoder
    // they load would count in the idle sessions' memory.
    let meaning_calls = (config.calls / 10).max(50);
    let (idle, _) = beside_meaning_searches(&pkb, 0, meaning_calls).await?;
    let (loaded, meaning_rate) = beside_meaning_searches(&pkb, MEANING_LOAD, meaning_calls).await?;
    for (k, what) in ["fetch", "word search"].into_iter().enumerate() {
        let ratio = loaded[k] / idle[k];
        rows.push((
            format!(
                "{what} p50 beside {MEANING_LOAD} sessions searching by meaning \
                 ({meaning_rate:.0} searches/s)"
            ),
            format!("{:.1} µs", loaded[k]),
            format!("idle {:.1} µs", idle[k]),
            format!("{ratio:.2}x"),
        ));
        targets.push((
            format!("{what} p50 beside {MEANING_LOAD} meaning searchers <= 2x idle"),
            format!("{ratio:.2}x"),
            ratio <= 2.0,
        ));
    }

    let mut table = String::from("| measure | pkb | reference | ratio |\n|---|---|---|---|\n");
    for (what, a, b, ratio) in rows {
        table.push_str(&format!("| {what} | {a} | {b} | {ratio} |\n"));
    }
    table.push_str("\n| target | measured | holds |\n|---|---|---|\n");
    for (target, measured, holds) in targets {
        let holds = if holds { "yes" } else { "no" };
        table.push_str(&format!("| {target} | {measured} | {holds} |\n"));
    }
    use std::io::Write;
    std::io::stdout()
        .write_all(table.as_bytes())
        .map_err(|e| e.to_string())
}

/// The floor: answers initialize, notifications and tools/call from a map, as JSON.
fn run_floor() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    match runtime.block_on(serve_floor()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("floor: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_floor() -> std::io::Result<()> {
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        eprintln!("floor: listening on http://{}/mcp", listener.local_addr()?);
        let notes = Arc::new(floor_notes());
        let sessions = Arc::new(Mutex::new(std::collections::HashSet::<u64>::new()));
        let next = Arc::new(AtomicU64::new(1));
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let (notes, sessions, next) =
                (Arc::clone(&notes), Arc::clone(&sessions), Arc::clone(&next));
            let service = hyper::service::service_fn(
                move |request: http::Request<hyper::body::Incoming>| {
                    let (notes, sessions, next) =
                        (Arc::clone(&notes), Arc::clone(&sessions), Arc::clone(&next));
                    async move {
                        let bytes = match request.into_body().collect().await {
                            Ok(collected) => collected.to_bytes(),
                            Err(_) => Bytes::new(),
                        };
                        let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        let mut response = http::Response::builder();
                        let Some(id) = message.get("id").cloned() else {
                            return Ok(empty(response.status(202)));
                        };
                        let result = match message.get("method").and_then(Value::as_str) {
                            Some("initialize") => {
                                let session = next.fetch_add(1, Ordering::Relaxed);
                                sessions.lock().unwrap().insert(session);
                                response = response.header("mcp-session-id", session.to_string());
                                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "pkb-floor", "version": "1"}})
                            }
                            Some("tools/call") => {
                                let note_id = message
                                    .pointer("/params/arguments/id")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default();
                                match notes.get(note_id) {
                                    Some(note) => {
                                        let structured = json!({"note": note});
                                        json!({"content": [{"type": "text", "text":
                                        serde_json::to_string_pretty(&structured).unwrap_or_default()}],
                                        "structuredContent": structured, "isError": false})
                                    }
                                    None => json!({"content": [{"type": "text", "text":
                                    format!("No note found with ID: {note_id}")}], "isError": true}),
                                }
                            }
                            _ => json!({}),
                        };
                        let body =
                            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                        let response = response
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body)))
                            .unwrap_or_else(|_| http::Response::new(Full::new(Bytes::new())));
                        Ok::<_, std::convert::Infallible>(response)
                    }
                },
            );
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    }
}

fn empty(builder: http::response::Builder) -> http::Response<Full<Bytes>> {
    builder
        .body(Full::new(Bytes::new()))
        .unwrap_or_else(|_| http::Response::new(Full::new(Bytes::new())))
}

fn floor_notes() -> HashMap<String, Value> {
    let now = pkb_core::note::now_rfc3339();
    pkb_core::store::SEED_NOTES
        .iter()
        .map(|(id, title, tags, body)| {
            let note = json!({"id": id, "title": title, "tags": tags, "body": body,
                "created_at": now, "updated_at": now});
            ((*id).to_owned(), note)
        })
        .collect()
}
