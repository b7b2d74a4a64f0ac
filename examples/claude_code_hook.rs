//! toolgate's rules in Claude Code: a command hook (PreToolUse, PostToolUse, SessionEnd) that a
//! team puts in `.claude/settings.json` (the snippet is in `docs/claude-code.md`). It reads one
//! hook event on standard input and answers as Claude Code's hooks reference says (see
//! `toolgate::claude_code`).
//!
//! The rules, on Claude Code's own tools (declared with `#[tool(external)]`: no Rust function
//! runs, the signature is the input's schema, kept open to fields Claude Code may add; `Bash`,
//! `Write` and `Edit` are `effect = "write"`, so the dispatcher does not build without a rule
//! on each):
//!
//! | order | rule | tools |
//! |---|---|---|
//! | 5 | no secrets in a tool's input: a private key block (`-----BEGIN … PRIVATE KEY-----`) or an AWS access key id (`AKIA` and 16 capitals or digits) | every tool, also those the dispatcher does not declare (`mcp__github__create_issue`, …) |
//! | 10 | no `rm -rf` (any flags that are recursive and forced) of a path outside the project, of the project itself, or of a path the hook cannot know (`~`, `$VAR`, a command substitution) | `Bash` |
//! | 20 | no writes to `.env` files (`.env`, `.env.local`, …; `.env.example` is fine) | `Write`, `Edit` |
//! | 30 | no writes outside the session's working folder (`cwd`) | `Write`, `Edit` |
//! | 40 | `git push --force` (`-f`, `--force-with-lease`) asks: the person decides at Claude Code's permission prompt | `Bash` |
//!
//! The audit log goes to `$CLAUDE_PROJECT_DIR/.toolgate/audit/` and the per-session state to
//! `$CLAUDE_PROJECT_DIR/.toolgate/sessions/`.

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use toolgate::claude_code::{ClaudeCodeEvent, ClaudeCodeHook};
use toolgate::{BuildError, Dispatcher, audit::AuditLog};

/// The module path the rules and tools are registered under.
pub(crate) const HOOK_PATH: &str = module_path!();

/// Claude Code's tools, as its documentation gives their inputs.
pub(crate) mod claude_tools {
    use toolgate::tool;

    /// Executes a bash command (Claude Code's `Bash` tool).
    #[tool(external, name = "Bash", effect = "write")]
    pub(crate) fn bash(
        /// The command to execute.
        command: String,
        /// What the command does, in a few words.
        description: Option<String>,
        /// A timeout in milliseconds (at most 600000).
        timeout: Option<u64>,
        /// Whether to run the command in the background.
        run_in_background: Option<bool>,
    ) {
    }

    /// Writes a file (Claude Code's `Write` tool).
    #[tool(external, name = "Write", effect = "write")]
    pub(crate) fn write(
        /// The absolute path of the file.
        file_path: String,
        /// The file's new content.
        content: String,
    ) {
    }

    /// Replaces a string in a file (Claude Code's `Edit` tool).
    #[tool(external, name = "Edit", effect = "write")]
    pub(crate) fn edit(
        /// The absolute path of the file.
        file_path: String,
        /// The text to replace.
        old_string: String,
        /// The text to put instead.
        new_string: String,
        /// Whether to replace every occurrence.
        replace_all: Option<bool>,
    ) {
    }

    /// Reads a file (Claude Code's `Read` tool).
    #[tool(external, name = "Read", effect = "read")]
    pub(crate) fn read(
        /// The absolute path of the file.
        file_path: String,
        /// The line to start at.
        offset: Option<u64>,
        /// How many lines to read.
        limit: Option<u64>,
    ) {
    }
}

/// The team's rules.
pub(crate) mod rules {
    use std::path::Path;

    use super::claude_tools::*;
    use super::{inside, session};
    use toolgate::{Decision, HookContext, ToolUse, pre_hook};

    /// No secrets in any tool's input (a file written, a command, an issue filed on GitHub
    /// through an MCP server): a rule without `tools` matches every tool, so it runs on
    /// Claude Code's tools that this dispatcher does not declare too.
    #[pre_hook(order = 5)]
    pub(crate) fn no_secrets_in_input(call: &ToolUse) -> Decision {
        match super::secret_in(&call.input) {
            Some(kind) => Decision::deny_instead(
                format!("the input of `{}` holds {kind}.", call.name),
                "Leave the secret out and tell the user where it is needed.",
            ),
            None => Decision::Allow,
        }
    }

    /// No `rm -rf` of anything but paths inside the project.
    #[pre_hook(order = 10, tools = [bash])]
    pub(crate) fn no_rm_rf_outside_project(ctx: &HookContext, call: &ToolUse) -> Decision {
        let host = session(ctx);
        let command = call.input["command"].as_str().unwrap_or_default();
        for target in super::forced_recursive_rm_targets(command) {
            let known = !(target.starts_with('~') || target.contains('$') || target.contains('`'));
            let path = super::resolve(&host.cwd, &target);
            if !known || !inside(&path, &host.project_dir) {
                return Decision::deny_instead(
                    format!(
                        "`rm -rf {target}` would delete outside the project ({}).",
                        host.project_dir.display()
                    ),
                    "Delete only paths inside the project, named plainly, or ask the user to \
                     run the command.",
                );
            }
        }
        Decision::Allow
    }

    /// No writes to `.env` files: they hold the team's secrets.
    #[pre_hook(order = 20, tools = [write, edit])]
    pub(crate) fn no_env_files(call: &ToolUse) -> Decision {
        let file_path = call.input["file_path"].as_str().unwrap_or_default();
        let name = Path::new(file_path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if (name == ".env" || name.starts_with(".env.")) && name != ".env.example" {
            return Decision::deny_instead(
                format!("`{name}` holds secrets and is not edited by the agent."),
                "Tell the user which variable to set, and let them edit the file.",
            );
        }
        Decision::Allow
    }

    /// No writes outside the session's working folder.
    #[pre_hook(order = 30, tools = [write, edit])]
    pub(crate) fn writes_inside_cwd(ctx: &HookContext, call: &ToolUse) -> Decision {
        let host = session(ctx);
        let file_path = call.input["file_path"].as_str().unwrap_or_default();
        if inside(&super::resolve(&host.cwd, file_path), &host.cwd) {
            Decision::Allow
        } else {
            Decision::deny(format!(
                "{file_path} is outside the working folder ({}).",
                host.cwd.display()
            ))
        }
    }

    /// A force push rewrites the team's history: a person decides.
    #[pre_hook(order = 40, tools = [bash])]
    pub(crate) fn force_push_asks(call: &ToolUse) -> Decision {
        let command = call.input["command"].as_str().unwrap_or_default();
        let words: Vec<&str> = command.split_whitespace().collect();
        let pushes = words.windows(2).any(|w| w == ["git", "push"]);
        let forced = words.iter().any(|w| *w == "-f" || w.starts_with("--force"));
        if pushes && forced {
            Decision::ask(
                "a force push rewrites the shared history: approve it only if you mean to.",
            )
        } else {
            Decision::Allow
        }
    }
}

/// The kind of secret found in any string of `input` (keys and values, at any depth), if one is.
pub(crate) fn secret_in(input: &serde_json::Value) -> Option<&'static str> {
    use serde_json::Value;
    fn in_text(text: &str) -> Option<&'static str> {
        let private_key = text.find("-----BEGIN ").is_some_and(|at| {
            text[at..]
                .lines()
                .next()
                .is_some_and(|l| l.contains("PRIVATE KEY-----"))
        });
        if private_key {
            return Some("a private key");
        }
        let bytes = text.as_bytes();
        let aws = text.match_indices("AKIA").any(|(at, _)| {
            let rest = &bytes[at + 4..];
            rest.len() >= 16
                && rest[..16]
                    .iter()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
                && rest.get(16).is_none_or(|b| !b.is_ascii_alphanumeric())
        });
        aws.then_some("an AWS access key id")
    }
    match input {
        Value::String(s) => in_text(s),
        Value::Array(items) => items.iter().find_map(secret_in),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| in_text(k).or_else(|| secret_in(v))),
        _ => None,
    }
}

/// What Claude Code said about the session (always there: the hook puts it in the context).
fn session(ctx: &toolgate::HookContext) -> ClaudeCodeEvent {
    ctx.extensions()
        .get::<ClaudeCodeEvent>()
        .cloned()
        .unwrap_or_else(|| panic!("the Claude Code hook puts a ClaudeCodeEvent in every context"))
}

/// The targets of every `rm` in `command` whose flags are both recursive and forced (`-rf`,
/// `-fr`, `-r -f`, `--recursive --force`, `-Rf`). Commands are split at `;`, `&&`, `||`, `|`
/// and new lines; quotes are not parsed (a quoted target keeps its quotes, and is then a path
/// the rule resolves like any other).
pub(crate) fn forced_recursive_rm_targets(command: &str) -> Vec<String> {
    let spaced = command
        .replace("&&", " ; ")
        .replace("||", " ; ")
        .replace(['|', '\n'], " ; ")
        .replace(';', " ; ");
    let mut found = Vec::new();
    let mut words = spaced.split_whitespace().peekable();
    while let Some(word) = words.next() {
        if word != "rm" && !word.ends_with("/rm") {
            continue;
        }
        let (mut recursive, mut force, mut targets) = (false, false, Vec::new());
        while let Some(&next) = words.peek() {
            if next == ";" {
                break;
            }
            words.next();
            match next {
                "--recursive" => recursive = true,
                "--force" => force = true,
                flag if flag.starts_with('-') && !flag.starts_with("--") => {
                    recursive |= flag.contains('r') || flag.contains('R');
                    force |= flag.contains('f');
                }
                flag if flag.starts_with("--") => {}
                target => targets.push(target.to_owned()),
            }
        }
        if recursive && force {
            found.extend(targets);
        }
    }
    found
}

/// `path` made absolute against `cwd`, with `.` and `..` resolved on the text (no file system
/// access: the path may not exist yet).
pub(crate) fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in cwd.join(path).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether `path` is strictly inside `folder` (the folder itself is not).
pub(crate) fn inside(path: &Path, folder: &Path) -> bool {
    path != folder && path.starts_with(folder)
}

/// The hook's dispatcher: Claude Code's tools and the team's rules, with the audit log in
/// `audit_dir`.
pub(crate) fn dispatcher(audit_dir: &Path) -> Result<Dispatcher, Box<dyn std::error::Error>> {
    let log = AuditLog::open(audit_dir)?;
    let dispatcher: Result<Dispatcher, BuildError> = Dispatcher::builder()
        .registered_under(HOOK_PATH)
        .audit_log(log)
        .build();
    Ok(dispatcher?)
}

fn main() -> ExitCode {
    let project = std::env::var_os("CLAUDE_PROJECT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    match dispatcher(&project.join(".toolgate").join("audit")) {
        Ok(dispatcher) => ClaudeCodeHook::new(dispatcher).main(),
        Err(e) => {
            // Exit 2: any other failure would let the tool run unchecked.
            eprintln!("BLOCKED: toolgate's rules could not be loaded: {e}");
            ExitCode::from(2)
        }
    }
}
