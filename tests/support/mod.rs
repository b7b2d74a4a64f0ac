//! Test support, one module for every test binary (`mod support;` beside a binary's root file,
//! `#[path = "../support/mod.rs"] mod support;` in a binary's folder):
//!
//! - the texts the model reads for a halt, a panic, a call not run and a tool timeout;
//! - temporary folders, audit-log readers, assistant messages and fixtures;
//! - the six published tools as `#[tool]` functions ([`official`]);
//! - a paused call whose input has fields the audit log hides, for every store's sealed-input
//!   tests ([`sealed`]);
//! - an example's runnable binary, built in the test run's target folder ([`example_binary`]);
//! - for the reliability tests (properties, deadlines, limits, concurrency, trusted context):
//!   test timers that need no runtime, a quiet panic hook for injected faults, a one-poll
//!   driver for cancellation tests, and JSON strategies for property tests.
#![allow(dead_code)]

pub(crate) mod leases;
pub(crate) mod official;
pub(crate) mod sealed;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::Value;
use toolgate::dispatch::{BoxFuture, Timer};

// ================================================================ texts, files, messages

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

/// A reader of JSON-lines files in another language, as a program of its own would read an
/// audit file: each splits the file into lines its own way and parses each line as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineReader {
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
    pub(crate) const ALL: [LineReader; 3] = [
        LineReader::PythonSplitlines,
        LineReader::NodeReadline,
        LineReader::JavaScriptLineTerminators,
    ];

    /// Each line `self` reads from `path`, parsed as JSON by the reader's own parser. A line
    /// that does not parse (a record cut in two by a character the reader ends lines at) fails
    /// the test with the reader's message; so does a missing `python3` or `node`: these tests
    /// need both (CI installs them), and never skip.
    pub(crate) fn read(self, path: &Path) -> Vec<Value> {
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

/// The SHA-256 of `bytes` in lowercase hex (the tests' own, to check the audit chain against).
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// 64 zeros: the `prev` of a chain's first line.
pub(crate) const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The lines of a chained audit file, checked and made comparable: every line ends with
/// `,"prev":"…"}` whose value is the SHA-256 of the line before it, `\n` included (`start` for
/// the first line), recomputed here; each line is returned without its `\n`, with `prev`'s
/// value replaced by `…` and `duration_us` (a measured time) by 0, so the rest can be compared
/// as exact text. Returns the lines and the hash of the last line (`start` when there is none).
pub(crate) fn chained_lines(path: &Path, start: &str) -> (Vec<String>, String) {
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
#[allow(dead_code)]
pub(crate) fn zero_durations(v: &mut Value) {
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

/// The `Halt` a call must end in (a test fails on any other answer).
pub(crate) fn halt_of(r: Result<toolgate::ToolResult, toolgate::CallError>) -> toolgate::Halt {
    match r {
        Err(toolgate::CallError::Halt(h)) => h,
        other => panic!("expected a halt, got {other:?}"),
    }
}

/// The user message of a `Reply::Answer` (a test fails on any other reply).
pub(crate) fn answer_of(r: toolgate::Reply) -> toolgate::Message {
    match r {
        toolgate::Reply::Answer(m) => m,
        other => panic!("expected an answer, got {other:?}"),
    }
}

/// An assistant message with these content blocks and this `stop_reason`.
pub(crate) fn assistant(blocks: Value, stop_reason: &str) -> toolgate::Message {
    serde_json::from_value(serde_json::json!({
        "role": "assistant", "content": blocks, "stop_reason": stop_reason
    }))
    .unwrap()
}

/// An assistant message as the Messages API returns it: with the response's `id` (`msg_…`),
/// which a resend of the same response carries too.
pub(crate) fn assistant_with_id(id: &str, blocks: Value, stop_reason: &str) -> toolgate::Message {
    serde_json::from_value(serde_json::json!({
        "id": id, "role": "assistant", "content": blocks, "stop_reason": stop_reason
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

/// A published `input_schema` as toolgate writes the same tool with an `Option<T>` for each
/// optional field: every property left out of `required` also accepts `null`
/// (`{"description": …, "anyOf": [X, {"type": "null"}]}`), as the argument type does. The
/// deliberate difference from the published definitions (besides `additionalProperties:
/// false`): the schema sent accepts every input the argument type accepts.
pub(crate) fn optional_fields_nullable(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        let required: Vec<Value> = map
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            for (name, prop) in props.iter_mut() {
                let inner = optional_fields_nullable(prop.take());
                *prop = if required.contains(&Value::String(name.clone())) {
                    inner
                } else {
                    let mut branch = inner;
                    let mut outer = serde_json::Map::new();
                    if let Some(d) = branch.as_object_mut().and_then(|m| m.remove("description")) {
                        outer.insert("description".into(), d);
                    }
                    outer.insert(
                        "anyOf".into(),
                        Value::Array(vec![branch, serde_json::json!({"type": "null"})]),
                    );
                    Value::Object(outer)
                };
            }
        }
    }
    schema
}

// ================================================================ examples as child processes

/// The root package's features, each with whether this test binary was built with it. The
/// list is checked against `Cargo.toml`'s `[features]` by [`example_binary`].
const FEATURES: [(&str, bool); 14] = [
    ("tokio", cfg!(feature = "tokio")),
    ("full-validation", cfg!(feature = "full-validation")),
    ("tower", cfg!(feature = "tower")),
    ("claude-code", cfg!(feature = "claude-code")),
    ("audit-verify", cfg!(feature = "audit-verify")),
    ("audit-report", cfg!(feature = "audit-report")),
    ("openai", cfg!(feature = "openai")),
    ("gemini", cfg!(feature = "gemini")),
    ("mcp", cfg!(feature = "mcp")),
    ("mcp-http", cfg!(feature = "mcp-http")),
    ("seal", cfg!(feature = "seal")),
    ("inbox", cfg!(feature = "inbox")),
    ("sqlite", cfg!(feature = "sqlite")),
    ("postgres", cfg!(feature = "postgres")),
];

/// The names of `Cargo.toml`'s `[features]` table.
fn declared_features() -> Vec<String> {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .expect("Cargo.toml reads");
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[features]")
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter_map(|line| line.split_once(" = ").map(|(name, _)| name.trim()))
        .filter(|name| !name.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The runnable binary of example `name`, built once per test binary, for the tests that run
/// an example as its host does (a child process, standard input and output).
///
/// `cargo test --all-targets` builds examples with the test harness (their `main` is not
/// what runs), and cargo gives tests the path of a `[[bin]]` only, so this runs `cargo build
/// --example name` with the cargo that runs the tests. It builds into the test run's own
/// target folder (the parent of `CARGO_TARGET_TMPDIR`; cargo does not hold the folder's lock
/// while the test binaries run) with this binary's features and profile: every crate the
/// example needs is then the one the run already built, and only the example is compiled and
/// linked (other features, or a folder of its own, would build every dependency a second
/// time). The binary's path is the one cargo reports (`--message-format=json`).
pub(crate) fn example_binary(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(n, _)| n == name) {
        return path.clone();
    }
    let known: Vec<&str> = FEATURES.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        declared_features(),
        known,
        "tests/support/mod.rs: FEATURES lists the root package's features, in order"
    );
    let features: Vec<&str> = FEATURES
        .iter()
        .filter(|(_, on)| *on)
        .map(|(f, _)| *f)
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target folder");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command
        .args([
            "build",
            "--example",
            name,
            "--message-format=json-render-diagnostics",
        ])
        .arg("--no-default-features")
        .arg(format!("--features={}", features.join(",")))
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    // The variables cargo sets for a test process, which the run's own cargo did not have: a
    // build script that watches one (ring's watches `CARGO_MANIFEST_DIR`) would otherwise
    // rebuild its crate and every crate above it.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "OUT_DIR",
            ]
            .contains(&&*key)
        {
            command.env_remove(&*key);
        }
    }
    let mut child = command.spawn().expect("cargo runs");
    // cargo's own lines, kept for a failure; a wait for a lock is shown at once (a run that
    // blocks says why).
    let stderr = child.stderr.take().unwrap();
    let example = name.to_owned();
    let log = std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        let mut log = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            if line.trim_start().starts_with("Blocking") {
                let _ = writeln!(std::io::stderr(), "cargo build --example {example}: {line}");
            }
            log.push_str(&line);
            log.push('\n');
        }
        log
    });
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    let status = child.wait().unwrap();
    let log = log.join().unwrap();
    assert!(
        status.success(),
        "cargo build --example {name} failed:\n{log}"
    );
    let path = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|m| {
            m["reason"] == "compiler-artifact"
                && m["target"]["name"] == name
                && m["target"]["kind"] == serde_json::json!(["example"])
        })
        .and_then(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reported no executable for example {name}:\n{log}"));
    built.push((name.to_owned(), path.clone()));
    path
}

// ================================================================ reliability

/// Every panic a test injects on purpose starts with this text; [`quiet_injected_panics`] keeps
/// them off stderr.
pub(crate) const INJECTED: &str = "injected fault";

/// Installs, once per test binary, a panic hook that stays silent for panics whose message starts
/// with [`INJECTED`] or whose payload is an [`InjectedPayload`] (and for tokio's "no runtime"
/// panic, which a test provokes on purpose) and hands every other panic to the hook that was
/// installed before (the default one prints it). It is never removed: tests of one binary run in
/// parallel, so restoring the previous hook from one test could silence or unsilence another
/// mid-run; the filter keeps every real panic visible instead.
pub(crate) fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if text.is_some_and(|t| t.starts_with(INJECTED) || t.contains("Tokio 1.x runtime"))
                || payload.is::<InjectedPayload>()
            {
                return;
            }
            previous(info);
        }));
    });
}

/// A panic payload that is not a string, injected on purpose (so [`quiet_injected_panics`]
/// keeps it quiet too). Dropping it panics as well, with an [`INJECTED`] message: whoever
/// catches the panic must survive the drop of its payload.
pub(crate) struct InjectedPayload;

impl Drop for InjectedPayload {
    fn drop(&mut self) {
        panic!("{INJECTED}: the payload's drop panicked");
    }
}

/// A timer that sleeps on a thread of its own per sleep: real time, no runtime needed, so
/// deadline tests run under `toolgate::block_on` in every CI run.
pub(crate) struct ThreadTimer;

impl Timer for ThreadTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let state = Arc::new(Mutex::new((false, None::<Waker>)));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            std::thread::sleep(duration);
            let mut s = shared.lock().unwrap();
            s.0 = true;
            if let Some(w) = s.1.take() {
                w.wake();
            }
        });
        Box::pin(std::future::poll_fn(move |cx| {
            let mut s = state.lock().unwrap();
            if s.0 {
                Poll::Ready(())
            } else {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }))
    }
}

/// A timer whose every deadline has already passed: a future that does not finish on its first
/// poll loses. Deterministic (no clock), for property tests.
pub(crate) struct ExpiredTimer;

impl Timer for ExpiredTimer {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// A timer whose deadlines never pass: the test decides, not the machine's speed, that no
/// deadline is met (a hook or tool that hangs then hangs the test instead).
pub(crate) struct NeverTimer;

impl Timer for NeverTimer {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

/// A broken timer: panics when asked for a sleep.
pub(crate) struct PanickingTimer;

impl Timer for PanickingTimer {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        panic!("{INJECTED}: the timer is broken")
    }
}

/// A future that never finishes and never wakes (a hung backend).
pub(crate) fn hang<T: Send + 'static>() -> BoxFuture<'static, T> {
    Box::pin(std::future::pending())
}

/// Returns `Pending` once (waking itself), then `Ready(())`: an `.await` that really yields.
pub(crate) fn yield_once() -> impl Future<Output = ()> + Send {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
}

/// Polls `fut` once with a no-op waker; `Some` when it finished.
pub(crate) fn poll_once<F: Future>(fut: Pin<&mut F>) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    match fut.poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// A short string mixing plain letters with the characters JSON and UTF-8 make hard: quotes,
/// backslashes, control characters, multi-byte characters.
pub(crate) fn short_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    const CHARS: &[char] = &[
        'a', 'b', 'n', 's', 'z', ' ', '"', '\\', '\n', '\t', '\u{0}', '\u{7f}', 'é', '€', '🦀',
    ];
    prop::collection::vec(prop::sample::select(CHARS), 0..12).prop_map(String::from_iter)
}

/// Any JSON value, small (at most a few dozen nodes and well under a kilobyte). `words` are
/// the strings a test's tools and hooks care about (field names, tiers, user ids): they appear
/// as string leaves and as object keys, next to arbitrary ones.
pub(crate) fn any_json(
    words: &'static [&'static str],
) -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let word = prop::sample::select(words);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        short_text().prop_map(Value::String),
        "[a-z_]{0,12}".prop_map(Value::String),
        word.clone().prop_map(Value::from),
        Just(Value::from(5)),
    ];
    leaf.prop_recursive(4, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![word.clone().prop_map(str::to_owned), "[a-z_]{1,8}"],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
