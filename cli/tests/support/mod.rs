//! What the `toolgate` command's tests share: running the binary, a scratch folder, the
//! recorded trail.
//!
//! The recorded trail (`tests/fixtures/audit/`) is the support agent's bundled replays
//! (`cargo run -p toolgate-support-agent -- --out-dir DIR`), its resumed calls' final lines moved
//! later (an approval 12 min 30 s after its pause, a decline 3 min 5.5 s after), then five lines
//! added, the chain carried on: a halt (`hook_failed`, with its operator detail) and its replay,
//! a line of an outcome this build does not know (`escalated`), an unknown tool whose name
//! carries terminal escape sequences, and the expired resume of `sess_expired_09`; and one
//! session summary with token usage.

// Each test binary uses part of this module.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

/// The recorded audit folder.
pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit")
}

/// Every line of `path` as JSON.
pub fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `toolgate ARGS`: (exit code, standard output, standard error).
pub fn toolgate(args: &[&str]) -> (i32, String, String) {
    let out = command(args).output().unwrap();
    split(out)
}

/// The command `toolgate ARGS`, not started, with `NO_COLOR` unset.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.args(args).env_remove("NO_COLOR");
    c
}

fn split(out: Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A fresh, empty folder under the target's scratch space, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "toolgate-cli-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A copy of the recorded trail in a folder of its own.
    pub fn with_fixture(name: &str) -> Scratch {
        let s = Scratch::new(name);
        for file in ["audit_log.jsonl", "session_summaries.jsonl"] {
            std::fs::copy(fixture().join(file), s.path().join(file)).unwrap();
        }
        s
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The outcomes this build knows.
pub const OUTCOMES: [&str; 12] = [
    "ok",
    "tool_error",
    "panicked",
    "tool_timeout",
    "blocked",
    "invalid_input",
    "unknown_tool",
    "hook_failed",
    "hook_timeout",
    "not_run",
    "cancelled",
    "awaiting_approval",
];

/// The lines every count reads: final, not replayed, of a known outcome.
pub fn counted(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| {
            OUTCOMES.contains(&l["outcome"].as_str().unwrap())
                && l.get("final") != Some(&Value::Bool(false))
                && l.get("replay") != Some(&Value::Bool(true))
        })
        .collect()
}

/// The hook runs of a line.
pub fn runs(line: &Value) -> Vec<Value> {
    line["hooks"].as_array().cloned().unwrap_or_default()
}

/// Per rule: (runs, denials, asks, rewrites, failures), recomputed from the lines: every run,
/// and a `blocked` line with no run a denial of its `blocked_by`.
pub fn rule_counts(lines: &[&Value]) -> std::collections::BTreeMap<String, [u64; 5]> {
    let mut rules = std::collections::BTreeMap::<String, [u64; 5]>::new();
    for l in lines {
        for run in runs(l) {
            let r = rules
                .entry(run["hook"].as_str().unwrap().to_owned())
                .or_default();
            r[0] += 1;
            match run["decision"].as_str().unwrap() {
                "deny" => r[1] += 1,
                "ask" => r[2] += 1,
                "rewrite" => r[3] += 1,
                "failed" | "timeout" => r[4] += 1,
                _ => {}
            }
        }
        // A call a person declined names no hook: the person's decline is no rule's denial.
        if l["outcome"] == "blocked"
            && runs(l).is_empty()
            && let Some(hook) = l["blocked_by"].as_str()
        {
            let r = rules.entry(hook.to_owned()).or_default();
            r[0] += 1;
            r[1] += 1;
        }
    }
    rules
}

/// The p-th percentile of `samples` by nearest rank (the sample at rank ⌈p·n/100⌉).
pub fn nearest_rank(samples: &[u64], p: usize) -> u64 {
    let mut s = samples.to_vec();
    s.sort_unstable();
    let rank = (p * s.len()).div_ceil(100).max(1);
    s[rank - 1]
}
