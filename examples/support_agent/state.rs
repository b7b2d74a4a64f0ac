//! What the agent keeps between calls and between runs: the answer memory (a retried
//! `tool_use` replayed, never run twice), the turns paused for a person, and the refund ledger.
//!
//! By default all three are in one SQLite file, `<out-dir>/state.sqlite` (toolgate's
//! `SqliteStore` for the first two, the table `support_agent_refunds` beside them for the
//! ledger), so a later run in the same folder sees the earlier runs' refunds and answers, and a
//! paused turn is resumed once by whichever run resumes it first. `--store memory` keeps each
//! session's answers and each transcript's ledger in memory, as a single process would, and
//! pending turns only in their files.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use toolgate::store::sqlite::SqliteStore;
use toolgate::store::{AnswerStore, PendingStore};
use toolgate::{Dispatcher, HookContext, Session};

use super::ledger::{self, Ledger};

/// `--store`: where the state is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum StoreKind {
    /// `sqlite` (the default): `<out-dir>/state.sqlite`.
    #[default]
    Sqlite,
    /// `memory`: nothing outlives the run but the audit files and the pending files.
    Memory,
}

impl StoreKind {
    /// `--store NAME`'s value.
    pub(crate) fn from_name(name: &str) -> Option<StoreKind> {
        match name {
            "sqlite" => Some(StoreKind::Sqlite),
            "memory" => Some(StoreKind::Memory),
            _ => None,
        }
    }
}

/// The state file's name in `--out-dir`.
pub(crate) const STATE_FILE: &str = "state.sqlite";

/// The opened state of one run.
pub(crate) enum State {
    /// In memory.
    Memory,
    /// In one SQLite file.
    Sqlite {
        /// The file.
        path: PathBuf,
        /// The answer memory and the pending turns.
        store: Arc<SqliteStore>,
        /// The ledger's connection.
        books: Arc<Mutex<rusqlite::Connection>>,
    },
}

impl State {
    /// Opens `kind`'s state for `out_dir` (the folder made when missing).
    ///
    /// # Errors
    /// The sentence to print: the folder or the file could not be opened, or was written by a
    /// newer toolgate.
    pub(crate) fn open(kind: StoreKind, out_dir: &Path) -> Result<State, String> {
        match kind {
            StoreKind::Memory => Ok(State::Memory),
            StoreKind::Sqlite => {
                std::fs::create_dir_all(out_dir)
                    .map_err(|e| format!("--out-dir {}: {e}", out_dir.display()))?;
                let path = out_dir.join(STATE_FILE);
                let store = SqliteStore::open(&path).map_err(|e| e.to_string())?;
                let books = ledger::open_sqlite_books(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(State::Sqlite {
                    path,
                    store: Arc::new(store),
                    books,
                })
            }
        }
    }

    /// The ledger book `book` (a fresh one in memory).
    pub(crate) fn ledger(&self, book: &str) -> Ledger {
        match self {
            State::Memory => Ledger::default(),
            State::Sqlite { books, .. } => Ledger::sqlite(book, Arc::clone(books)),
        }
    }

    /// A session of `dispatcher` for `context`, its answers in the state's answer memory.
    pub(crate) fn session(&self, dispatcher: &Dispatcher, context: HookContext) -> Session {
        match self {
            State::Memory => dispatcher.session(context),
            State::Sqlite { store, .. } => {
                let answers: Arc<dyn AnswerStore> = store.clone();
                dispatcher.session_with_store(context, answers)
            }
        }
    }

    /// Where paused turns are kept, besides their files; `None` in memory.
    pub(crate) fn pending(&self) -> Option<&dyn PendingStore> {
        match self {
            State::Memory => None,
            State::Sqlite { store, .. } => Some(store.as_ref()),
        }
    }

    /// The state file, when there is one.
    pub(crate) fn file(&self) -> Option<&Path> {
        match self {
            State::Memory => None,
            State::Sqlite { path, .. } => Some(path),
        }
    }
}
