//! The Claude Code hook's cost per event (BENCHMARKS.md, "The Claude Code hook"), feature
//! `claude-code`.
//!
//! `cargo bench --bench claude_code_hook --features claude-code` builds the example
//! `claude_code_hook` (`cargo build --release --example claude_code_hook`, as the tests build it:
//! `tests/support/mod.rs`, `example_binary`) and starts it as Claude Code does, one process per
//! event: the event's JSON on standard input, `CLAUDE_PROJECT_DIR` set to a project folder of
//! the bench's own, standard output and error read to their end. Against it, the reader: this
//! bench's own binary started again with `TOOLGATE_BENCH_READ_EVENT` set, which reads standard
//! input to its end and exits 0, nothing else (a process that only reads the event).
//!
//! Events, each with a new `tool_use_id`: `allow`, a PreToolUse of `Bash` running `cargo test`
//! (no rule objects: empty output, exit 0); `deny`, a PreToolUse of `Bash` running `rm -rf /`
//! (denied: the decision on standard output and one audit line appended to the project's
//! chain). Sides interleaved round by round (each round starts with the next side), a few
//! processes per side and round, medians of the rounds. It prints `ms_per_event_SIDE`,
//! `claude_code_hook_over_reader` (the allowed event ÷ the reader; target ≤ 2.5) and
//! `claude_code_hook_deny_over_reader`. Under `cargo test --all-targets` (no `--bench` argument)
//! it runs each side once and checks only what each answers, never a time.

mod common;
#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use common::{figure, median, median_ratio};

/// Set in the reader's environment.
const READER: &str = "TOOLGATE_BENCH_READ_EVENT";

/// One started process: its exit code, standard output and standard error.
type Answer = (Option<i32>, String, String);

/// Starts `program` in `project` as Claude Code starts a command hook and writes `event` to
/// its standard input; its answer.
fn run(program: &Path, project: &Path, reader: bool, event: &str) -> Answer {
    let mut command = Command::new(program);
    command
        .env("CLAUDE_PROJECT_DIR", project)
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if reader {
        command.env(READER, "1");
    }
    let mut child = command.spawn().expect("the process starts");
    child
        .stdin
        .take()
        .expect("a piped standard input")
        .write_all(event.as_bytes())
        .expect("the event is written");
    let out = child.wait_with_output().expect("the process ends");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A PreToolUse event of `Bash` running `command`, as Claude Code sends it, with the `n`th
/// `tool_use_id`.
fn pre_tool_use(project: &Path, command: &str, n: u64) -> String {
    json!({
        "session_id": "bench-session",
        "transcript_path": "/home/dev/.claude/projects/p/bench-session.jsonl",
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "a bench event"},
        "tool_use_id": format!("toolu_bench_{n:012}")
    })
    .to_string()
}

/// One side: what it starts and the event it sends.
struct Side {
    name: &'static str,
    program: PathBuf,
    reader: bool,
    command: &'static str,
}

fn main() -> ExitCode {
    if std::env::var_os(READER).is_some() {
        let mut event = Vec::new();
        return match std::io::stdin().read_to_end(&mut event) {
            Ok(_) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    let bench = common::bench_mode();
    let (rounds, per_round) = if bench { (101, 5) } else { (1, 1) };
    let hook = support::example_binary("claude_code_hook");
    let reader = std::env::current_exe().expect("this bench's own binary");
    let project = support::TempDir::new("bench-claude-code-hook");
    let root = project.path();
    let sides = [
        Side {
            name: "allow",
            program: hook.clone(),
            reader: false,
            command: "cargo test",
        },
        Side {
            name: "deny",
            program: hook,
            reader: false,
            command: "rm -rf /",
        },
        Side {
            name: "reader",
            program: reader,
            reader: true,
            command: "cargo test",
        },
    ];
    let mut n = 0u64;
    let mut event = |side: &Side| {
        n += 1;
        pre_tool_use(root, side.command, n)
    };

    // What each side answers, checked once before timing.
    let denied = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": format!(
            "BLOCKED: `rm -rf /` would delete outside the project ({}). Delete only paths inside \
             the project, named plainly, or ask the user to run the command.",
            root.display())}});
    let expected = [
        (Some(0), String::new(), String::new()),
        (Some(0), format!("{denied}\n"), String::new()),
        (Some(0), String::new(), String::new()),
    ];
    for (side, expected) in sides.iter().zip(&expected) {
        let answer = run(&side.program, root, side.reader, &event(side));
        assert_eq!(&answer, expected, "{}", side.name);
    }
    let audit = root.join(".toolgate").join("audit").join("audit_log.jsonl");
    let lines_before = std::fs::read_to_string(&audit)
        .expect("the denied call's audit line")
        .lines()
        .count();
    assert_eq!(lines_before, 1, "one audit line per denied event");

    let mut ms = vec![Vec::with_capacity(rounds); sides.len()];
    for round in 0..rounds {
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            let side = &sides[i];
            let start = Instant::now();
            for _ in 0..per_round {
                let (code, _, _) = run(&side.program, root, side.reader, &event(side));
                assert_eq!(code, Some(0), "{}", side.name);
            }
            ms[i].push(start.elapsed().as_secs_f64() * 1e3 / per_round as f64);
        }
    }
    // Every denied event was audited, in one chain.
    let lines = std::fs::read_to_string(&audit).expect("the audit lines");
    let lines: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("an audit line is JSON"))
        .collect();
    assert_eq!(lines.len(), 1 + rounds * per_round);
    assert!(lines.iter().all(|l| l["outcome"] == "blocked"));

    for (side, ms) in sides.iter().zip(&ms) {
        figure(&format!("ms_per_event_{}", side.name), median(ms));
    }
    figure("claude_code_hook_over_reader", median_ratio(&ms[0], &ms[2]));
    figure(
        "claude_code_hook_deny_over_reader",
        median_ratio(&ms[1], &ms[2]),
    );
    if let Some(load) = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
    {
        figure("loadavg_1min", load);
    }
    ExitCode::SUCCESS
}
