//! A workspace binary the tests run as a child process, built by the cargo that runs the tests
//! into the test run's own target folder: [`toolgate_command`], and the runner the root
//! package's examples are built with too ([`build`]).
//!
//! cargo gives a test the path of its own package's binaries only (`CARGO_BIN_EXE_<name>`); an
//! example, or another package's binary, is built here. The build goes into the folder the
//! test run builds in (the parent of the test's `CARGO_TARGET_TMPDIR`; cargo does not hold the
//! folder's lock while the test binaries run) with the test's profile, so the crates it needs
//! are the ones the run already built whenever the build resolves the same features: a build
//! of one package alone resolves the features of the crates it shares with the others
//! (tokio, toolgate-core, hyper, …) differently from a run of the whole workspace, and compiles
//! them, and what stands on them, a second time. So a test built with every feature of its
//! package on, as the README's test command builds it (`cargo test --workspace --all-targets
//! --all-features`), builds with [`WORKSPACE_RUN`], which resolves as that command does (the
//! whole workspace, every feature, the dev-dependencies: a target that needs them is
//! selected); nothing is then compiled again but the binary itself, when it is not built yet. A
//! test built otherwise builds the one package, which is what a run of one package resolves.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

/// The selection that resolves the crates as the README's test command does: every workspace
/// package, every feature (followed by the targets to build, one of them an example or a test,
/// so the dev-dependencies count as they count in a test run).
pub const WORKSPACE_RUN: [&str; 2] = ["--workspace", "--all-features"];

/// Runs `cargo ARGS --message-format=json-render-diagnostics` on the workspace (release when
/// the calling test is not a debug build), into the test run's target folder (the parent of
/// `target_tmpdir`, the calling test's `CARGO_TARGET_TMPDIR`), and returns the JSON messages
/// cargo printed. A wait for cargo's lock is shown at once on standard error.
///
/// # Panics
/// When cargo cannot be started or the build fails (with cargo's output).
pub fn build(args: &[&str], target_tmpdir: &Path) -> Vec<Value> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = target_tmpdir
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target folder");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command
        .args(args)
        .arg("--message-format=json-render-diagnostics")
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
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
            || key.starts_with("CARGO_BIN_EXE_")
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
    let stderr = child.stderr.take().expect("piped");
    let shown = args.join(" ");
    let log = std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        let mut log = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            if line.trim_start().starts_with("Blocking") {
                let _ = writeln!(std::io::stderr(), "cargo {shown}: {line}");
            }
            log.push_str(&line);
            log.push('\n');
        }
        log
    });
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("piped"), &mut stdout)
        .expect("cargo's output reads");
    let status = child.wait().expect("cargo ends");
    let log = log.join().expect("the log thread ends");
    assert!(status.success(), "cargo {} failed:\n{log}", args.join(" "));
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .collect()
}

/// The executable cargo reported for target `name` of kind `kind` (`"bin"`, `"example"`) among
/// `messages`, when there is one.
pub fn executable(messages: &[Value], name: &str, kind: &str) -> Option<PathBuf> {
    messages
        .iter()
        .find(|m| {
            m["reason"] == "compiler-artifact"
                && m["target"]["name"] == name
                && m["target"]["kind"] == serde_json::json!([kind])
                && m["profile"]["test"] == false
        })
        .and_then(|m| m["executable"].as_str().map(PathBuf::from))
}

/// The `toolgate` command's binary (`cli/`, `toolgate audit verify|report|tail|stats`), built
/// once per test binary (`target_tmpdir` is the calling test's `CARGO_TARGET_TMPDIR`).
///
/// `workspace_run`: the calling test was built with every feature of its package, as the
/// README's test command builds it. Then the binary is the one cargo builds for the command's
/// own integration tests in that run (`cargo test --workspace --all-features --no-run --test
/// commands`: nothing compiled again); else the command's package alone (`cargo build -p
/// toolgate-cli --bin toolgate`).
///
/// # Panics
/// When the build fails, or cargo reports no `toolgate` executable.
pub fn toolgate_command(target_tmpdir: &Path, workspace_run: bool) -> PathBuf {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(path) = &*built {
        return path.clone();
    }
    let args: Vec<&str> = if workspace_run {
        [
            "test",
            WORKSPACE_RUN[0],
            WORKSPACE_RUN[1],
            "--no-run",
            "--test",
            "commands",
        ]
        .to_vec()
    } else {
        ["build", "-p", "toolgate-cli", "--bin", "toolgate"].to_vec()
    };
    let messages = build(&args, target_tmpdir);
    let path = executable(&messages, "toolgate", "bin")
        .expect("cargo reports the toolgate command's executable");
    *built = Some(path.clone());
    path
}
