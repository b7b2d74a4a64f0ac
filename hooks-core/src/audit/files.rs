//! The default sink: the two chained JSONL files of an audit folder.

use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};

use crate::audit::chain::ChainedFile;
use crate::audit::record::{AuditRecord, SummaryRecord};
use crate::audit::sink::AuditSink;
use crate::audit::{AUDIT_LOG_FILE, SESSION_SUMMARIES_FILE};
use crate::base::local::with_reused;
use crate::error::HookError;

/// `dir/audit_log.jsonl` and `dir/session_summaries.jsonl`, each one chain.
pub(crate) struct JsonlFiles {
    dir: PathBuf,
    calls: ChainedFile,
    sessions: ChainedFile,
}

impl JsonlFiles {
    /// Opens (creating if missing) `dir` and both files. Errors name the path (see
    /// [`AuditLog::open`](crate::audit::AuditLog::open)).
    pub(crate) fn open(dir: &Path) -> io::Result<JsonlFiles> {
        if dir.exists() && !dir.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!(
                    "cannot use `{}` as the audit folder: it exists and is not a folder",
                    dir.display()
                ),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create the audit folder `{}`: {e}", dir.display()),
            )
        })?;
        let open = |name: &'static str| {
            ChainedFile::open(dir, name).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot open `{}` for appending: {e}",
                        dir.join(name).display()
                    ),
                )
            })
        };
        Ok(JsonlFiles {
            calls: open(AUDIT_LOG_FILE)?,
            sessions: open(SESSION_SUMMARIES_FILE)?,
            dir: dir.to_path_buf(),
        })
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn calls(&self) -> &ChainedFile {
        &self.calls
    }

    pub(crate) fn sessions(&self) -> &ChainedFile {
        &self.sessions
    }
}

impl AuditSink for JsonlFiles {
    fn record(&self, record: &AuditRecord) -> Result<(), HookError> {
        append(&self.calls, |object| {
            record.write_json(object);
            Ok(())
        })
        .map_err(|e| write_failed(&self.calls, &e))
    }

    fn summary(&self, summary: &SummaryRecord) -> Result<(), HookError> {
        append(&self.sessions, |object| {
            summary.write_json(object).map_err(io::Error::from)
        })
        .map_err(|e| write_failed(&self.sessions, &e))
    }

    fn name(&self) -> &str {
        "toolgate::audit::AuditLog files"
    }
}

fn write_failed(file: &ChainedFile, e: &io::Error) -> HookError {
    HookError::new(format_args!(
        "cannot append to `{}`: {e}",
        file.path().display()
    ))
}

thread_local! {
    /// Per thread: the record's JSON (made into its line in place), and the line after a torn
    /// last line.
    static BUFS: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Serializes a value into a reused per-thread buffer with `write` (outside the file's lock),
/// then appends it with its `prev` (see [`ChainedFile::append`]).
fn append(
    file: &ChainedFile,
    write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
) -> io::Result<()> {
    with_reused(&BUFS, |(object, line)| {
        object.clear();
        let result = write(object).and_then(|()| file.append(object, line));
        for buf in [object, line] {
            if buf.capacity() > 1 << 20 {
                *buf = Vec::new();
            }
        }
        result
    })
}
