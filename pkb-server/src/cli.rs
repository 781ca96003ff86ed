//! Command-line flags, and the `tools` and `call` subcommands for people at a terminal.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use pkb_core::store::{Purged, Store, StoreError};
use pkb_core::vault::folder::Folder;
use pkb_core::{Catalog, Context};
use rmcp::model::ContentBlock;
use serde_json::Value;

/// PKB: a personal knowledge base served to language models over MCP.
///
/// With no subcommand, speaks the Model Context Protocol on stdin/stdout; an MCP client
/// starts it as a child process, for example with the command `pkb-server` and no
/// arguments. Notes live in one SQLite file (see --db). Logs go to stderr.
#[derive(Debug, Parser)]
#[command(name = "pkb-server", version, about, long_about)]
pub struct Cli {
    /// The store: a SQLite file, or a PostgreSQL database as
    /// postgres://USER[:PASSWORD]@HOST[:PORT]/DB; else $PKB_DB when set and not empty
    /// [default: $XDG_DATA_HOME/pkb/pkb.db, else ~/.local/share/pkb/pkb.db].
    #[arg(long, value_name = "PATH|URL", global = true)]
    db: Option<String>,
    /// A folder of Markdown files (an Obsidian vault) as the store: the files are the notes,
    /// edited by PKB and by other programs alike; PKB's index lives in DIR/.pkb
    /// [env: PKB_VAULT].
    #[arg(long, value_name = "DIR", global = true)]
    vault: Option<PathBuf>,
    /// Keep notes in memory only: nothing is written to disk, everything is gone at exit.
    /// Takes precedence over --db and PKB_DB.
    #[arg(long, global = true)]
    pub memory: bool,
    /// Do not seed a new store with the three example notes.
    #[arg(long, global = true)]
    pub no_seed: bool,
    /// How many seconds `summarize` waits for the client's model before giving up.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600), global = true)]
    pub sampling_timeout: u64,
    /// Log filter for stderr, such as `info` or `pkb_core=debug` [default: $RUST_LOG, else warn].
    #[arg(long, value_name = "FILTER", global = true)]
    pub log_level: Option<String>,
    /// The data directory: the tokens, and each user's notes with --auth tokens or oauth
    /// [default: $XDG_DATA_HOME/pkb, else ~/.local/share/pkb].
    #[arg(long, value_name = "DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8787
    /// (port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Who may call over HTTP: `none` (loopback addresses only), `tokens` (made with
    /// `pkb-server token create`), `oauth` (access tokens of --oauth-issuer) or `local`
    /// (PKB's own OAuth authorization server, with `pkb-server account` accounts).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = AuthMode::None, requires = "http")]
    pub auth: AuthMode,
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "PEM", requires_all = ["http", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "PEM", requires_all = ["http", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// The server's origin as clients reach it, e.g. https://notes.example.com
    /// [default: http://ADDR]. The OAuth resource is <public-url>/mcp.
    #[arg(long, value_name = "URL", requires = "http")]
    pub public_url: Option<String>,
    /// Another Host name to accept besides the public URL's (repeatable).
    #[arg(long, value_name = "HOST", requires = "http")]
    pub allowed_host: Vec<String>,
    /// A browser Origin to accept besides the public URL's (repeatable).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allowed_origin: Vec<String>,
    /// End HTTP sessions idle for this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..), requires = "http")]
    pub session_idle_timeout: u64,
    /// The most HTTP sessions open at once; past it, initialize gets 503.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..), requires = "http")]
    pub max_sessions: u64,
    /// An OpenAI-compatible embeddings endpoint (such as a local Ollama's
    /// http://localhost:11434/v1) for search by meaning, instead of the bundled encoder; its
    /// key, if it needs one, in PKB_EMBEDDINGS_KEY.
    #[arg(long, value_name = "URL", global = true, requires = "embeddings_model")]
    pub embeddings_url: Option<String>,
    /// The model the embeddings endpoint is asked for.
    #[arg(long, value_name = "NAME", global = true, requires = "embeddings_url")]
    pub embeddings_model: Option<String>,
    /// With --auth local, fetch client metadata documents from private and loopback
    /// addresses too (refused by default: a client_id URL must not reach into your network).
    #[arg(long, requires = "http")]
    pub allow_local_clients: bool,
    /// The OAuth authorization server whose access tokens are accepted (--auth oauth).
    #[arg(long, value_name = "URL")]
    pub oauth_issuer: Option<String>,
    /// The issuer's key set, when its metadata does not name it.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub oauth_jwks_url: Option<String>,
    /// The audience access tokens must name [default: <public-url>/mcp].
    #[arg(long, value_name = "VALUE", requires = "oauth_issuer")]
    pub oauth_audience: Option<String>,
    /// A file holding the key (32 bytes or more) that seals the state of calls waiting for
    /// the client's model on 2026-07-28; servers sharing it accept each other's states, as
    /// behind a load balancer [default: a key made at start].
    #[arg(long, value_name = "PATH")]
    pub state_key_file: Option<PathBuf>,
    /// Use the store of this user under the data directory (a token's NAME, or with
    /// --oauth-issuer the subject of that issuer's tokens): for import, export, check,
    /// reindex, call, or serving that user's notes on stdio.
    #[arg(long, value_name = "NAME", global = true)]
    pub user: Option<String>,
    /// What to do instead of serving MCP.
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// `--vault`, else `PKB_VAULT` (empty counts as unset).
    pub fn vault(&self) -> Option<PathBuf> {
        self.vault.clone().or_else(|| {
            std::env::var_os("PKB_VAULT")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        })
    }

    /// `--db`, else `PKB_DB`. An empty `PKB_DB` counts as unset, as an empty `XDG_DATA_HOME`
    /// does: `PKB_DB= pkb-server` is how a shell clears it for one command.
    pub fn db(&self) -> Option<Database> {
        let named = self
            .db
            .clone()
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os("PKB_DB").filter(|value| !value.is_empty()))?;
        Some(match named.to_str() {
            Some(url) if pkb_core::store::postgres::is_url(url) => {
                Database::Postgres(url.to_owned())
            }
            _ => Database::File(PathBuf::from(named)),
        })
    }
}

/// The store `--db` or `PKB_DB` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database, by its URL (which may hold a password: never print it).
    Postgres(String),
}

/// Subcommands for use at a terminal. `tools` and `call` go through the same registry and
/// validation as the protocol; `check` and `reindex` look after the store file; `import` and
/// `export` move notes in and out as Markdown.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the tools with their arguments.
    Tools,
    /// Run one tool against the store and print its result; exits non-zero when it fails.
    Call {
        /// The tool's name, as `tools` lists it.
        tool: String,
        /// The arguments as a JSON object, for example '{"query": "deploy"}'.
        #[arg(default_value = "{}")]
        arguments: String,
    },
    /// Check the whole store for damage; exits non-zero and names what it finds.
    ///
    /// Reads every page, compares the search index with the notes, and the search vocabulary
    /// with both (about 4 s per 100,000 notes). The store must exist; it is opened as a server
    /// opens it, so a store from an older PKB is upgraded first.
    Check,
    /// Rebuild the search and tag indexes from the notes, then check the store.
    ///
    /// For a store `check` finds out of step, such as one an older PKB kept writing to after a
    /// newer one upgraded it. Stop the servers using the file first: the rebuild is one
    /// transaction (about 35 s per 100,000 notes), and their writes give up after 5 s.
    Reindex,
    /// Import every Markdown file under DIR (an Obsidian vault, say) as one note each.
    ///
    /// The title comes from YAML front matter `title`, else the first `# ` heading, else the
    /// file name; tags from front matter `tags`; `created` and `updated` when given. Hidden
    /// files and folders are skipped. Each file passes the rules of `write`; a file that
    /// breaks one is refused and named, and nothing of it is written. A new store is made
    /// without the example notes. Exits non-zero when any file was refused.
    Import {
        /// The folder to read.
        dir: PathBuf,
        /// Replace notes whose id exists, instead of skipping those files.
        #[arg(long)]
        overwrite: bool,
        /// Also import the files that symbolic links lead to outside DIR (refused otherwise).
        #[arg(long)]
        links_outside: bool,
    },
    /// Export every note as DIR/<id>.md: YAML front matter (id, title, tags, created,
    /// updated), then the body. `import` reads it back unchanged.
    Export {
        /// The folder to write; made when missing. Files of the same name are replaced.
        dir: PathBuf,
    },
    /// Make, list or revoke the bearer tokens of --auth tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Make and look after the accounts of --auth local, and the clients they authorized.
    #[command(subcommand)]
    Account(AccountCommand),
    /// Look after the notes' history: every version of every note, which is kept until
    /// removed here.
    #[command(subcommand)]
    History(HistoryCommand),
    /// Erase a note and every version of it for good, printing what was removed. The only
    /// way to: `delete` keeps a note in its history, from which `restore` brings it back.
    Purge {
        /// The note's ID.
        id: String,
    },
    /// Serve the web page for the person whose notes they are (what changed, by which
    /// client, compare, restore) on a free loopback port, over the store the flags name
    /// (`--vault` too), and print its URL; opens $BROWSER when it is set.
    Web {
        /// The loopback address to listen on; port 0 picks a free one.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
}

/// `pkb-server history ...`.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Drop the versions made more than DAYS days ago, except each note's newest (its current
    /// state, or a deleted note's last, so that it can still be restored).
    Prune {
        /// How many days of history to keep.
        #[arg(long, value_name = "DAYS")]
        older_than: u32,
    },
}

/// `pkb-server token ...`: the tokens live in the data directory, as hashes only.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token for a new user NAME and print it once; only its hash is kept.
    Create {
        /// The user's name: 1 to 64 letters, digits, `.`, `_` or `-`.
        name: String,
        /// Let the token read notes but not change them (scope notes:read).
        #[arg(long)]
        read_only: bool,
    },
    /// List each token's name, scope and date (never the token).
    List,
    /// Revoke a token: it fails at once, also in servers already running.
    Revoke {
        /// The token's name.
        name: String,
    },
}

/// `pkb-server account ...`: accounts live in the data directory, passwords as argon2id
/// hashes only.
#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Make an account NAME; its password is asked for at the terminal (twice).
    Create {
        /// The account's name, which is also its user (a token of the same name has the same
        /// notes): 1 to 64 letters, digits, `.`, `_` or `-`.
        name: String,
        /// Read the password from the first line of stdin instead of the terminal.
        #[arg(long)]
        password_stdin: bool,
    },
    /// List each account's name and date (never a password).
    List,
    /// Delete an account: its clients' tokens fail at once, also in running servers. Its
    /// notes are kept.
    Delete {
        /// The account's name.
        name: String,
    },
    /// Give an account a new password.
    Password {
        /// The account's name.
        name: String,
        /// Read the password from the first line of stdin instead of the terminal.
        #[arg(long)]
        password_stdin: bool,
    },
    /// List the clients an account authorized: client id, name, and when.
    Clients {
        /// The account's name.
        name: String,
    },
    /// End every token an account gave a client, at once, also in running servers.
    Revoke {
        /// The account's name.
        name: String,
        /// The client's id, as `account clients` lists it.
        client_id: String,
    },
}

/// How HTTP requests are authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// No authorization: one user, loopback addresses only.
    None,
    /// Bearer tokens made with `pkb-server token create`.
    Tokens,
    /// OAuth 2.1 access tokens (JWT) from --oauth-issuer.
    Oauth,
    /// PKB's own OAuth 2.1 authorization server (accounts of `pkb-server account create`),
    /// and the tokens of `pkb-server token create`.
    Local,
}

/// `pkb-server account ...`.
pub fn account(command: &AccountCommand, data_dir: PathBuf) -> ExitCode {
    use pkb_core::auth::local::{AccountFile, GrantFile};
    let accounts = AccountFile::new(&data_dir);
    let result = match command {
        AccountCommand::Create {
            name,
            password_stdin,
        } => new_password(*password_stdin)
            .and_then(|password| accounts.create(name, &password).map_err(|e| e.to_string()))
            .map(|()| format!("made account `{name}`\n")),
        AccountCommand::List => accounts
            .list()
            .map(|list| {
                list.into_iter()
                    .map(|a| format!("{}\t{}\n", a.name, a.created_at))
                    .collect()
            })
            .map_err(|e| e.to_string()),
        AccountCommand::Delete { name } => accounts
            .delete(name)
            .map(|()| format!("deleted account `{name}`; its clients' tokens no longer work\n"))
            .map_err(|e| e.to_string()),
        AccountCommand::Password {
            name,
            password_stdin,
        } => new_password(*password_stdin)
            .and_then(|password| {
                accounts
                    .set_password(name, &password)
                    .map_err(|e| e.to_string())
            })
            .map(|()| format!("changed the password of `{name}`\n")),
        AccountCommand::Clients { name } => GrantFile::new(&data_dir)
            .clients_of(name)
            .map(|clients| {
                clients
                    .into_iter()
                    .map(|c| format!("{}\t{}\t{}\n", c.client_id, c.client_name, c.authorized_at))
                    .collect()
            })
            .map_err(|e| e.to_string()),
        AccountCommand::Revoke { name, client_id } => GrantFile::new(&data_dir)
            .revoke_client(name, client_id)
            .map(|()| format!("revoked `{client_id}` of `{name}`; its tokens no longer work\n"))
            .map_err(|e| e.to_string()),
    };
    match result {
        // Lists go to stdout, for scripts; what a change did to stderr.
        Ok(out)
            if matches!(
                command,
                AccountCommand::List | AccountCommand::Clients { .. }
            ) =>
        {
            print_out(&out)
        }
        Ok(done) => {
            eprint!("{done}");
            ExitCode::SUCCESS
        }
        Err(error) => error_out(&error),
    }
}

/// A new password: the first line of stdin, or asked twice at the terminal.
fn new_password(from_stdin: bool) -> Result<String, String> {
    if from_stdin {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the password from stdin: {e}"))?;
        return Ok(line.trim_end_matches(['\n', '\r']).to_owned());
    }
    let password =
        rpassword::prompt_password("Password (12 characters or more): ").map_err(|e| {
            format!("cannot read the password from the terminal ({e}); pass --password-stdin")
        })?;
    let again = rpassword::prompt_password("The same password again: ")
        .map_err(|e| format!("cannot read the password from the terminal: {e}"))?;
    if password != again {
        return Err("the two passwords differ; nothing changed".into());
    }
    Ok(password)
}

/// `pkb-server token ...`.
pub fn token(command: &TokenCommand, data_dir: PathBuf) -> ExitCode {
    let tokens = pkb_core::auth::TokenFile::new(data_dir, pkb_core::NOTES_SCOPES);
    match command {
        TokenCommand::Create { name, read_only } => match tokens.create(name, *read_only) {
            Ok(token) => {
                eprintln!(
                    "made token `{name}`; it is shown only this once, so keep it somewhere safe:"
                );
                print_out(&format!("{token}\n"))
            }
            Err(error) => error_out(&error.to_string()),
        },
        TokenCommand::List => match tokens.list() {
            Ok(list) => {
                let mut out = String::new();
                for token in list {
                    out.push_str(&format!(
                        "{}\t{}\t{}\n",
                        token.name, token.scope, token.created_at
                    ));
                }
                print_out(&out)
            }
            Err(error) => error_out(&error.to_string()),
        },
        TokenCommand::Revoke { name } => match tokens.revoke(name) {
            Ok(()) => {
                eprintln!("revoked token `{name}`");
                ExitCode::SUCCESS
            }
            Err(error) => error_out(&error.to_string()),
        },
    }
}

/// `pkb-server tools`.
pub fn print_tools(registry: &Catalog) -> ExitCode {
    let mut out = String::new();
    for tool in registry.tools() {
        let description = tool.description.as_deref().unwrap_or_default();
        let summary = description
            .split(". ")
            .next()
            .unwrap_or_default()
            .trim_end_matches('.');
        out.push_str(&format!("{}\n    {summary}.\n", tool.name));
        let properties = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let required: Vec<&str> = tool
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, schema) in properties.into_iter().flatten() {
            let kind = schema.get("type").map(Value::to_string).unwrap_or_default();
            let need = if required.contains(&name.as_str()) {
                "required"
            } else {
                "optional"
            };
            let what = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            out.push_str(&format!(
                "    {name} ({}, {need}): {what}\n",
                kind.trim_matches('"')
            ));
        }
    }
    print_out(&out)
}

/// `pkb-server call TOOL JSON`.
pub async fn call(registry: &Catalog, ctx: Context, tool: &str, arguments: &str) -> ExitCode {
    let arguments = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Some(map),
        Ok(_) => {
            return error_out("the arguments must be a JSON object, such as '{\"id\": \"todo\"}'");
        }
        Err(error) => return error_out(&format!("the arguments are not valid JSON: {error}")),
    };
    let Some(result) = registry.call_tool(ctx, tool, arguments).await else {
        let names: Vec<&str> = registry.tools().map(|t| t.name.as_ref()).collect();
        return error_out(&format!(
            "unknown tool `{tool}`; the tools are: {}",
            names.join(", ")
        ));
    };
    // A detached call has no client, so a tool that needs one of its capabilities says so.
    let result = match result {
        Ok(result) => result,
        Err(error) => return error_out(&error.message),
    };
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .map(|t| t.text.clone())
        .collect();
    let text = text.join("\n");
    if result.is_error == Some(true) {
        return error_out(&text);
    }
    let out = match &result.structured_content {
        Some(value) => serde_json::to_string_pretty(value).unwrap_or(text),
        None => text,
    };
    print_out(&(out + "\n"))
}

/// `pkb-server check`. Its verdict names no backend's parts: what is checked differs (SQLite's
/// pages and vocabulary, PostgreSQL's search vectors), docs/storage.md and docs/postgresql.md
/// say what.
///
/// With a vault, also the files PKB cannot take as notes, each with the rule it breaks; any
/// makes the check fail.
pub async fn check(store: &Store, vault: Option<&Folder>) -> ExitCode {
    let notes = match checked_count(store).await {
        Ok(notes) => notes,
        Err(error) => return store_error_out(&error.to_string(), &error),
    };
    let refused = vault.map(Folder::refused_files).unwrap_or_default();
    if refused.is_empty() {
        return print_out(&format!("ok: {notes} notes; the store checks sound\n"));
    }
    let mut report = format!(
        "{notes} notes; the store checks sound, but {} {} of the vault cannot be taken as notes and {} left alone:\n",
        refused.len(),
        if refused.len() == 1 { "file" } else { "files" },
        if refused.len() == 1 { "is" } else { "are" },
    );
    for file in &refused {
        report.push_str(&format!("  {}: {}\n", file.path.display(), file.reason));
    }
    let _ = print_out(&report);
    ExitCode::FAILURE
}

/// `pkb-server reindex`.
pub async fn reindex(store: &Store) -> ExitCode {
    if let Err(error) = store.rebuild_indexes().await {
        return store_error_out(&error.to_string(), &error);
    }
    if let Err(error) = store.merge_index().await {
        let message = format!("reindexed, but merging the index failed: {error}");
        return store_error_out(&message, &error);
    }
    match checked_count(store).await {
        Ok(notes) => print_out(&format!(
            "reindexed {notes} notes; the store checks sound\n"
        )),
        Err(error) => store_error_out(&format!("reindexed, but the check failed: {error}"), &error),
    }
}

/// `pkb-server history prune --older-than DAYS`.
pub async fn prune_history(store: &Store, days: u32) -> ExitCode {
    let older_than = Duration::from_secs(u64::from(days) * 24 * 60 * 60);
    match store.prune_versions(older_than).await {
        Ok(dropped) => print_out(&format!(
            "pruned {dropped} {} made more than {days} days ago; each note's newest version stays\n",
            if dropped == 1 { "version" } else { "versions" }
        )),
        Err(error) => store_error_out(&error.to_string(), &error),
    }
}

/// `pkb-server purge ID`.
pub async fn purge(store: &Store, id: &str) -> ExitCode {
    let id = id.trim();
    match store.purge(id).await {
        Ok(Purged {
            note: false,
            versions: 0,
        }) => error_out(&format!("No note found with ID: {id}")),
        Ok(purged) => {
            let note = if purged.note {
                format!("the note {id}")
            } else {
                format!("the deleted note {id}")
            };
            let versions = match purged.versions {
                1 => "1 version".to_owned(),
                many => format!("{many} versions"),
            };
            print_out(&format!(
                "purged {note} and its {versions}; nothing of it is left\n"
            ))
        }
        Err(error) => store_error_out(&error.to_string(), &error),
    }
}

/// The exit status of a store that is busy rather than broken: `EX_TEMPFAIL` from
/// sysexits.h, so a script can tell "try again" from "restore a backup".
pub const EXIT_BUSY: u8 = 75;

/// `message` on stderr, with [`EXIT_BUSY`] when `error` is a busy store and 1 otherwise.
fn store_error_out(message: &str, error: &StoreError) -> ExitCode {
    let _ = error_out(message);
    match error {
        StoreError::Busy { .. } => ExitCode::from(EXIT_BUSY),
        _ => ExitCode::FAILURE,
    }
}

async fn checked_count(store: &Store) -> Result<u64, StoreError> {
    store.verify().await?;
    store.count().await
}

/// Terminal output for the subcommands; the protocol path never comes here.
#[allow(clippy::print_stdout)]
pub(crate) fn print_out(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

pub(crate) fn error_out(message: &str) -> ExitCode {
    eprintln!("{message}");
    ExitCode::FAILURE
}
