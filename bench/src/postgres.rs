//! The PostgreSQL rows: the same calls to a server on PostgreSQL and to one on SQLite, side
//! by side in one run (the comparison column is SQLite's, not the floor's).

use std::path::Path;
use std::time::Instant;

use pkb_core::store::postgres::{PgDatabase, testing};
use pkb_core::store::{PutMode, Store};

use crate::Config;
use crate::client::{Catalog, Error, Launch, Peer};
use crate::corpus::{self, Index, Note, Rng};
use crate::measure::{self, Call, micros, p50_p99};
use crate::phases::{Key, class_rows, server_launch};
use crate::report::{Report, Unit};

/// The fresh comparison's section in the table.
const FRESH: &str = "PostgreSQL, fresh store (3 notes); second column: SQLite";

/// A database of the run's own on the server of `admin`, and a runtime for the store calls
/// the benchmark makes itself.
pub struct Database {
    url: String,
    runtime: tokio::runtime::Runtime,
    /// The notes loaded so far, through [`Database::load`].
    loaded: usize,
}

impl Database {
    /// Makes a new database on the server of `admin`.
    pub fn create(admin: &str) -> Result<Database, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let url = runtime.block_on(testing::scratch_database(admin));
        Ok(Database {
            url,
            runtime,
            loaded: 0,
        })
    }

    /// The server on this database.
    fn launch(&self, program: &Path) -> Launch {
        Launch {
            program: program.to_owned(),
            args: vec!["--db".into(), self.url.clone().into()],
            name: "pkb",
        }
    }

    /// Stores `notes` as the server's user, in batches of 1,000; notes per second.
    fn load(&mut self, notes: &[Note]) -> Result<f64, Error> {
        let started = Instant::now();
        self.on_store(async |store| {
            for batch in notes.chunks(1_000) {
                let drafts = batch.iter().map(Note::draft).collect();
                store.put_many(drafts, PutMode::CreateOnly).await?;
            }
            Ok(())
        })?;
        self.loaded += notes.len();
        Ok(notes.len() as f64 / started.elapsed().as_secs_f64())
    }

    /// [`Store::merge_index`] after a load, as SQLite's store has it; its time.
    fn merge_index(&self) -> Result<std::time::Duration, Error> {
        let started = Instant::now();
        self.on_store(async |store| store.merge_index().await)?;
        Ok(started.elapsed())
    }

    /// Runs `work` on the server's user's store.
    fn on_store<T>(
        &self,
        work: impl AsyncFnOnce(&Store) -> Result<T, pkb_core::store::StoreError>,
    ) -> Result<T, Error> {
        self.runtime.block_on(async {
            let database = PgDatabase::connect(&self.url, true)
                .await
                .map_err(|e| e.to_string())?;
            let store = database.store_for(pkb_core::User::local().storage_key());
            work(&store).await.map_err(|e| e.to_string())
        })
    }
}

/// Fetch, write and pipelined writes on a fresh store: PostgreSQL and SQLite alongside.
pub fn fresh(
    config: &Config,
    server: &Path,
    dir: &Path,
    database: &Database,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let mut catalog = Catalog::default();
    for note in corpus::seed_notes() {
        catalog.push(note);
    }
    let index = Index::new(&catalog.notes);
    let (mut pg, _) = Peer::start(&database.launch(server))?;
    let (mut sqlite, _) = Peer::start(&server_launch(server, &dir.join("beside-postgres.db")))?;
    for tool in ["fetch", "search", "write"] {
        eprintln!(
            "pkb-bench: {FRESH}: {} sequential {tool} calls",
            config.calls
        );
        let calls =
            crate::phases::fresh_calls(tool, config.warmup + config.calls, &catalog, &index);
        let [p, s] =
            measure::sequential_pair([&mut pg, &mut sqlite], &calls, config.warmup, &catalog)?;
        let (p, s) = (p50_p99(p.samples), p50_p99(s.samples));
        match tool {
            "fetch" => key.postgres_fetch_p50 = [p[0], s[0]],
            "write" => key.postgres_write_p50 = [p[0], s[0]],
            _ => {}
        }
        report.row(
            FRESH,
            &format!("{tool} round trip p50 / p99"),
            Unit::Micros,
            p,
            Some(s),
        );
    }
    eprintln!(
        "pkb-bench: {FRESH}: {} pipelined write calls, {} in flight",
        config.pipelined / 5,
        config.window
    );
    let rates =
        crate::phases::pipelined_writes(config, [&mut pg, &mut sqlite], &catalog, 0x77, 3_000_000)?;
    key.postgres_pipelined_writes = rates;
    report.row(
        FRESH,
        &format!(
            "pipelined write, {} in flight, each committed before its answer",
            config.window
        ),
        Unit::PerSec,
        vec![rates[0]],
        Some(vec![rates[1]]),
    );
    pg.stop()?;
    sqlite.stop()?;
    Ok(())
}

/// Search and fetch at `size` notes: PostgreSQL loaded to the same notes as the SQLite store
/// `sqlite`, both served alongside.
#[allow(clippy::too_many_arguments)]
pub fn at_size(
    size: usize,
    server: &Path,
    sqlite: &Launch,
    database: &mut Database,
    catalog: &Catalog,
    seeds: usize,
    mix: &[(&str, String)],
    warm: &[String],
    index: &Index,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let section = format!("{size} notes on PostgreSQL; second column: SQLite");
    let have = database.loaded;
    if size > have {
        eprintln!("pkb-bench: {section}: storing notes {have}..{size} with put_many");
        let rate = database.load(&catalog.notes[seeds + have..seeds + size])?;
        report.row(
            &section,
            &format!(
                "load {} notes with Store::put_many, batches of 1,000",
                size - have
            ),
            Unit::PerSec,
            vec![rate],
            None,
        );
        let merged = database.merge_index()?;
        report.row(
            &section,
            "then VACUUM (ANALYZE) (Store::merge_index)",
            Unit::Micros,
            vec![micros(merged)],
            None,
        );
    }
    eprintln!("pkb-bench: {section}: search and fetch");
    let (mut pg, _) = Peer::start(&database.launch(server))?;
    let (mut lite, _) = Peer::start(sqlite)?;
    let warm_calls = measure::search_calls(warm, index);
    measure::sequential_pair([&mut pg, &mut lite], &warm_calls, warm_calls.len(), catalog)?;
    let queries: Vec<String> = mix.iter().map(|(_, q)| q.clone()).collect();
    let search = measure::search_calls(&queries, index);
    let [p, s] = measure::sequential_pair([&mut pg, &mut lite], &search, 0, catalog)?;
    let p_all = p50_p99(p.samples.clone());
    report.row(
        &section,
        &format!("search p50 / p99, {} queries, limit 10", queries.len()),
        Unit::Micros,
        p_all.clone(),
        Some(p50_p99(s.samples.clone())),
    );
    class_rows(report, &section, mix, &p.samples, &s.samples);
    let mut fetch_rng = Rng(corpus::SEED ^ 0xf);
    let random_fetch: Vec<Call> = (0..2_200)
        .map(|_| Call::fetch(&catalog.notes[seeds + fetch_rng.below(size)]))
        .collect();
    let [p, s] = measure::sequential_pair([&mut pg, &mut lite], &random_fetch, 200, catalog)?;
    report.row(
        &section,
        "fetch p50 / p99, random notes (~100-word bodies)",
        Unit::Micros,
        p50_p99(p.samples),
        Some(p50_p99(s.samples)),
    );
    pg.stop()?;
    lite.stop()?;
    key.postgres_search_p99.insert(size, p_all[1]);
    Ok(())
}
