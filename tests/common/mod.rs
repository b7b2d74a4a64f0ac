//! Shared test support: the six published tools as Rust functions, and small helpers.
#![allow(dead_code)]

pub(crate) mod official;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// The answer the model reads when a PreToolUse hook could not decide (a `Halt`'s `BLOCKED:`).
pub(crate) const HALT_TEXT: &str = "BLOCKED: this call was not run because a policy check could \
     not be completed. Do not retry it; tell the user this action is unavailable right now.";

/// The answer for a tool that panicked.
pub(crate) const PANIC_TEXT: &str = "Error: the tool failed unexpectedly. The details were \
     logged for the operator; retrying the same call will not help.";

/// The answer for a block after a halted one in the same message.
pub(crate) const NOT_RUN_HALT: &str = "Not run: an earlier call in this message was stopped \
     because a policy check could not be completed.";

/// The answer (seen by observers) for each block of a message cut at `max_tokens`.
pub(crate) const NOT_RUN_MAX_TOKENS: &str = "Not run: the assistant message stopped at \
     max_tokens, so this tool_use may be cut off.";

/// The answer for a tool cut at its deadline of `ms` milliseconds.
pub(crate) fn tool_timeout_text(ms: u64) -> String {
    format!(
        "Error: the tool did not finish within its deadline of {ms} ms and was stopped. Try \
         again later, or with a smaller request."
    )
}

/// A folder under the system temp dir, fresh and empty, unique per call, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty folder whose name contains `label`.
    pub(crate) fn new(label: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "toolgate-test-{label}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The JSON lines of a file, each parsed (a line that does not parse fails the test: a torn or
/// interleaved line; so does a last line without its newline). A missing file has no lines.
pub(crate) fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{} does not end with a newline",
        path.display()
    );
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!(
                    "line {} of {} is not JSON ({e}): {line:?}",
                    i + 1,
                    path.display()
                )
            })
        })
        .collect()
}

/// An assistant message with these content blocks and this `stop_reason`.
pub(crate) fn assistant(blocks: Value, stop_reason: &str) -> toolgate::Message {
    serde_json::from_value(serde_json::json!({
        "role": "assistant", "content": blocks, "stop_reason": stop_reason
    }))
    .unwrap()
}

/// Reads a fixture under `tests/fixtures/`.
pub(crate) fn fixture(rel: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
