//! `pkb-server`: the PKB MCP server over stdio, plus `tools` and `call` for people at a
//! terminal. It only parses flags, opens the store, collects what `pkb-core` declares and
//! starts the transport; everything else lives in `pkb-core`.

// stdout is the MCP channel: nothing may print to it by accident.
#![deny(clippy::print_stdout)]

mod cli;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use pkb_core::store::Store;
use pkb_core::transport::{DirectCalls, LineTransport};
use pkb_core::{Context, PkbServer, Registry};
use rmcp::ServiceExt;
use tracing_subscriber::EnvFilter;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_level.as_deref());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(&format!("cannot start the async runtime: {error}")),
    };
    runtime.block_on(run(cli))
}

/// Logs go to stderr only: stdout carries the protocol.
fn init_logging(level: Option<&str>) {
    let filter = match level {
        Some(level) => EnvFilter::new(level),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

async fn run(cli: Cli) -> ExitCode {
    let registry = match Registry::collect() {
        Ok(registry) => Arc::new(registry),
        Err(error) => return fail(&error.to_string()),
    };
    if let Some(Command::Tools) = &cli.command {
        return cli::print_tools(&registry);
    }
    let store = match open_store(&cli) {
        Ok(store) => store,
        Err(message) => return fail(&message),
    };
    match cli.command {
        Some(Command::Call { tool, arguments }) => {
            cli::call(&registry, Context::detached(store), &tool, &arguments).await
        }
        Some(Command::Check) => cli::check(&store).await,
        Some(Command::Reindex) => cli::reindex(&store).await,
        Some(Command::Tools) => unreachable!("handled above"),
        None => serve(registry, store, Duration::from_secs(cli.sampling_timeout)).await,
    }
}

fn open_store(cli: &Cli) -> Result<Store, String> {
    let seed = !cli.no_seed;
    if cli.memory {
        return Store::open_in_memory(seed).map_err(|e| e.to_string());
    }
    let path = match &cli.db {
        Some(path) => path.clone(),
        None => Store::default_path().map_err(|e| e.to_string())?,
    };
    let maintenance = matches!(cli.command, Some(Command::Check | Command::Reindex));
    if maintenance && !path.exists() {
        // Looking after a store must not create one (a mistyped --db would pass the check).
        return Err(format!("no store at {}", path.display()));
    }
    tracing::info!(path = %path.display(), "opening the note store");
    Store::open(&path, seed).map_err(|e| e.to_string())
}

/// How long the store must go without a request to this server before its search index is
/// merged: long enough that a burst of requests is not slowed by it.
const INDEX_UPKEEP_QUIET: Duration = Duration::from_secs(2);

async fn serve(registry: Arc<Registry>, store: Store, sampling_timeout: Duration) -> ExitCode {
    // Listen before the first byte is read: a signal that arrives while the client is still
    // initializing must stop the server cleanly, not kill it with the default action.
    let shutdown = match ShutdownSignal::listen() {
        Ok(shutdown) => shutdown,
        Err(error) => return fail(&format!("cannot listen for signals: {error}")),
    };
    let _upkeep = store.spawn_index_upkeep(INDEX_UPKEEP_QUIET);
    let server = PkbServer::new(registry, store).with_sampling_timeout(sampling_timeout);
    // Once the client has initialized, plain tool calls skip rmcp's service loop.
    let direct_calls = DirectCalls::new(server.clone());
    let session = server.clone();
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    let transport = LineTransport::new(stdin, stdout).with_direct_calls(direct_calls);
    let mut shutdown = Box::pin(shutdown.received());
    let service = tokio::select! {
        served = server.serve(transport) => match served {
            Ok(service) => service,
            Err(error) => return fail(&format!("the client did not initialize: {error}")),
        },
        () = &mut shutdown => {
            tracing::info!("signal received before the client initialized, shutting down");
            return ExitCode::SUCCESS;
        }
    };
    let cancel = service.cancellation_token();
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("signal received, shutting down");
        cancel.cancel();
        session.close_session();
    });
    match service.waiting().await {
        Ok(reason) => {
            tracing::info!(?reason, "server stopped");
            ExitCode::SUCCESS
        }
        Err(error) => fail(&format!("server task failed: {error}")),
    }
}

/// SIGTERM or SIGINT, registered when made (on Unix; elsewhere Ctrl-C, registered when first
/// awaited). Every acknowledged write is already committed, so stopping between requests
/// loses nothing.
struct ShutdownSignal {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl ShutdownSignal {
    fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                terminate: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    async fn received(mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => {}
                _ = self.interrupt.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn fail(message: &str) -> ExitCode {
    tracing::error!("{message}");
    eprintln!("pkb-server: {message}");
    ExitCode::FAILURE
}
