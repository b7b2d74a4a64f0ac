//! What the agent keeps between calls and between runs: the answer memory (a retried
//! `tool_use` replayed, never run twice), the turns paused for a person, and the refund ledger.
//!
//! By default all three are in one SQLite file, `<out-dir>/state.sqlite` (toolgate's
//! `SqliteStore` for the first two, the ledger's tables `support_agent_ledger` and
//! `support_agent_sessions` beside them), so a later run in the same folder sees the earlier
//! runs' refunds and answers, and a paused turn is resumed once by whichever run resumes it
//! first. `--store memory` keeps each session's answers and the run's ledger in memory, as a
//! single process would, and pending turns only in their files. `--database-url postgres://…`
//! (feature `postgres`) puts all of it, the audit trail too, in one PostgreSQL database, so
//! several processes are one agent: toolgate's `PostgresStore` and `PostgresAuditSink`, and the
//! ledger's tables beside them. Each store has one ledger ([`Books`]), which every conversation
//! on it shares: a customer's refunds add up whichever run, session or worker paid them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate::approval::inbox::InboxStore;
use toolgate::audit::AuditLog;
use toolgate::store::sqlite::SqliteStore;
use toolgate::store::{AnswerStore, PendingStore};
use toolgate::{Dispatcher, HookContext, Session};

use super::ledger::{Books, Ledger, SHARED_WORLD};

/// `--store` / `--database-url`: where the state is kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StoreKind {
    /// `sqlite` (the default): `<out-dir>/state.sqlite`.
    #[default]
    Sqlite,
    /// `memory`: nothing outlives the run but the audit files and the pending files.
    Memory,
    /// `--database-url URL`: a PostgreSQL database, the audit trail included.
    Postgres(String),
}

impl StoreKind {
    /// `--store NAME`'s value.
    pub fn from_name(name: &str) -> Option<StoreKind> {
        match name {
            "sqlite" => Some(StoreKind::Sqlite),
            "memory" => Some(StoreKind::Memory),
            _ => None,
        }
    }
}

/// The state file's name in `--out-dir`.
pub const STATE_FILE: &str = "state.sqlite";

/// The opened state of one run.
pub enum State {
    /// In memory: the run's ledger (every session has its own answer memory).
    Memory(Books),
    /// In PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres {
        /// The answer memory and the pending turns.
        store: Arc<toolgate::store::postgres::PostgresStore>,
        /// The ledger.
        books: Books,
        /// The audit lines' sink.
        sink: toolgate::store::postgres::PostgresAuditSink,
    },
    /// In one SQLite file.
    Sqlite {
        /// The file.
        path: PathBuf,
        /// The answer memory and the pending turns.
        store: Arc<SqliteStore>,
        /// The ledger, on a connection of its own.
        books: Books,
    },
}

impl State {
    /// Opens `kind`'s state for `out_dir` (the folder made when missing).
    ///
    /// # Errors
    /// The sentence to print: the folder or the file could not be opened, or was written by a
    /// newer toolgate.
    pub fn open(kind: &StoreKind, out_dir: &Path) -> Result<State, String> {
        match kind {
            StoreKind::Memory => Ok(State::memory()),
            // The folder holds only the paused turns' files: said before the database is
            // reached, in the audit log's words.
            StoreKind::Postgres(_) if out_dir.exists() && !out_dir.is_dir() => Err(format!(
                "--out-dir: cannot use `{}` as the folder of paused turns: it exists and is not \
                 a folder",
                out_dir.display()
            )),
            StoreKind::Postgres(url) => open_postgres(url),
            StoreKind::Sqlite => {
                std::fs::create_dir_all(out_dir)
                    .map_err(|e| format!("--out-dir {}: {e}", out_dir.display()))?;
                let path = out_dir.join(STATE_FILE);
                let store = SqliteStore::open(&path).map_err(|e| e.to_string())?;
                let books = Books::sqlite(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(State::Sqlite {
                    path,
                    store: Arc::new(store),
                    books,
                })
            }
        }
    }

    /// [`open`](Self::open) and its [`audit_log`](Self::audit_log): what every command that
    /// runs calls needs. With the audit files in `out_dir`, the audit log is opened first, so
    /// a folder it cannot use is named in its words before a state file is made there.
    ///
    /// # Errors
    /// The sentence to print, from either step.
    pub fn open_with_audit(kind: &StoreKind, out_dir: &Path) -> Result<(State, AuditLog), String> {
        if let StoreKind::Postgres(_) = kind {
            let state = State::open(kind, out_dir)?;
            let audit = state.audit_log(out_dir)?;
            return Ok((state, audit));
        }
        let audit = AuditLog::open(out_dir).map_err(|e| format!("--out-dir: {e}"))?;
        Ok((State::open(kind, out_dir)?, audit))
    }

    /// The audit log the run writes: the JSONL files of `out_dir`, or the database's chains.
    ///
    /// # Errors
    /// The sentence to print.
    pub fn audit_log(&self, out_dir: &Path) -> Result<AuditLog, String> {
        match self {
            #[cfg(feature = "postgres")]
            State::Postgres { sink, .. } => AuditLog::builder()
                .sink(sink.clone())
                .build()
                .map_err(|e| e.to_string()),
            _ => AuditLog::open(out_dir).map_err(|e| format!("--out-dir: {e}")),
        }
    }

    /// Where the audit lines went, for the footer: `None` for the files of `--out-dir`.
    pub fn audit_place(&self) -> Option<&'static str> {
        match self {
            #[cfg(feature = "postgres")]
            State::Postgres { .. } => Some("the database's toolgate_audit"),
            _ => None,
        }
    }

    /// Waits until every audit line the run wrote is stored (the database's queue committed);
    /// at once for the files, which are written as each call ends.
    ///
    /// # Errors
    /// The sentence to print.
    pub fn finish(&self) -> Result<(), String> {
        match self {
            #[cfg(feature = "postgres")]
            State::Postgres { sink, .. } => {
                toolgate::block_on(sink.flush()).map_err(|e| e.to_string())
            }
            _ => Ok(()),
        }
    }

    /// Nothing kept beyond the run: a ledger in memory, and each session's own answer memory.
    pub fn memory() -> State {
        State::Memory(Books::memory())
    }

    /// The store's ledger.
    pub fn books(&self) -> &Books {
        match self {
            State::Memory(books) => books,
            #[cfg(feature = "postgres")]
            State::Postgres { books, .. } => books,
            State::Sqlite { books, .. } => books,
        }
    }

    /// The ledger's world `world`, as the tools and rules of a session see it.
    pub fn ledger(&self, world: &str) -> Ledger {
        self.books().ledger(world)
    }

    /// The ledger of the world `session_id` took place in ([`SHARED_WORLD`] when it was never
    /// replayed on this store): where a turn resumed later pays.
    ///
    /// # Errors
    /// The sentence to print: the ledger could not be read.
    pub fn ledger_of_session(&self, session_id: &str) -> Result<Ledger, String> {
        let world = self
            .books()
            .world_of(session_id)
            .map_err(|e| e.to_string())?;
        Ok(self.ledger(world.as_deref().unwrap_or(SHARED_WORLD)))
    }

    /// A session of `dispatcher` for `context`, its answers in the state's answer memory.
    pub fn session(&self, dispatcher: &Dispatcher, context: HookContext) -> Session {
        match self {
            State::Memory(_) => dispatcher.session(context),
            #[cfg(feature = "postgres")]
            State::Postgres { store, .. } => {
                let answers: Arc<dyn AnswerStore> = store.clone();
                dispatcher.session_with_store(context, answers)
            }
            State::Sqlite { store, .. } => {
                let answers: Arc<dyn AnswerStore> = store.clone();
                dispatcher.session_with_store(context, answers)
            }
        }
    }

    /// Where paused turns are kept, besides their files; `None` in memory.
    pub fn pending(&self) -> Option<&dyn PendingStore> {
        match self {
            State::Memory(_) => None,
            #[cfg(feature = "postgres")]
            State::Postgres { store, .. } => Some(store.as_ref()),
            State::Sqlite { store, .. } => Some(store.as_ref()),
        }
    }

    /// The same store as the approval inbox's (its paused turns' waiting calls, the people's
    /// decisions, the ready turns); `None` in memory.
    pub fn inbox(&self) -> Option<&dyn InboxStore> {
        match self {
            State::Memory(_) => None,
            #[cfg(feature = "postgres")]
            State::Postgres { store, .. } => Some(store.as_ref()),
            State::Sqlite { store, .. } => Some(store.as_ref()),
        }
    }

    /// The state file, when there is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            State::Sqlite { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// Connects to the database of `--database-url` (applying toolgate's migrations and making the
/// ledger's table where they are missing).
#[cfg(feature = "postgres")]
fn open_postgres(url: &str) -> Result<State, String> {
    use toolgate::store::postgres::PostgresStore;
    let store = PostgresStore::connect(url).map_err(|e| format!("--database-url: {e}"))?;
    let books = Books::postgres(url).map_err(|e| format!("--database-url: {e}"))?;
    let sink = store.audit_sink();
    Ok(State::Postgres {
        store: Arc::new(store),
        books,
        sink,
    })
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_url: &str) -> Result<State, String> {
    Err(NO_POSTGRES.to_owned())
}

/// What `--database-url` says in a build without the `postgres` feature.
pub const NO_POSTGRES: &str = "--database-url needs the postgres feature: cargo run \
     -p toolgate-support-agent --features postgres -- --database-url …";
