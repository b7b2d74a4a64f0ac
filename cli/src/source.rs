//! What a command reads: an audit folder, checked before anything is read (one clear sentence
//! for a path that is missing, a file, or a folder with no audit files), or a PostgreSQL
//! database (`postgres://…`, `postgresql://…`) that a fleet's `PostgresAuditSink` writes,
//! exported to a temporary folder of the same files first.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::ArgMatches;
use toolgate_core::audit::{AUDIT_LOG_FILE, SESSION_SUMMARIES_FILE, chain_files};

/// The `SOURCE` argument: a database URL, or a path.
pub(crate) enum Source {
    /// An audit folder (not checked yet).
    Folder(PathBuf),
    /// A PostgreSQL URL.
    Database(String),
}

/// The `SOURCE` argument as given.
pub(crate) fn source(m: &ArgMatches) -> Source {
    let given = m.get_one::<OsString>("dir").cloned().unwrap_or_default();
    match given.to_str() {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Source::Database(url.to_owned())
        }
        _ => Source::Folder(PathBuf::from(given)),
    }
}

/// An audit folder to read: the one given, or the export of a database into a temporary
/// folder (removed when this is dropped).
pub(crate) struct Input {
    /// The folder.
    pub(crate) dir: PathBuf,
    /// What the user named: the folder's path, or the URL with its password hidden.
    pub(crate) label: String,
    /// Whether `dir` is a temporary export, removed on drop.
    temporary: bool,
}

impl Drop for Input {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The `SOURCE` argument as a folder to read: an audit folder, checked, or a database's chains
/// exported to a temporary one (a read-only connection: nothing in the database changes).
///
/// # Errors
/// The sentence to print (exit 2): `` `X` does not exist ``, `` `X` is a file, not an audit
/// folder … ``, `` `X` holds no audit files … ``, or what the database answered.
pub(crate) fn input(m: &ArgMatches) -> Result<Input, String> {
    match source(m) {
        Source::Folder(dir) => {
            check(&dir)?;
            Ok(Input {
                label: dir.display().to_string(),
                dir,
                temporary: false,
            })
        }
        Source::Database(url) => export(&url),
    }
}

#[cfg(feature = "postgres")]
fn export(url: &str) -> Result<Input, String> {
    use std::time::{SystemTime, UNIX_EPOCH};
    let label = crate::database::shown(url);
    let store = crate::database::connect(url)?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("toolgate-export-{}-{nanos}", std::process::id()));
    let input = Input {
        dir,
        label: label.clone(),
        temporary: true,
    };
    toolgate_core::block_on(store.audit_sink().export_jsonl(&input.dir))
        .map_err(|e| format!("{label}: {e}"))?;
    Ok(input)
}

#[cfg(not(feature = "postgres"))]
fn export(url: &str) -> Result<Input, String> {
    Err(crate::database::without_postgres(url))
}

fn check(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("`{}` does not exist", dir.display()))
        }
        Err(e) => Err(format!("cannot read `{}`: {e}", dir.display())),
        Ok(meta) if !meta.is_dir() => {
            let hint = match dir.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => {
                    format!(" (`{}`)", parent.display())
                }
                _ => String::new(),
            };
            Err(format!(
                "`{}` is a file, not an audit folder: give the folder that holds it{hint}",
                dir.display()
            ))
        }
        Ok(_) => {
            let listed = |name| {
                chain_files(dir, name).map_err(|e| format!("cannot read `{}`: {e}", dir.display()))
            };
            if listed(AUDIT_LOG_FILE)?.is_empty() && listed(SESSION_SUMMARIES_FILE)?.is_empty() {
                return Err(format!(
                    "`{}` holds no audit files ({AUDIT_LOG_FILE}, {SESSION_SUMMARIES_FILE}): is it \
                     the audit folder?",
                    dir.display()
                ));
            }
            Ok(())
        }
    }
}
