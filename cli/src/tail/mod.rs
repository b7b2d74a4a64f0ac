//! `toolgate audit tail DIR`: one readable line per call, the last N first, then (with
//! `--follow`) every line appended.

mod follow;
mod line;

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use clap::ArgMatches;
use serde_json::Value;
use toolgate_core::audit::{AUDIT_LOG_FILE, chain_files, parse_call_line, printable_json};

use crate::database;
use crate::tail::follow::{Follower, torn};
use crate::tail::line::{TailFilter, tail_line};
use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, fail, source};

/// How often `--follow` looks for new lines.
const POLL: Duration = Duration::from_millis(200);

/// The `--outcome`, `--user`, `--tool` and `--session` filters.
pub(crate) fn filter(m: &ArgMatches) -> TailFilter {
    let get = |name: &str| m.get_one::<String>(name).cloned();
    TailFilter {
        outcome: get("outcome"),
        user: get("user"),
        tool: get("tool"),
        session: get("session"),
    }
}

/// How one line is shown.
struct Show {
    filter: TailFilter,
    json: bool,
    colour: bool,
}

impl Show {
    /// The text to print for `line` (no `\n`), when it passes the filter: the readable line,
    /// or with `--json` the line's JSON through `printable_json` (the same value, with no
    /// control character, line separator or bidirectional formatting character raw, as a line
    /// written before the audit line escaped U+2028 and U+2029 may hold them).
    ///
    /// # Errors
    /// Why the line is not an audit line.
    fn line(&self, line: &[u8]) -> Result<Option<String>, String> {
        let as_json = || printable_json(&String::from_utf8_lossy(line)).into_owned();
        match parse_call_line(line)? {
            Some(record) if !self.filter.matches(&record) => Ok(None),
            Some(record) if !self.json => Ok(Some(tail_line(&record, self.colour))),
            Some(_) => Ok(Some(as_json())),
            // An outcome this toolgate does not know: the line as written (through
            // `printable_json`), filtered by its members.
            None => {
                let value: Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
                let member = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or_default();
                let is =
                    |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
                let f = &self.filter;
                let keep = is(&f.outcome, member("outcome"))
                    && is(&f.user, member("user_id"))
                    && is(&f.tool, member("tool"))
                    && is(&f.session, member("session_id"));
                Ok(keep.then(as_json))
            }
        }
    }
}

fn colour(m: &ArgMatches) -> bool {
    match m.get_one::<String>("color").map(String::as_str) {
        Some("always") => true,
        Some("never") => false,
        // https://no-color.org: any non-empty NO_COLOR turns colour off.
        _ => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

pub(crate) fn run(m: &ArgMatches, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let follow = m.get_flag("follow");
    if follow && let source::Source::Database(url) = source::source(m) {
        return fail(
            err,
            format!(
                "{}: --follow reads a folder's live file; a database is shown as it is now \
                 (without --follow)",
                database::shown(&url)
            ),
            EXIT_BAD_INPUT,
        );
    }
    let input = match source::input(m) {
        Ok(i) => i,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let dir = input.dir.clone();
    let show = Show {
        filter: filter(m),
        json: m.get_flag("json"),
        colour: colour(m),
    };
    let keep = m.get_one::<usize>("lines").copied().unwrap_or(10);
    let mut last: VecDeque<String> = VecDeque::new();
    let live = dir.join(AUDIT_LOG_FILE);
    let mut follower = None;
    let files = match chain_files(&dir, AUDIT_LOG_FILE) {
        Ok(files) => files,
        Err(e) => {
            return fail(
                err,
                format!("cannot read `{}`: {e}", dir.display()),
                EXIT_BAD_INPUT,
            );
        }
    };
    for path in files {
        let is_live = path == live;
        let result = if is_live && follow {
            // The live file is read by the follower, which keeps its place for what comes.
            let mut f = Follower::new(&path);
            let r = f.poll(|line, n| push(&show, &mut last, keep, line, &path, n));
            follower = Some(f);
            r
        } else {
            read_whole(&path, |line, n| {
                push(&show, &mut last, keep, line, &path, n)
            })
        };
        if let Err(e) = result {
            return fail(err, e, EXIT_BAD_INPUT);
        }
    }
    for line in &last {
        if writeln!(out, "{line}").is_err() {
            return EXIT_FAILED;
        }
    }
    if !follow {
        return EXIT_OK;
    }
    let _ = out.flush();
    let follower = follower.unwrap_or_else(|| Follower::new(&live));
    follow_live(follower, &show, &live, out, err)
}

/// `--follow`: prints the lines appended to the live file from now on, until the file cannot be
/// read (exit 2) or the reader goes away (`| head`: exit 0).
fn follow_live(
    mut follower: Follower,
    show: &Show,
    live: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    loop {
        std::thread::sleep(POLL);
        let mut printed = Ok(());
        let polled = follower.poll(|line, n| {
            if let Some(text) = show.line(line).map_err(|e| at(live, n, &e))?
                && printed.is_ok()
            {
                printed = writeln!(out, "{text}");
            }
            Ok(())
        });
        if let Err(e) = polled {
            return fail(err, e, EXIT_BAD_INPUT);
        }
        if printed.is_err() || out.flush().is_err() {
            // The reader went away (`| head`): done.
            return EXIT_OK;
        }
    }
}

fn at(path: &Path, n: u64, problem: &str) -> String {
    format!("`{}` line {n}: {problem}", path.display())
}

/// Keeps `line`'s text among the last `keep`.
fn push(
    show: &Show,
    last: &mut VecDeque<String>,
    keep: usize,
    line: &[u8],
    path: &Path,
    n: u64,
) -> Result<(), String> {
    if let Some(text) = show.line(line).map_err(|e| at(path, n, &e))? {
        last.push_back(text);
        if last.len() > keep {
            last.pop_front();
        }
    }
    Ok(())
}

/// Every non-blank line of a file that is no longer written (a rotated one, or the live one
/// without `--follow`): a last line without `\n` is a torn write.
fn read_whole(
    path: &Path,
    mut each: impl FnMut(&[u8], u64) -> Result<(), String>,
) -> Result<(), String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut n = 0;
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        n += 1;
        let Some(end) = rest.iter().position(|b| *b == b'\n') else {
            return Err(torn(path, n));
        };
        let line = &rest[..end];
        if !line.iter().all(u8::is_ascii_whitespace) {
            each(line, n)?;
        }
        rest = &rest[end + 1..];
    }
    Ok(())
}
