//! Command-line flags, and the `tools` and `call` subcommands for people at a terminal.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pkb_core::store::{Store, StoreError};
use pkb_core::{Context, Registry};
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
    /// The store file [default: $XDG_DATA_HOME/pkb/pkb.db, else ~/.local/share/pkb/pkb.db].
    #[arg(long, env = "PKB_DB", value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
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
    /// What to do instead of serving MCP.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands for use at a terminal. `tools` and `call` go through the same registry and
/// validation as the protocol; `check` and `reindex` look after the store file.
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
}

/// `pkb-server tools`.
pub fn print_tools(registry: &Registry) -> ExitCode {
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
pub async fn call(registry: &Registry, ctx: Context, tool: &str, arguments: &str) -> ExitCode {
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

/// `pkb-server check`.
pub async fn check(store: &Store) -> ExitCode {
    match checked_count(store).await {
        Ok(notes) => print_out(&format!(
            "ok: {notes} notes; pages, search index and vocabulary are sound\n"
        )),
        Err(error) => error_out(&error.to_string()),
    }
}

/// `pkb-server reindex`.
pub async fn reindex(store: &Store) -> ExitCode {
    if let Err(error) = store.rebuild_indexes().await {
        return error_out(&error.to_string());
    }
    if let Err(error) = store.tidy_index().await {
        return error_out(&format!("reindexed, but merging the index failed: {error}"));
    }
    match checked_count(store).await {
        Ok(notes) => print_out(&format!(
            "reindexed {notes} notes; the store checks sound\n"
        )),
        Err(error) => error_out(&format!("reindexed, but the check failed: {error}")),
    }
}

async fn checked_count(store: &Store) -> Result<u64, StoreError> {
    store.verify().await?;
    store.count().await
}

/// Terminal output for the subcommands; the protocol path never comes here.
#[allow(clippy::print_stdout)]
fn print_out(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

fn error_out(message: &str) -> ExitCode {
    eprintln!("{message}");
    ExitCode::FAILURE
}
