//! `pkb-server`: the PKB MCP server over stdio or Streamable HTTP, plus terminal commands
//! (`tools`, `call`, `check`, `reindex`, `import`, `export`, `token`, `account`, `web`). It only parses flags, opens the store,
//! collects what `pkb-core` declares and starts the transport; everything else lives in
//! `pkb-core`.

// stdout is the MCP channel: nothing may print to it by accident.
#![deny(clippy::print_stdout)]

mod cli;
mod vault_commands;

use pkb_core::store::sqlite;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use pkb_core::auth::local::{LocalAuthority, LocalSettings};
use pkb_core::auth::{Authenticator, JwtVerifier, OAuthSettings, OAuthStartError, TokenVerifier};
use pkb_core::framework::changes::ChangeHub;
use pkb_core::framework::input_rounds::{MIN_STATE_KEY_BYTES, RoundStates};
use pkb_core::meaning::EmbeddingsEndpoint;
use pkb_core::store::Store;
use pkb_core::store::per_user::{IDLE_CLOSE, MAX_OPEN_STORES, UserStores};
use pkb_core::store::postgres::PgDatabase;
use pkb_core::transport::http::{BearerAuth, HttpError, HttpServer, HttpSettings, Tls};
use pkb_core::transport::stdio;
use pkb_core::vault::ImportOptions;
use pkb_core::vault::folder::{Folder, FolderWatch, open_vault, watch};
use pkb_core::web::{People, WebServer, WebSettings};
use pkb_core::{Context, McpServer, NOTES_SCOPES, NotesApp, Registry, User, notes_declarations};
use rmcp::model::Implementation;
use tracing_subscriber::EnvFilter;

use cli::{AuthMode, Cli, Command, Database, HistoryCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_level.as_deref());
    raise_open_files_limit();
    // stdio serves one client: on one thread, a request is read, answered and written with no
    // wake-up of another thread between (fetch p50 1.92x the floor on the multi-threaded
    // runtime, 1.36x on this one). Slow work leaves the runtime already: the store's reads and
    // commits, the encoder and the vault's survey run on threads of their own.
    let mut builder = if cli.http.is_none() && cli.command.is_none() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return fail(&format!("cannot start the async runtime: {error}")),
    };
    runtime.block_on(run(cli))
}

/// Raises the soft limit of open files to the hard one, as servers do: each user's store holds
/// a few files and each connection one, and the common soft limit of 1,024 runs out at a few
/// hundred users, where the hard limit is usually far higher.
fn raise_open_files_limit() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current < limit.maximum || (limit.current.is_some() && limit.maximum.is_none()) {
            let raised = Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            if let Err(error) = setrlimit(Resource::Nofile, raised) {
                tracing::debug!(%error, "cannot raise the limit of open files");
            }
        }
    }
}

/// The most users' stores to keep open under the process's limit of open files: a store
/// holds about seven, and a quarter of the limit (at least 256) is left to connections and
/// the rest; [`MAX_OPEN_STORES`] at most. Under a limit of 1,024 that is 96 stores.
fn open_stores_allowed() -> usize {
    #[cfg(target_os = "linux")]
    {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        if let Some(files) = limit.and_then(|files| usize::try_from(files).ok()) {
            let for_stores = files.saturating_sub((files / 4).max(256));
            return (for_stores / 8).clamp(1, MAX_OPEN_STORES);
        }
    }
    MAX_OPEN_STORES
}

/// Logs go to stderr only: stdout carries the protocol.
fn init_logging(level: Option<&str>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{Layer, fmt};
    let filter = match level {
        Some(level) => EnvFilter::new(level),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    let layer = fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    tracing_subscriber::registry().with(layer).init();
}

async fn run(cli: Cli) -> ExitCode {
    let registry = match Registry::new(notes_declarations()) {
        Ok(registry) => registry,
        Err(error) => return fail(&error.to_string()),
    };
    if let Some(Command::Tools) = &cli.command {
        return cli::print_tools(&registry);
    }
    if let (Some(url), Some(model)) = (&cli.embeddings_url, &cli.embeddings_model) {
        let key = std::env::var("PKB_EMBEDDINGS_KEY")
            .ok()
            .filter(|key| !key.is_empty());
        let chosen = EmbeddingsEndpoint::new(url, model, key)
            .and_then(pkb_core::meaning::use_embeddings_endpoint);
        if let Err(message) = chosen {
            return fail(&format!("--embeddings-url: {message}"));
        }
    }
    if let Some(Command::Token(command)) = &cli.command {
        return match data_dir(&cli) {
            Ok(dir) => cli::token(command, dir),
            Err(message) => fail(&message),
        };
    }
    if let Some(Command::Account(command)) = &cli.command {
        return match data_dir(&cli) {
            Ok(dir) => cli::account(command, dir),
            Err(message) => fail(&message),
        };
    }
    if cli.http.is_some() && cli.command.is_none() {
        return serve_http(cli, registry).await;
    }
    if cli.oauth_issuer.is_some() && cli.user.is_none() {
        return fail("--oauth-issuer needs --http ADDR and --auth oauth, or --user NAME");
    }
    if let Some(Command::Import { dir, .. }) = &cli.command
        && let Err(error) = pkb_core::vault::check_folder(dir)
    {
        return vault_commands::import_failed(&error);
    }
    let Opened {
        store,
        database,
        vault,
    } = match open_store(&cli, &registry).await {
        Ok(opened) => opened,
        Err(message) => return fail(&message),
    };
    match cli.command {
        Some(Command::Call { tool, arguments }) => {
            let terminal = Implementation::new(TERMINAL_CLIENT, env!("CARGO_PKG_VERSION"));
            let context = Context::detached(store).with_client_info(Some(terminal));
            cli::call(&registry, context, &tool, &arguments).await
        }
        Some(Command::Check) => cli::check(&store, vault.as_deref()).await,
        Some(Command::Reindex) => cli::reindex(&store).await,
        Some(Command::Import {
            dir,
            overwrite,
            links_outside,
        }) => {
            let options = ImportOptions {
                overwrite,
                links_outside,
            };
            vault_commands::import(&store, &registry, &dir, options).await
        }
        Some(Command::Export { dir }) => vault_commands::export(&store, &dir).await,
        Some(Command::History(HistoryCommand::Prune { older_than })) => {
            cli::prune_history(&store, older_than).await
        }
        Some(Command::Purge { id }) => cli::purge(&store, &id).await,
        Some(Command::Web { listen }) => {
            let hub = Arc::new(ChangeHub::default());
            if let Some(database) = &database {
                hear_other_processes(database, &hub);
            }
            // The folder is watched while the page is open, so that a file changed meanwhile
            // shows (as a change `by: file`) and can be undone too.
            let _watch = match vault.map(|folder| hear_the_files(folder, &hub)).transpose() {
                Ok(watch) => watch,
                Err(message) => return fail(&message),
            };
            let settings = WebSettings {
                app: NotesApp::Shared(store),
                hub,
                people: People::One,
                https: false,
            };
            serve_web(settings, listen).await
        }
        Some(Command::Tools | Command::Token(_) | Command::Account(_)) => {
            unreachable!("handled above")
        }
        None => {
            let round_states = match round_states(&cli) {
                Ok(states) => states,
                Err(message) => return fail(&message),
            };
            let _index_merge = store.spawn_index_merge(INDEX_MERGE_QUIET);
            let hub = Arc::new(ChangeHub::default());
            if let Some(database) = &database {
                hear_other_processes(database, &hub);
            }
            let _watch = match vault.map(|folder| hear_the_files(folder, &hub)).transpose() {
                Ok(watch) => watch,
                Err(message) => return fail(&message),
            };
            let server = McpServer::new(registry, NotesApp::Shared(store))
                .with_sampling_timeout(Duration::from_secs(cli.sampling_timeout))
                .with_change_hub(hub)
                .with_round_states(round_states);
            serve(server).await
        }
    }
}

/// The sealer of multi-round call states: `--state-key-file`'s key, else a random one.
fn round_states(cli: &Cli) -> Result<RoundStates, String> {
    let Some(path) = &cli.state_key_file else {
        return Ok(RoundStates::random());
    };
    let key = std::fs::read(path)
        .map_err(|error| format!("cannot read --state-key-file {}: {error}", path.display()))?;
    // A key written with `echo` or an editor ends with a line end that is not part of it.
    let key = key.trim_ascii_end();
    if key.len() < MIN_STATE_KEY_BYTES {
        return Err(format!(
            "--state-key-file {} holds {} bytes; the key needs at least {MIN_STATE_KEY_BYTES} (make one with `head -c 32 /dev/urandom | base64`)",
            path.display(),
            key.len()
        ));
    }
    RoundStates::with_key(key)
}

/// A store the flags name, and what else serving it needs.
struct Opened {
    store: Store,
    /// The PostgreSQL database, when the store is in one.
    database: Option<Arc<PgDatabase>>,
    /// The vault's folder, when the store is one.
    vault: Option<Arc<Folder>>,
}

impl Opened {
    fn store(store: Store) -> Opened {
        Opened {
            store,
            database: None,
            vault: None,
        }
    }
}

/// The store the flags name: `--vault`, `--memory`, `--user` under the data directory or in
/// the database, `--db`, or the default file.
async fn open_store(cli: &Cli, registry: &Registry<Store>) -> Result<Opened, String> {
    if let Some(dir) = cli.vault() {
        if cli.memory || cli.db().is_some() || cli.user.is_some() {
            return Err(
                "--vault DIR makes the folder's Markdown files the store: it cannot be given with --memory, --db (PKB_DB) or --user"
                    .to_owned(),
            );
        }
        tracing::info!(folder = %dir.display(), "opening the vault");
        let opened = open_vault(&dir, registry.catalog())
            .await
            .map_err(|e| format!("--vault {}: {e}", dir.display()))?;
        return Ok(Opened {
            store: opened.store,
            database: None,
            vault: Some(opened.folder),
        });
    }
    // An import fills a new store with the user's own notes, not the examples.
    let seed = !cli.no_seed && !matches!(cli.command, Some(Command::Import { .. }));
    if cli.memory {
        return Ok(Opened::store(
            sqlite::open_in_memory(seed).map_err(|e| e.to_string())?,
        ));
    }
    let user = cli.user.as_deref().map(|name| match &cli.oauth_issuer {
        Some(issuer) => User::oauth_user(issuer, name),
        None => User::token_user(name),
    });
    let maintenance = matches!(
        cli.command,
        Some(
            Command::Check
                | Command::Reindex
                | Command::Export { .. }
                | Command::History(_)
                | Command::Purge { .. }
        )
    );
    let path = match (&user, cli.db()) {
        (_, Some(Database::Postgres(url))) => {
            // Looking after a store must not create one, as with files below.
            let database = if maintenance {
                PgDatabase::connect_existing(&url).await
            } else {
                PgDatabase::connect(&url, seed).await
            }
            .map_err(|e| e.to_string())?;
            tracing::info!(
                location = database.location(),
                "using the PostgreSQL database"
            );
            let user = user.as_ref().unwrap_or(User::local());
            return Ok(Opened {
                store: database.store_for(user.storage_key()),
                database: Some(database),
                vault: None,
            });
        }
        (Some(_), Some(Database::File(_))) => {
            return Err(
                "--user picks a user's store under --data-dir, or in a PostgreSQL --db; a file --db (or PKB_DB) holds a single store"
                    .to_owned(),
            );
        }
        (Some(user), None) => UserStores::path_in(&data_dir(cli)?, user),
        (None, Some(Database::File(path))) => path,
        (None, None) => Store::default_path().map_err(|e| e.to_string())?,
    };
    // Looking after a store must not create one: a mistyped --db would pass the check, and
    // a 0-byte file (what a first start on a full disk leaves) would become a seeded store.
    if maintenance {
        match std::fs::metadata(&path) {
            Err(_) => return Err(format!("no store at {}", path.display())),
            Ok(metadata) if metadata.len() == 0 => {
                return Err(format!(
                    "no store at {}: the file is empty (0 bytes); remove it, and a server will make a new store there",
                    path.display()
                ));
            }
            Ok(_) => {}
        }
    }
    tracing::info!(path = %path.display(), "opening the note store");
    let store = match &user {
        // The users' folder is made private as a server makes it.
        Some(user) => UserStores::in_dir(&data_dir(cli)?, seed)
            .store_for(user)
            .await
            .map_err(|e| e.to_string())?,
        None => sqlite::open(&path, seed).map_err(|e| e.to_string())?,
    };
    Ok(Opened::store(store))
}

/// Tells this process's sessions of the notes that other programs change in the vault's
/// files, and starts hearing those changes; dropping the watch stops it.
fn hear_the_files(folder: Arc<Folder>, hub: &Arc<ChangeHub>) -> Result<FolderWatch, String> {
    let hub = Arc::clone(hub);
    folder.on_change_from_files(Box::new(move |id, list_changed| {
        pkb_core::resources::announce_change_from_elsewhere(
            &hub,
            User::local().storage_key(),
            id,
            list_changed,
        );
    }));
    let root = folder.root().display().to_string();
    watch(folder).map_err(|e| format!("--vault {root}: {e}"))
}

/// Tells this process's sessions of the writes other processes make to `database`.
fn hear_other_processes(database: &Arc<PgDatabase>, hub: &Arc<ChangeHub>) {
    let hub = Arc::clone(hub);
    database.spawn_change_listener(move |change| {
        pkb_core::resources::announce_change_from_elsewhere(
            &hub,
            &change.user_key,
            &change.id,
            change.list_changed,
        );
    });
}

/// `--data-dir`, else the default data directory.
fn data_dir(cli: &Cli) -> Result<std::path::PathBuf, String> {
    match &cli.data_dir {
        Some(dir) => Ok(dir.clone()),
        None => Store::default_data_dir().map_err(|e| e.to_string()),
    }
}

/// `--http ADDR`: Streamable HTTP, with the authorization `--auth` asks for.
async fn serve_http(cli: Cli, registry: Registry<Store>) -> ExitCode {
    let shutdown = match ShutdownSignal::listen() {
        Ok(shutdown) => shutdown,
        Err(error) => return fail(&format!("cannot listen for signals: {error}")),
    };
    let Some(bind) = cli.http else {
        return fail("--http ADDR is required");
    };
    if cli.user.is_some() {
        return fail(
            "--user picks one user's store for stdio and the terminal commands; over HTTP each request's user comes from --auth",
        );
    }
    if cli.auth != AuthMode::Oauth && cli.oauth_issuer.is_some() {
        return fail("--oauth-issuer needs --auth oauth");
    }
    if cli.auth != AuthMode::Local && cli.allow_local_clients {
        return fail("--allow-local-clients needs --auth local");
    }
    // Said before any key is fetched or file read: the combination is wrong whatever they hold.
    if matches!(cli.auth, AuthMode::Tokens | AuthMode::Oauth)
        && let Some(dir) = cli.vault()
    {
        return fail(&vault_is_one_persons(&dir));
    }
    let auth = match cli.auth {
        AuthMode::None => None,
        AuthMode::Tokens => {
            let dir = match data_dir(&cli) {
                Ok(dir) => dir,
                Err(message) => return fail(&message),
            };
            match TokenVerifier::open(&dir, NOTES_SCOPES) {
                Ok(tokens) => Some(Authenticator::Tokens(tokens)),
                Err(error) => return fail(&error.to_string()),
            }
        }
        AuthMode::Local => {
            let settings = LocalSettings {
                data_dir: match data_dir(&cli) {
                    Ok(dir) => dir,
                    Err(message) => return fail(&message),
                },
                scopes: NOTES_SCOPES,
                allow_local_clients: cli.allow_local_clients,
            };
            match LocalAuthority::open(settings) {
                Ok(authority) => Some(Authenticator::Local(authority)),
                Err(message) => return fail(&message),
            }
        }
        AuthMode::Oauth => {
            let Some(issuer) = cli.oauth_issuer.clone() else {
                return fail("--auth oauth needs --oauth-issuer URL, the authorization server");
            };
            let settings = OAuthSettings {
                issuer,
                jwks_url: cli.oauth_jwks_url.clone(),
                audience: cli.oauth_audience.clone(),
                scopes: NOTES_SCOPES,
            };
            match JwtVerifier::start(settings).await {
                Ok(jwt) => Some(Authenticator::OAuth(jwt)),
                Err(OAuthStartError::NoKeySet(tried)) => {
                    return fail(&format!(
                        "cannot find the issuer's keys ({tried}); give --oauth-jwks-url"
                    ));
                }
                Err(error) => return fail(&error.to_string()),
            }
        }
    };
    let sampling_timeout = Duration::from_secs(cli.sampling_timeout);
    let hub = Arc::new(ChangeHub::default());
    let mut _index_merge = None;
    let mut _idle_close = None;
    let mut _watch = None;
    // A vault is one person's notes: with --auth local its accounts and tokens are that
    // person, signing in from several clients; tokens and oauth users each have their own.
    let one_persons_vault = cli.auth == AuthMode::Local && cli.vault().is_some();
    let app = if auth.is_some() && !one_persons_vault {
        if let Some(dir) = cli.vault() {
            return fail(&vault_is_one_persons(&dir));
        }
        let users = if cli.memory {
            UserStores::in_memory(!cli.no_seed)
        } else if let Some(Database::Postgres(url)) = cli.db() {
            match PgDatabase::connect(&url, !cli.no_seed).await {
                Ok(database) => {
                    hear_other_processes(&database, &hub);
                    UserStores::in_postgres(database)
                }
                Err(error) => return fail(&error.to_string()),
            }
        } else if cli.db().is_some() {
            return fail(
                "with --auth tokens, oauth or local each user's notes live under --data-dir, or in a PostgreSQL --db; a file --db (or PKB_DB) holds a single store",
            );
        } else {
            match data_dir(&cli) {
                Ok(dir) => {
                    UserStores::in_dir(&dir, !cli.no_seed).with_max_open(open_stores_allowed())
                }
                Err(message) => return fail(&message),
            }
        };
        let users = Arc::new(users);
        _idle_close = Some(UserStores::spawn_idle_close(&users, IDLE_CLOSE));
        NotesApp::PerUser(users)
    } else {
        let Opened {
            store,
            database,
            vault,
        } = match open_store(&cli, &registry).await {
            Ok(opened) => opened,
            Err(message) => return fail(&message),
        };
        if let Some(database) = &database {
            hear_other_processes(database, &hub);
        }
        if let Some(folder) = vault {
            match hear_the_files(folder, &hub) {
                Ok(watch) => _watch = Some(watch),
                Err(message) => return fail(&message),
            }
        }
        _index_merge = store.spawn_index_merge(INDEX_MERGE_QUIET);
        NotesApp::Shared(store)
    };
    // The web page for the person: under --auth none (loopback only, as the server is) and
    // --auth local (signed in with an account); under tokens and oauth `/` is not served.
    let people = match &auth {
        None => Some(People::One),
        Some(Authenticator::Local(authority)) => Some(People::Accounts(Arc::clone(authority))),
        Some(Authenticator::Tokens(_) | Authenticator::OAuth(_)) => None,
    };
    let https = cli.tls_cert.is_some()
        || cli
            .public_url
            .as_deref()
            .is_some_and(|url| url.starts_with("https://"));
    let pages = Some(match people {
        Some(people) => pkb_core::web::router(WebSettings {
            app: app.clone(),
            hub: Arc::clone(&hub),
            people,
            https,
        }),
        None => pkb_core::web::not_served(),
    });
    let template = McpServer::new(registry, app);
    let round_states = match round_states(&cli) {
        Ok(states) => states,
        Err(message) => return fail(&message),
    };
    let template = template
        .with_sampling_timeout(sampling_timeout)
        .with_change_hub(hub)
        .with_round_states(round_states);
    let settings = HttpSettings {
        bind,
        public_url: cli.public_url.clone(),
        allowed_hosts: cli.allowed_host.clone(),
        allowed_origins: cli.allowed_origin.clone(),
        tls: match (&cli.tls_cert, &cli.tls_key) {
            (Some(cert), Some(key)) => Some(Tls::from_files(cert.clone(), key.clone())),
            _ => None,
        },
        session_idle_timeout: Duration::from_secs(cli.session_idle_timeout),
        max_sessions: usize::try_from(cli.max_sessions).unwrap_or(usize::MAX),
        auth: auth.map(|auth| Arc::new(auth) as Arc<dyn BearerAuth>),
        pages,
    };
    let server = match HttpServer::bind(settings, template).await {
        Ok(server) => server,
        // The library's words, in the flags' terms.
        Err(HttpError::OpenToTheNetwork(bind)) => {
            return fail(&format!(
                "--auth none serves everyone who can reach {bind} without a password; it is allowed only on a loopback address (127.0.0.1, ::1). Use --auth tokens or --auth oauth, or bind to 127.0.0.1"
            ));
        }
        Err(HttpError::PublicUrl(url, problem)) => {
            return fail(&format!("--public-url {url}: {problem}"));
        }
        Err(error) => return fail(&error.to_string()),
    };
    eprintln!("pkb-server: listening on {}", server.url());
    server.run(shutdown.received()).await;
    tracing::info!("server stopped");
    ExitCode::SUCCESS
}

/// `pkb-server web`: the web page alone on a loopback port, until a signal.
async fn serve_web(settings: WebSettings, listen: std::net::SocketAddr) -> ExitCode {
    let shutdown = match ShutdownSignal::listen() {
        Ok(shutdown) => shutdown,
        Err(error) => return fail(&format!("cannot listen for signals: {error}")),
    };
    let server = match WebServer::bind(settings, listen).await {
        Ok(server) => server,
        Err(message) => return fail(&message),
    };
    eprintln!("pkb-server: web page at {}", server.url());
    if let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        let opened = std::process::Command::new(&browser)
            .arg(server.url())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Err(error) = opened {
            tracing::warn!(%error, browser = %browser.to_string_lossy(), "cannot open the browser");
        }
    }
    server.run(shutdown.received()).await;
    ExitCode::SUCCESS
}

/// How long the store must go without a request to this server before its search index is
/// merged: long enough that a burst of requests is not slowed by it.
const INDEX_MERGE_QUIET: Duration = Duration::from_secs(2);

/// The client `pkb-server call` is, as the history records its changes.
const TERMINAL_CLIENT: &str = "pkb-server call";

async fn serve(server: McpServer) -> ExitCode {
    // Listen before the first byte is read: a signal that arrives while the client is still
    // initializing must stop the server cleanly, not kill it with the default action.
    let shutdown = match ShutdownSignal::listen() {
        Ok(shutdown) => shutdown,
        Err(error) => return fail(&format!("cannot listen for signals: {error}")),
    };
    let (stdin, stdout) = pkb_core::transport::standard_streams();
    let stop = async {
        shutdown.received().await;
        tracing::info!("signal received, shutting down");
    };
    match stdio::serve(&server, stdin, stdout, stop).await {
        Ok(()) => {
            tracing::info!("server stopped");
            ExitCode::SUCCESS
        }
        Err(error) => fail(&format!("writing to stdout failed: {error}")),
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

/// Why `--vault DIR` is refused with `--auth tokens` or `oauth`.
fn vault_is_one_persons(dir: &std::path::Path) -> String {
    format!(
        "--vault {} holds one person's notes: it works with --auth none (or local), not with --auth tokens or oauth, whose users each have their own notes",
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_records_under_the_level_are_skipped_where_they_are_made() {
        init_logging(Some("warn"));
        assert_eq!(log::max_level(), log::LevelFilter::Warn);
        assert_eq!(
            tracing::level_filters::LevelFilter::current(),
            tracing::level_filters::LevelFilter::WARN
        );
    }
}
