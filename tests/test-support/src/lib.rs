//! What the workspace's tests share, a dev-dependency of the root package (its
//! `tests/support/mod.rs` re-exports these), of the `toolgate` command and of the support agent:
//!
//! - the texts the model reads for a halt, a panic, a call not run and a tool timeout (the
//!   library's `texts.rs`, pinned here as the model reads them);
//! - scratch folders ([`TempDir`]) and the audit files read back: JSON lines, the hash chain
//!   recomputed with the tests' own SHA-256, and the lines as Python's and JavaScript's line
//!   readers see them ([`LineReader`]);
//! - a throwaway PostgreSQL server per test binary, a fresh database per test ([`postgres`]),
//!   and the bare conditional `UPDATE` the approval inbox's benches compare a decision with
//!   ([`floor`]);
//! - a workspace binary a test runs as a child process: the `toolgate` command, an example of
//!   the root package ([`cargo`]).

pub mod cargo;
pub mod floor;
pub mod postgres;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// The answer the model reads when a PreToolUse hook could not decide (a `Halt`'s `BLOCKED:`).
pub const HALT_TEXT: &str = "BLOCKED: this call was not run because a policy check could \
     not be completed. Do not retry it; tell the user this action is unavailable right now.";

/// The answer for a tool that panicked.
pub const PANIC_TEXT: &str = "Error: the tool failed unexpectedly. The details were \
     logged for the operator; retrying the same call will not help.";

/// The answer for a block after a halted one in the same message.
pub const NOT_RUN_HALT: &str = "Not run: an earlier call in this message was stopped \
     because a policy check could not be completed.";

/// The answer (seen by observers) for each block of a message cut at `max_tokens`.
pub const NOT_RUN_MAX_TOKENS: &str = "Not run: the assistant message stopped at \
     max_tokens, so this tool_use may be cut off.";

/// The answer for a tool cut at its deadline of `ms` milliseconds.
pub fn tool_timeout_text(ms: u64) -> String {
    format!(
        "Error: the tool did not finish within its deadline of {ms} ms and was stopped. Try \
         again later, or with a smaller request."
    )
}

/// A folder under the system temp dir, fresh and empty, unique per call, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty folder whose name contains `label`.
    pub fn new(label: &str) -> TempDir {
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
    pub fn path(&self) -> &Path {
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

/// A reader of JSON-lines files in another language, as a program of its own would read an
/// audit file: each splits the file into lines its own way and parses each line as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineReader {
    /// Python 3's `str.splitlines`, which ends a line at `\n`, `\r`, `\r\n`, `\v`, `\f`,
    /// `\x1c`, `\x1d`, `\x1e`, `\x85`, U+2028 and U+2029 (`python3 -c`).
    PythonSplitlines,
    /// Node's `readline` over a file stream (`crlfDelay: Infinity`), the line reader of Node's
    /// documentation (`node -e`).
    NodeReadline,
    /// A JavaScript reader that splits the text on ECMAScript's line terminators (`\r\n`, `\n`,
    /// `\r`, U+2028, U+2029: what `^` and `$` of a regular expression with the `m` flag stop at)
    /// (`node -e`).
    JavaScriptLineTerminators,
}

impl LineReader {
    /// All three.
    pub const ALL: [LineReader; 3] = [
        LineReader::PythonSplitlines,
        LineReader::NodeReadline,
        LineReader::JavaScriptLineTerminators,
    ];

    /// Each line `self` reads from `path`, parsed as JSON by the reader's own parser. A line
    /// that does not parse (a record cut in two by a character the reader ends lines at) fails
    /// the test with the reader's message; so does a missing `python3` or `node`: these tests
    /// need both (CI installs them), and never skip.
    pub fn read(self, path: &Path) -> Vec<Value> {
        const PYTHON: &str = "import json, sys\n\
            text = open(sys.argv[1], encoding='utf-8', newline='').read()\n\
            print(json.dumps([json.loads(line) for line in text.splitlines()]))";
        const READLINE: &str = "const fs = require('fs'), readline = require('readline');\n\
            const lines = readline.createInterface({input: fs.createReadStream(process.argv[1], \
            {encoding: 'utf8'}), crlfDelay: Infinity});\n\
            const out = [];\n\
            lines.on('line', (line) => out.push(JSON.parse(line)));\n\
            lines.on('close', () => process.stdout.write(JSON.stringify(out)));";
        const TERMINATORS: &str = "const text = require('fs').readFileSync(process.argv[1], 'utf8');\n\
            const lines = text.split(/\\r\\n|[\\n\\r\\u2028\\u2029]/);\n\
            if (lines[lines.length - 1] === '') lines.pop();\n\
            process.stdout.write(JSON.stringify(lines.map((line) => JSON.parse(line))));";
        let (program, script) = match self {
            LineReader::PythonSplitlines => ("python3", PYTHON),
            LineReader::NodeReadline => ("node", READLINE),
            LineReader::JavaScriptLineTerminators => ("node", TERMINATORS),
        };
        let flag = if program == "python3" { "-c" } else { "-e" };
        let output = std::process::Command::new(program)
            .arg(flag)
            .arg(script)
            .arg(path)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "`{program}` could not be run ({e}): this test reads the audit file as \
                     {self:?} does and needs {program} installed (CI installs it)"
                )
            });
        assert!(
            output.status.success(),
            "{self:?} could not read {} as JSON lines: {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "{self:?} printed no JSON array ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }
}

/// The JSON lines of a file, each parsed (a line that does not parse fails the test: a torn or
/// interleaved line; so does a last line without its newline). A missing file has no lines.
pub fn json_lines(path: &Path) -> Vec<Value> {
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

/// The SHA-256 of `bytes` in lowercase hex (the tests' own, to check the audit chain against).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// 64 zeros: the `prev` of a chain's first line.
pub const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The lines of a chained audit file, checked and made comparable: every line ends with
/// `,"prev":"…"}` whose value is the SHA-256 of the line before it, `\n` included (`start` for
/// the first line), recomputed here; each line is returned without its `\n`, with `prev`'s
/// value replaced by `…` and `duration_us` (a measured time) by 0, so the rest can be compared
/// as exact text. Returns the lines and the hash of the last line (`start` when there is none).
pub fn chained_lines(path: &Path, start: &str) -> (Vec<String>, String) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{}",
        path.display()
    );
    let mut expected = start.to_owned();
    let mut out = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let body = line.strip_suffix('\n').unwrap();
        let (rest, prev) = body
            .rsplit_once(",\"prev\":\"")
            .unwrap_or_else(|| panic!("line {} has no prev: {body}", i + 1));
        assert_eq!(
            prev,
            format!("{expected}\"}}"),
            "line {} of {}",
            i + 1,
            path.display()
        );
        expected = sha256_hex(line.as_bytes());
        out.push(format!("{},\"prev\":\"…\"}}", zero_duration(rest)));
    }
    (out, expected)
}

/// Every `"duration_us":N` (the call's, and each hook run's in `hooks`) with N replaced by 0.
fn zero_duration(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some((before, after)) = rest.split_once("\"duration_us\":") {
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        assert!(digits > 0, "duration_us is an integer: {line}");
        out.push_str(before);
        out.push_str("\"duration_us\":0");
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// A parsed audit line (or record) with its measured times set to 0: `duration_us`, and each
/// `hooks[].duration_us`.
pub fn zero_durations(v: &mut Value) {
    if let Some(d) = v.get_mut("duration_us") {
        *d = Value::from(0);
    }
    if let Some(Value::Array(runs)) = v.get_mut("hooks") {
        for run in runs {
            if let Some(d) = run.get_mut("duration_us") {
                *d = Value::from(0);
            }
        }
    }
}
