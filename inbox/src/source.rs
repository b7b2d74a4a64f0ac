//! The store `toolgate inbox SOURCE` decides on: an SQLite file (its decision lines in the
//! `decisions.jsonl` of the audit folder, by default the file's own folder, where the support
//! agent's `--out-dir` keeps both) or a PostgreSQL URL (its decision lines on the database's
//! `decisions` chain, in each decision's own transaction).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_core::approval::inbox::{Inbox, InboxStore, Policy};

use crate::PageError;

/// Where the inbox's store is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// An SQLite file a `SqliteStore` writes (feature `sqlite`).
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://…`, `postgresql://…`) a fleet's `PostgresStore` writes
    /// (feature `postgres`).
    Postgres(String),
}

impl Source {
    /// `text` as a source: a URL starting `postgres://` or `postgresql://`, else a file's path.
    pub fn parse(text: &str) -> Source {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Source::Postgres(text.to_owned())
        } else {
            Source::Sqlite(PathBuf::from(text))
        }
    }

    /// The source as it may be shown: a URL's password as `***`.
    pub fn shown(&self) -> String {
        match self {
            Source::Sqlite(path) => path.display().to_string(),
            #[cfg(feature = "postgres")]
            Source::Postgres(url) => toolgate_core::store::postgres::shown_settings(url),
            #[cfg(not(feature = "postgres"))]
            Source::Postgres(_) => "a PostgreSQL URL".to_owned(),
        }
    }

    /// Opens the store and builds the inbox over it with `policy`; an SQLite file's decision
    /// lines go to `audit_dir` (default: the file's folder).
    ///
    /// # Errors
    /// [`PageError::Store`] naming the source (its password hidden) when it cannot be opened;
    /// [`PageError::Config`] for a source this build has no feature for.
    pub fn inbox(&self, policy: Policy, audit_dir: Option<&Path>) -> Result<Inbox, PageError> {
        let shown = self.shown();
        let failed = |e: &dyn std::fmt::Display| PageError::Store(format!("{shown}: {e}"));
        match self {
            #[cfg(feature = "sqlite")]
            Source::Sqlite(path) => {
                if !path.is_file() {
                    return Err(PageError::Store(format!(
                        "{shown}: no such SQLite file (the agent makes it: its --out-dir's \
                         state.sqlite)"
                    )));
                }
                let store = toolgate_core::store::sqlite::SqliteStore::open(path)
                    .map_err(|e| PageError::Store(e.to_string()))?;
                let dir = match audit_dir {
                    Some(d) => d.to_path_buf(),
                    None => path
                        .parent()
                        .filter(|p| !p.as_os_str().is_empty())
                        .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
                };
                let log = toolgate_core::approval::inbox::DecisionFiles::open(&dir)
                    .map_err(|e| failed(&e))?;
                let store: Arc<dyn InboxStore> = Arc::new(store);
                Inbox::builder(store)
                    .policy(policy)
                    .decision_log(Arc::new(log))
                    .build()
                    .map_err(|e| failed(&e))
            }
            #[cfg(feature = "postgres")]
            Source::Postgres(url) => {
                let store = toolgate_core::store::postgres::PostgresStore::connect(url)
                    .map_err(|e| failed(&e))?;
                let store: Arc<dyn InboxStore> = Arc::new(store);
                Inbox::builder(store)
                    .policy(policy)
                    .build()
                    .map_err(|e| failed(&e))
            }
            #[allow(unreachable_patterns)]
            _ => Err(PageError::Config(format!(
                "{shown}: this build cannot open it (features `sqlite` and `postgres`)"
            ))),
        }
    }
}
