//! The Claude Code hook (`toolgate::claude_code`, `examples/claude_code_hook.rs`): each event
//! of Claude Code's hooks reference piped in as JSON, with the exact standard output, standard
//! error and exit code; the audit lines, the Stop hooks on SessionEnd and the per-session state
//! file; a panicking and an erroring rule (exit 2); unreadable events (exit 2); and one run of the
//! example binary as Claude Code runs it, a child process. Feature `claude-code`.
#![cfg(feature = "claude-code")]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use toolgate::claude_code::{ClaudeCodeHook, HOOK_PANIC_MESSAGE, RewriteAnswer};
use toolgate::{
    Decision, Dispatcher, ToolUse,
    audit::{AuditLog, SessionSummary},
    dispatch::{Clock, HookError, PreHookDef, StopHookDef, ToolDef},
};

mod support;

use support::{HALT_TEXT, TempDir, ZEROS, chained_lines};

// The example itself, compiled as a module of this test: the same tools and rules.
#[allow(dead_code)]
#[path = "../examples/claude_code_hook.rs"]
mod example;

/// 2025-12-01T14:40:00Z.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_600_000)
}

/// A project folder with its audit and state folders, removed at the end.
struct Project {
    dir: TempDir,
}

impl Project {
    fn new(label: &str) -> Project {
        Project {
            dir: TempDir::new(label),
        }
    }
    fn root(&self) -> &Path {
        self.dir.path()
    }
    fn audit(&self) -> PathBuf {
        self.root().join("audit")
    }
    fn state(&self) -> PathBuf {
        self.root().join("sessions")
    }
    /// The example's hook over this project, at a fixed time, as user `dev`.
    fn example_hook(&self) -> ClaudeCodeHook {
        self.hook(example::dispatcher(&self.audit()).expect("the example's rules build"))
    }
    fn hook(&self, dispatcher: Dispatcher) -> ClaudeCodeHook {
        ClaudeCodeHook::new(dispatcher)
            .user_id("dev")
            .clock(Clock::fixed(now()))
            .project_dir(self.root())
            .state_dir(self.state())
    }
    /// The audit lines, `duration_us` as 0 and `prev` as `…` (checked).
    fn audit_lines(&self) -> Vec<String> {
        chained_lines(&self.audit().join("audit_log.jsonl"), ZEROS).0
    }
}

/// Pipes `event` into `hook`: (exit code, standard output, standard error).
fn run(hook: &ClaudeCodeHook, event: &str) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = hook.run(&mut event.as_bytes(), &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// A PreToolUse event as Claude Code sends it (hooks reference, "PreToolUse input").
fn pre(project: &Project, tool_name: &str, tool_input: Value) -> String {
    json!({
        "session_id": "abc123",
        "transcript_path": "/home/dev/.claude/projects/p/abc123.jsonl",
        "cwd": project.root(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01ABC123"
    })
    .to_string()
}

/// The standard output of a PreToolUse decision, with its newline.
fn decision(permission: &str, reason: &str) -> String {
    format!(
        "{}\n",
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": permission, "permissionDecisionReason": reason}})
    )
}

const RM_INSTEAD: &str =
    "Delete only paths inside the project, named plainly, or ask the user to run the command.";

#[test]
fn rm_rf_outside_the_project_is_denied_inside_it_gets_no_decision() {
    let p = Project::new("cc-rm");
    let hook = p.example_hook();
    let root = p.root().display().to_string();
    let denied = |target: &str| {
        decision(
            "deny",
            &format!(
                "BLOCKED: `rm -rf {target}` would delete outside the project ({root}). {RM_INSTEAD}"
            ),
        )
    };
    for (command, target) in [
        ("rm -rf /", "/"),
        ("rm -fr ~/work", "~/work"),
        ("rm -r -f ../other", "../other"),
        ("ls && rm --recursive --force $HOME", "$HOME"),
        ("rm -Rf .", "."),
        ("cargo clean; /bin/rm -rf /etc", "/etc"),
    ] {
        let event = pre(
            &p,
            "Bash",
            json!({"command": command, "description": "clean up"}),
        );
        assert_eq!(
            run(&hook, &event),
            (0, denied(target), String::new()),
            "{command}"
        );
    }
    for command in [
        "rm -rf target",
        "rm -rf ./build/*",
        "rm -r docs/old",
        "rm -f /tmp/x.log",
    ] {
        let event = pre(&p, "Bash", json!({"command": command}));
        assert_eq!(
            run(&hook, &event),
            (0, String::new(), String::new()),
            "{command}"
        );
    }
    // Denials are final in Claude Code: each has its audit line.
    assert_eq!(p.audit_lines().len(), 6);
}

#[test]
fn writes_to_env_files_or_outside_cwd_are_denied() {
    let p = Project::new("cc-write");
    let hook = p.example_hook();
    let env = p.root().join(".env");
    let event = pre(&p, "Write", json!({"file_path": env, "content": "KEY=1"}));
    assert_eq!(
        run(&hook, &event),
        (
            0,
            decision(
                "deny",
                "BLOCKED: `.env` holds secrets and is not edited by the agent. Tell the user \
                 which variable to set, and let them edit the file."
            ),
            String::new()
        )
    );
    let local = p.root().join("config/.env.local");
    let event = pre(
        &p,
        "Edit",
        json!({"file_path": local, "old_string": "A=1", "new_string": "A=2"}),
    );
    assert_eq!(
        run(&hook, &event).1,
        decision(
            "deny",
            "BLOCKED: `.env.local` holds secrets and is not edited by the agent. Tell the user \
         which variable to set, and let them edit the file."
        )
    );

    let event = pre(
        &p,
        "Write",
        json!({"file_path": "/etc/hosts", "content": "x"}),
    );
    assert_eq!(
        run(&hook, &event),
        (
            0,
            decision(
                "deny",
                &format!(
                    "BLOCKED: /etc/hosts is outside the working folder ({}).",
                    p.root().display()
                )
            ),
            String::new()
        )
    );
    let sneaky = format!("{}/src/../../elsewhere.rs", p.root().display());
    let event = pre(&p, "Write", json!({"file_path": sneaky, "content": "x"}));
    assert_eq!(
        run(&hook, &event).1,
        decision(
            "deny",
            &format!(
                "BLOCKED: {sneaky} is outside the working folder ({}).",
                p.root().display()
            )
        )
    );

    // Allowed: no decision, so Claude Code's own permission prompt still applies.
    for input in [
        json!({"file_path": p.root().join("src/main.rs"), "content": "fn main() {}"}),
        json!({"file_path": p.root().join(".env.example"), "content": "KEY="}),
    ] {
        assert_eq!(
            run(&hook, &pre(&p, "Write", input)),
            (0, String::new(), String::new())
        );
    }
    let read = pre(&p, "Read", json!({"file_path": "/etc/hosts"}));
    assert_eq!(run(&hook, &read), (0, String::new(), String::new()));
}

#[test]
fn a_force_push_asks_the_person() {
    let p = Project::new("cc-push");
    let hook = p.example_hook();
    let deny = decision(
        "ask",
        "a force push rewrites the shared history: approve it only if you mean to.",
    );
    for command in [
        "git push --force origin main",
        "git push -f",
        "git push --force-with-lease",
    ] {
        let event = pre(&p, "Bash", json!({"command": command}));
        assert_eq!(
            run(&hook, &event),
            (0, deny.clone(), String::new()),
            "{command}"
        );
    }
    let event = pre(&p, "Bash", json!({"command": "git push origin main"}));
    assert_eq!(run(&hook, &event), (0, String::new(), String::new()));
}

#[test]
fn schemas_are_open_unknown_tools_get_no_decision_and_invalid_input_is_denied() {
    let p = Project::new("cc-schema");
    let hook = p.example_hook();
    // A field Claude Code may add tomorrow does not block the call.
    let event = pre(
        &p,
        "Bash",
        json!({"command": "ls", "dangerouslyDisableSandbox": false, "timeout": 1000}),
    );
    assert_eq!(run(&hook, &event), (0, String::new(), String::new()));
    // A tool the dispatcher does not know: no decision, nothing recorded.
    let event = pre(&p, "mcp__github__create_issue", json!({"title": "x"}));
    assert_eq!(run(&hook, &event), (0, String::new(), String::new()));
    // A known tool with an input that does not match its schema: denied, with the reason.
    let event = pre(&p, "Bash", json!({"command": 42}));
    let (code, out, err) = run(&hook, &event);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        decision(
            "deny",
            "Error: invalid input for tool `Bash` at `command`: expected a string, found the \
             number 42. Send an input that matches the tool's input_schema."
        )
    );
    let lines = p.audit_lines();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains(r#""tool":"Bash","input":{"command":42},"outcome":"invalid_input""#),
        "{}",
        lines[0]
    );
}

#[test]
fn an_event_that_cannot_be_read_blocks_with_exit_2() {
    let p = Project::new("cc-unreadable");
    let hook = p.example_hook();
    let read = "BLOCKED: toolgate could not read the hook event: ";
    for (event, why) in [
        (
            "",
            "it is not JSON (EOF while parsing a value at line 1 column 0)",
        ),
        (
            "{\"hook_event_name\": \"PreToolUse\"",
            "it is not JSON (EOF while parsing an object at line 1 column 32)",
        ),
        ("[1, 2]", "it is not a JSON object"),
        ("{\"tool_name\": \"Bash\"}", "it has no `hook_event_name`"),
        (
            "{\"hook_event_name\": \"PreToolUse\", \"tool_input\": {}}",
            "PreToolUse without `tool_name`",
        ),
    ] {
        assert_eq!(
            run(&hook, event),
            (2, String::new(), format!("{read}{why}\n")),
            "{event:?}"
        );
    }
    assert!(!p.audit().join("audit_log.jsonl").exists() || p.audit_lines().is_empty());
}

/// Claude Code's `Bash` input, for the hand-built dispatchers below.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct BashInput {
    /// The command.
    command: String,
}

/// A dispatcher with `Bash` and one rule `f` on it, its audit log in the project.
fn one_rule<F>(p: &Project, f: F) -> Dispatcher
where
    F: Fn(&ToolUse) -> Result<Decision, HookError> + Send + Sync + 'static,
{
    with_rule(
        p,
        PreHookDef::sync("team::rule", 10, move |_env, call: &ToolUse| f(call)).tools(["Bash"]),
    )
}

/// A dispatcher with `Bash` and the PreToolUse hook `rule`, its audit log in the project.
fn with_rule(p: &Project, rule: PreHookDef) -> Dispatcher {
    Dispatcher::builder()
        .tool(ToolDef::external::<BashInput>(
            "Bash",
            "Runs a shell command.",
        ))
        .pre_hook(rule)
        .audit_log(AuditLog::open(p.audit()).unwrap())
        .build()
        .unwrap()
}

#[test]
fn a_rule_that_panics_or_errors_blocks_with_exit_2_and_the_detail_stays_in_the_audit_line() {
    support::quiet_injected_panics();
    let p = Project::new("cc-panic");
    let hook = p.hook(one_rule(&p, |call| match call.input["command"].as_str() {
        Some("panic") => panic!("{}: token sk-live-123 expired", support::INJECTED),
        _ => Err(HookError::new("the policy service is down")),
    }));
    let event = pre(&p, "Bash", json!({"command": "panic"}));
    assert_eq!(
        run(&hook, &event),
        (2, String::new(), format!("{HALT_TEXT}\n"))
    );
    let event = pre(&p, "Bash", json!({"command": "ls"}));
    assert_eq!(
        run(&hook, &event),
        (2, String::new(), format!("{HALT_TEXT}\n"))
    );
    let head = r#"{"ts":"2025-12-01T14:40:00Z","session_id":"abc123","user_id":"dev","tool_use_id":"toolu_01ABC123","tool":"Bash","#;
    assert_eq!(
        p.audit_lines(),
        [
            format!(
                r#"{head}"input":{{"command":"panic"}},"outcome":"hook_failed","is_error":true,"content":"{HALT_TEXT}","duration_us":0,"blocked_by":"team::rule","detail":"the hook panicked: {}: token sk-live-123 expired","prev":"…"}}"#,
                support::INJECTED
            ),
            format!(
                r#"{head}"input":{{"command":"ls"}},"outcome":"hook_failed","is_error":true,"content":"{HALT_TEXT}","duration_us":0,"blocked_by":"team::rule","detail":"the policy service is down","prev":"…"}}"#
            ),
        ]
    );
}

#[test]
fn a_hook_process_that_panics_outside_the_rules_blocks_with_exit_2() {
    struct Exploding;
    impl std::io::Read for Exploding {
        fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
            panic!("{}: stdin exploded", support::INJECTED)
        }
    }
    support::quiet_injected_panics();
    let p = Project::new("cc-process-panic");
    let hook = p.example_hook();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(hook.run(&mut Exploding, &mut out, &mut err), 2);
    assert_eq!(
        (out, String::from_utf8(err).unwrap()),
        (vec![], format!("{HOOK_PANIC_MESSAGE}\n"))
    );
}

#[test]
fn a_rewrite_asks_with_the_updated_input_unless_the_host_allows_it() {
    let p = Project::new("cc-rewrite");
    let rule = |call: &ToolUse| {
        Ok(match call.input["command"].as_str() {
            Some("npm install") => Decision::rewrite(json!({"command": "npm ci"})),
            _ => Decision::Allow,
        })
    };
    let event = pre(&p, "Bash", json!({"command": "npm install"}));
    let expected = |permission: &str| {
        format!(
            "{}\n",
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": permission,
                "permissionDecisionReason":
                    "toolgate rewrote this call's input (team::rule); review the new input.",
                "updatedInput": {"command": "npm ci"}}})
        )
    };
    let hook = p.hook(one_rule(&p, rule));
    assert_eq!(run(&hook, &event), (0, expected("ask"), String::new()));
    let hook = p.hook(one_rule(&p, rule)).rewrites(RewriteAnswer::Allow);
    assert_eq!(run(&hook, &event), (0, expected("allow"), String::new()));
}

#[test]
fn a_rewrite_that_changes_the_input_every_time_is_answered_applied_once() {
    let p = Project::new("cc-rewrite-once");
    // Every command runs under `timeout 600`, whatever it already says: the rule is not asked
    // about the command it produced, so `updatedInput` has the prefix once.
    let timeout = |call: &ToolUse| {
        let command = call.input["command"].as_str().unwrap_or_default();
        Ok(Decision::rewrite(
            json!({"command": format!("timeout 600 {command}")}),
        ))
    };
    let answer = |permission: &str, hook: &str, input: Value| {
        format!(
            "{}\n",
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": permission,
                "permissionDecisionReason":
                    format!("toolgate rewrote this call's input ({hook}); review the new input."),
                "updatedInput": input}})
        )
    };
    let event = pre(&p, "Bash", json!({"command": "cargo test"}));
    let hook = p.hook(one_rule(&p, timeout)).rewrites(RewriteAnswer::Allow);
    assert_eq!(
        run(&hook, &event),
        (
            0,
            answer(
                "allow",
                "team::rule",
                json!({"command": "timeout 600 cargo test"})
            ),
            String::new()
        )
    );
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(p.state().join("abc123.json")).unwrap())
            .unwrap();
    assert_eq!(
        state["rewrites"]["toolu_01ABC123"],
        json!({"input": {"command": "cargo test"}, "rewritten_by": ["team::rule"]})
    );

    // The same through a rule on every tool, for a tool the dispatcher does not declare.
    let p = Project::new("cc-rewrite-once-every-tool");
    let hook = p.hook(rule_on_every_tool(&p, |call| {
        let q = call.input["q"].as_str().unwrap_or_default();
        Ok(Decision::rewrite(json!({"q": format!("lang:en {q}")})))
    }));
    let event = pre(&p, "mcp__search__query", json!({"q": "flaky tests"}));
    assert_eq!(
        run(&hook, &event),
        (
            0,
            answer("ask", "team::every", json!({"q": "lang:en flaky tests"})),
            String::new()
        )
    );
}

#[test]
fn post_tool_use_feeds_the_audit_log_and_session_end_runs_the_stop_hooks_once() {
    let p = Project::new("cc-session");
    let seen: Arc<Mutex<Vec<SessionSummary>>> = Arc::default();
    let seen_by_hook = seen.clone();
    let dispatcher = Dispatcher::builder()
        .tool(ToolDef::external::<BashInput>(
            "Bash",
            "Runs a shell command.",
        ))
        .pre_hook(
            PreHookDef::sync("team::no_sudo", 10, |_env, call: &ToolUse| {
                Ok(if call.input["command"] == "sudo ls" {
                    Decision::deny("no sudo.")
                } else {
                    Decision::Allow
                })
            })
            .tools(["Bash"]),
        )
        .stop_hook(StopHookDef::new("team::summary", move |_env, summary| {
            seen_by_hook.lock().unwrap().push(summary.clone());
            Ok(())
        }))
        .audit_log(AuditLog::open(p.audit()).unwrap())
        .build()
        .unwrap();
    let hook = p.hook(dispatcher);
    let cwd = p.root().display().to_string();
    let event = |name: &str, extra: Value| {
        let mut e = json!({"session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": cwd,
                           "permission_mode": "default", "hook_event_name": name});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        e.to_string()
    };
    let none = (0, String::new(), String::new());
    let post = event(
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "toolu_1",
        "tool_input": {"command": "ls"},
        "tool_response": {"stdout": "Cargo.toml\n", "stderr": "", "interrupted": false}}),
    );
    assert_eq!(run(&hook, &post), none);
    let failed = event(
        "PostToolUseFailure",
        json!({"tool_name": "Bash", "tool_use_id": "toolu_2",
        "tool_input": {"command": "false"}, "error": "Exit code 1"}),
    );
    assert_eq!(run(&hook, &failed), none);
    let denied = event(
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "toolu_3",
        "tool_input": {"command": "sudo ls"}}),
    );
    assert_eq!(run(&hook, &denied).1, decision("deny", "BLOCKED: no sudo."));
    // A tool of Claude Code's the dispatcher does not declare: its observers see it as it is.
    let read = event(
        "PostToolUse",
        json!({"tool_name": "Glob", "tool_use_id": "toolu_4",
        "tool_input": {"pattern": "*.rs"}, "tool_response": "src/lib.rs"}),
    );
    assert_eq!(run(&hook, &read), none);
    // Stop fires at the end of every turn: nothing happens.
    assert_eq!(
        run(&hook, &event("Stop", json!({"stop_hook_active": false}))),
        none
    );
    assert!(seen.lock().unwrap().is_empty());
    let state_file = p.state().join("abc123.json");
    assert!(state_file.exists());

    assert_eq!(
        run(&hook, &event("SessionEnd", json!({"reason": "other"}))),
        none
    );
    let summary: Value = serde_json::to_value(&seen.lock().unwrap()[0]).unwrap();
    assert_eq!(
        summary,
        json!({"session_id": "abc123", "user_id": "dev", "started_at": "2025-12-01T14:40:00Z",
               "ended_at": "2025-12-01T14:40:00Z", "calls": 4,
               "outcomes": {"ok": 2, "tool_error": 1, "blocked": 1}, "tools": {"Bash": 3},
               "observer_errors": 0})
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert!(!state_file.exists(), "SessionEnd removes the state file");

    let head = r#"{"ts":"2025-12-01T14:40:00Z","session_id":"abc123","user_id":"dev","#;
    assert_eq!(
        p.audit_lines(),
        [
            format!(
                r#"{head}"tool_use_id":"toolu_1","tool":"Bash","input":{{"command":"ls"}},"outcome":"ok","is_error":false,"content":"{{\"stdout\":\"Cargo.toml\\n\",\"stderr\":\"\",\"interrupted\":false}}","duration_us":0,"prev":"…"}}"#
            ),
            format!(
                r#"{head}"tool_use_id":"toolu_2","tool":"Bash","input":{{"command":"false"}},"outcome":"tool_error","is_error":true,"content":"Exit code 1","duration_us":0,"prev":"…"}}"#
            ),
            format!(
                r#"{head}"tool_use_id":"toolu_3","tool":"Bash","input":{{"command":"sudo ls"}},"outcome":"blocked","is_error":true,"content":"BLOCKED: no sudo.","duration_us":0,"blocked_by":"team::no_sudo","prev":"…"}}"#
            ),
            format!(
                r#"{head}"tool_use_id":"toolu_4","tool":"Glob","input":{{"pattern":"*.rs"}},"outcome":"ok","is_error":false,"content":"src/lib.rs","duration_us":0,"prev":"…"}}"#
            ),
        ]
    );
    let (summaries, _) = chained_lines(&p.audit().join("session_summaries.jsonl"), ZEROS);
    assert_eq!(
        summaries,
        [
            r#"{"ts":"2025-12-01T14:40:00Z","session_id":"abc123","user_id":"dev","started_at":"2025-12-01T14:40:00Z","ended_at":"2025-12-01T14:40:00Z","calls":4,"outcomes":{"ok":2,"tool_error":1,"blocked":1},"tools":{"Bash":3},"observer_errors":0,"prev":"…"}"#
        ]
    );
}

#[test]
fn concurrent_events_of_one_session_lose_no_count() {
    let p = Project::new("cc-concurrent");
    let hook = Arc::new(p.example_hook());
    let cwd = p.root().display().to_string();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let hook = hook.clone();
            let event =
                json!({"session_id": "abc123", "cwd": cwd, "hook_event_name": "PostToolUse",
                "tool_name": "Read", "tool_use_id": format!("toolu_{i}"),
                "tool_input": {"file_path": "/x"}, "tool_response": "x"})
                .to_string();
            std::thread::spawn(move || run(&hook, &event).0)
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 0);
    }
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(p.state().join("abc123.json")).unwrap())
            .unwrap();
    assert_eq!(
        (&state["calls"], &state["outcomes"], &state["tools"]),
        (&json!(8), &json!({"ok": 8}), &json!({"Read": 8}))
    );
    assert_eq!(p.audit_lines().len(), 8);
}

/// Runs the example binary as Claude Code does: the event on standard input,
/// `CLAUDE_PROJECT_DIR` set.
fn run_binary(project: &Path, event: &str) -> (i32, String, String) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(support::example_binary("claude_code_hook"))
        .env("CLAUDE_PROJECT_DIR", project)
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn the_example_binary_answers_claude_code_as_a_child_process() {
    let p = Project::new("cc-binary");
    let root = p.root().display().to_string();
    let event = pre(
        &p,
        "Bash",
        json!({"command": "rm -rf /", "description": "wipe"}),
    );
    assert_eq!(
        run_binary(p.root(), &event),
        (
            0,
            decision(
                "deny",
                &format!(
                    "BLOCKED: `rm -rf /` would delete outside the project ({root}). {RM_INSTEAD}"
                )
            ),
            String::new()
        )
    );
    let event = pre(&p, "Bash", json!({"command": "cargo test"}));
    assert_eq!(
        run_binary(p.root(), &event),
        (0, String::new(), String::new())
    );
    assert_eq!(
        run_binary(p.root(), "not json"),
        (
            2,
            String::new(),
            "BLOCKED: toolgate could not read the hook event: it is not JSON (expected ident at \
             line 1 column 2)\n"
                .into()
        )
    );
    // The denial's audit line is in the project's `.toolgate/audit/`.
    let lines = chained_lines(&p.root().join(".toolgate/audit/audit_log.jsonl"), ZEROS).0;
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains(r#""outcome":"blocked""#), "{}", lines[0]);
}

#[test]
fn a_rule_on_every_tool_decides_tools_the_dispatcher_does_not_declare() {
    let p = Project::new("cc-every-tool");
    let hook = p.example_hook();
    let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
    let instead = "Leave the secret out and tell the user where it is needed.";
    // An MCP tool no `#[tool(external)]` declares: the rule matching every tool runs on it,
    // with any object as input (no schema to check), at any depth of the input.
    let event = pre(
        &p,
        "mcp__github__create_issue",
        json!({"title": "deploy fails", "body": {"log": ["step 1", format!("key: {key}")]}}),
    );
    assert_eq!(
        run(&hook, &event),
        (
            0,
            decision(
                "deny",
                &format!(
                    "BLOCKED: the input of `mcp__github__create_issue` holds a private key. \
                     {instead}"
                )
            ),
            String::new()
        )
    );
    // A declared tool: the same rule, first in its chain (order 5).
    let event = pre(
        &p,
        "Bash",
        json!({"command": "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE"}),
    );
    assert_eq!(
        run(&hook, &event),
        (
            0,
            decision(
                "deny",
                &format!("BLOCKED: the input of `Bash` holds an AWS access key id. {instead}")
            ),
            String::new()
        )
    );
    // Near misses get no decision: a key id that runs on, a public key, a clean issue.
    for (tool, input) in [
        (
            "mcp__github__create_issue",
            json!({"title": "AKIAIOSFODNN7EXAMPLEXYZ"}),
        ),
        (
            "mcp__github__create_issue",
            json!({"body": "-----BEGIN PUBLIC KEY-----"}),
        ),
        ("mcp__github__create_issue", json!({"title": "x"})),
        (
            "WebFetch",
            json!({"url": "https://example.com", "prompt": "summarize"}),
        ),
    ] {
        let event = pre(&p, tool, input.clone());
        assert_eq!(
            run(&hook, &event),
            (0, String::new(), String::new()),
            "{input}"
        );
    }
    // The refusals are on the audit log, under the host tool's name.
    let head = r#"{"ts":"2025-12-01T14:40:00Z","session_id":"abc123","user_id":"dev","tool_use_id":"toolu_01ABC123","#;
    let rule = "claude_code_hook::example::rules::no_secrets_in_input";
    let blocked = |tool: &str, input: Value, kind: &str| {
        format!(
            r#"{head}"tool":"{tool}","input":{input},"outcome":"blocked","is_error":true,"content":"BLOCKED: the input of `{tool}` holds {kind}. {instead}","duration_us":0,"blocked_by":"{rule}","prev":"…"}}"#
        )
    };
    assert_eq!(
        p.audit_lines(),
        [
            blocked(
                "mcp__github__create_issue",
                json!({"title": "deploy fails", "body": {"log": ["step 1", format!("key: {key}")]}}),
                "a private key"
            ),
            blocked(
                "Bash",
                json!({"command": "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE"}),
                "an AWS access key id"
            ),
        ]
    );
}

/// A dispatcher with `Bash` and one rule `f` on every tool, its audit log in the project.
fn rule_on_every_tool<F>(p: &Project, f: F) -> Dispatcher
where
    F: Fn(&ToolUse) -> Result<Decision, HookError> + Send + Sync + 'static,
{
    with_rule(
        p,
        PreHookDef::sync("team::every", 10, move |_env, call: &ToolUse| f(call)),
    )
}

#[test]
fn on_an_undeclared_tool_a_rule_on_every_tool_fails_closed_rewrites_and_asks_as_on_a_declared_one()
{
    support::quiet_injected_panics();
    let p = Project::new("cc-every-tool-outcomes");
    let hook = p.hook(rule_on_every_tool(&p, |call| {
        match call.input["q"].as_str() {
            Some("panic") => panic!("{}: rule exploded", support::INJECTED),
            Some("error") => Err(HookError::new("the policy service is down")),
            Some("rewrite") => Ok(Decision::rewrite(json!({"q": "rewritten"}))),
            Some("ask") => Ok(Decision::ask("a person looks at every search today.")),
            _ => Ok(Decision::Allow),
        }
    }));
    for q in ["panic", "error"] {
        let event = pre(&p, "mcp__search__query", json!({"q": q}));
        assert_eq!(
            run(&hook, &event),
            (2, String::new(), format!("{HALT_TEXT}\n")),
            "{q}"
        );
    }
    let event = pre(&p, "mcp__search__query", json!({"q": "rewrite"}));
    assert_eq!(
        run(&hook, &event),
        (
            0,
            format!(
                "{}\n",
                json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "ask",
                    "permissionDecisionReason":
                        "toolgate rewrote this call's input (team::every); review the new input.",
                    "updatedInput": {"q": "rewritten"}}})
            ),
            String::new()
        )
    );
    let event = pre(&p, "mcp__search__query", json!({"q": "ask"}));
    assert_eq!(
        run(&hook, &event),
        (
            0,
            decision("ask", "a person looks at every search today."),
            String::new()
        )
    );
    let event = pre(&p, "mcp__search__query", json!({"q": "fine"}));
    assert_eq!(run(&hook, &event), (0, String::new(), String::new()));
    // An input that is not an object: refused before any rule, as for a declared tool.
    let event = pre(&p, "mcp__search__query", json!([1, 2]));
    let (code, out, err) = run(&hook, &event);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        decision(
            "deny",
            "Error: invalid input for tool `mcp__search__query`: the input must be a JSON object, \
             found a JSON array. Send an input that matches the tool's input_schema."
        )
    );
    // The two halts are on the audit log with their detail, under the tool's name.
    let head = r#"{"ts":"2025-12-01T14:40:00Z","session_id":"abc123","user_id":"dev","tool_use_id":"toolu_01ABC123","tool":"mcp__search__query","#;
    let lines = p.audit_lines();
    assert_eq!(
        lines[..2],
        [
            format!(
                r#"{head}"input":{{"q":"panic"}},"outcome":"hook_failed","is_error":true,"content":"{HALT_TEXT}","duration_us":0,"blocked_by":"team::every","detail":"the hook panicked: {}: rule exploded","prev":"…"}}"#,
                support::INJECTED
            ),
            format!(
                r#"{head}"input":{{"q":"error"}},"outcome":"hook_failed","is_error":true,"content":"{HALT_TEXT}","duration_us":0,"blocked_by":"team::every","detail":"the policy service is down","prev":"…"}}"#
            ),
        ]
    );
}

#[test]
fn a_rewrite_answered_at_pre_tool_use_is_on_its_post_tool_use_audit_line() {
    let p = Project::new("cc-rewrite-post");
    let hook = p.hook(one_rule(&p, |call: &ToolUse| {
        Ok(match call.input["command"].as_str() {
            Some("npm install") => Decision::rewrite(json!({"command": "npm ci"})),
            _ => Decision::Allow,
        })
    }));
    let cwd = p.root().display().to_string();
    let event = |name: &str, id: &str, command: &str, extra: Value| {
        let mut e = json!({"session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": cwd,
                           "permission_mode": "default", "hook_event_name": name,
                           "tool_name": "Bash", "tool_use_id": id,
                           "tool_input": {"command": command}});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        e.to_string()
    };
    let (code, out, _) = run(
        &hook,
        &event("PreToolUse", "toolu_7", "npm install", json!({})),
    );
    assert_eq!(code, 0);
    assert!(
        out.contains(r#""updatedInput":{"command":"npm ci"}"#),
        "{out}"
    );
    // Claude Code runs the rewritten input and says so in PostToolUse, twice here (a retried
    // event): the first line names the rewrite, the second finds nothing kept.
    let post = event(
        "PostToolUse",
        "toolu_7",
        "npm ci",
        json!({"tool_response": "added 12 packages"}),
    );
    assert_eq!(run(&hook, &post), (0, String::new(), String::new()));
    assert_eq!(run(&hook, &post), (0, String::new(), String::new()));
    let head = r#"{"ts":"2025-12-01T14:40:00Z","session_id":"abc123","user_id":"dev","tool_use_id":"toolu_7","tool":"Bash","#;
    assert_eq!(
        p.audit_lines(),
        [
            format!(
                r#"{head}"input":{{"command":"npm install"}},"outcome":"ok","is_error":false,"content":"added 12 packages","duration_us":0,"rewritten_by":["team::rule"],"effective_input":{{"command":"npm ci"}},"prev":"…"}}"#
            ),
            format!(
                r#"{head}"input":{{"command":"npm ci"}},"outcome":"ok","is_error":false,"content":"added 12 packages","duration_us":0,"prev":"…"}}"#
            ),
        ]
    );
    // Rewrites whose PostToolUse never comes (the person declined at Claude Code's prompt) do
    // not grow the state file for good: the newest 64 are kept.
    for i in 0..70 {
        let pre = event(
            "PreToolUse",
            &format!("toolu_r{i:02}"),
            "npm install",
            json!({}),
        );
        assert_eq!(run(&hook, &pre).0, 0);
    }
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(p.state().join("abc123.json")).unwrap())
            .unwrap();
    let kept: Vec<&String> = state["rewrites"].as_object().unwrap().keys().collect();
    let expected: Vec<String> = (6..70).map(|i| format!("toolu_r{i:02}")).collect();
    assert_eq!(kept, expected.iter().collect::<Vec<_>>());
    assert_eq!(
        state["rewrites"]["toolu_r69"],
        json!({"input": {"command": "npm install"}, "rewritten_by": ["team::rule"]})
    );
    assert_eq!(state["calls"], 2);
}
