//! The support agent's tools and rules served over MCP (stdio), as one signed-in customer.
//!
//! ```text
//! cargo run --example mcp_server --features mcp -- --user u_001 --tier premium [--audit DIR]
//! ```
//!
//! An MCP host starts this program and speaks JSON-RPC on its standard input and output (the
//! README shows a `mcpServers` entry). Every `tools/call` runs through the refunds specialist's
//! dispatcher (`examples/support_agent/`: the same `#[tool]` functions and `#[pre_hook]` rules,
//! compiled here as a module), with the identity given on the command line as the trusted
//! context: the client's arguments never choose the user. The audit log goes to `--audit DIR`
//! (default `mcp_audit`), one line per call and a summary line when the connection closes.
//! Results carry their outcome in `_meta` (`toolgate/outcome`, `toolgate/blocked_by`), so a
//! toolgate guard in front of this server records the inner outcome.
//!
//! Exit codes: 0 when the client closed the connection, 2 for a bad command line (the usage on
//! standard error), 1 when the server could not start.

use std::path::PathBuf;
use std::process::ExitCode;

use toolgate::mcp::McpServer;
use toolgate::mcp::rmcp::ServiceExt;
use toolgate::{AuditLog, HookContext};

#[allow(dead_code, unused_imports)]
#[path = "support_agent/main.rs"]
pub(crate) mod support_agent;

use support_agent::agent::{Agent, Specialist};

/// The usage line printed for a bad command line.
pub(crate) const USAGE: &str =
    "usage: mcp_server --user USER_ID [--tier TIER] [--session SESSION_ID] [--audit DIR]";

/// The command line.
#[derive(Debug, PartialEq)]
pub(crate) struct Options {
    /// The signed-in customer (`--user`).
    pub(crate) user: String,
    /// Their tier (`--tier`), when the host knows it.
    pub(crate) tier: Option<String>,
    /// The MCP session id (`--session`): the session id of the audit lines, and the stem of the
    /// `tool_use` ids (`<session>/1`, `<session>/2`, …); default: the one the server makes.
    pub(crate) session: Option<String>,
    /// The audit folder (`--audit`).
    pub(crate) audit: PathBuf,
}

/// Reads the command line (without the program name).
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut args = args.into_iter();
    let (mut user, mut tier, mut session, mut audit) = (None, None, None, None);
    while let Some(flag) = args.next() {
        let slot = match flag.as_str() {
            "--user" => &mut user,
            "--tier" => &mut tier,
            "--session" => &mut session,
            "--audit" => &mut audit,
            other => return Err(format!("unknown option {other:?}")),
        };
        match args.next() {
            Some(value) if !value.is_empty() => *slot = Some(value),
            _ => return Err(format!("{flag} needs a value")),
        }
    }
    Ok(Options {
        user: user.ok_or("--user is required")?,
        tier,
        session,
        audit: audit.map_or_else(|| PathBuf::from("mcp_audit"), PathBuf::from),
    })
}

/// The server of `options`: the refunds specialist with its audit log, every call as
/// `options.user` (and `options.tier`), outcomes in `_meta`.
pub(crate) fn server(options: &Options) -> Result<McpServer, String> {
    let audit = AuditLog::open(&options.audit)
        .map_err(|e| format!("cannot open the audit folder {:?}: {e}", options.audit))?;
    let agent = Agent::build(Specialist::Refunds, Some(&audit)).map_err(|e| e.to_string())?;
    let (user, tier) = (options.user.clone(), options.tier.clone());
    let server = McpServer::new(agent.dispatcher, move |caller| {
        let context = HookContext::builder(user.as_str(), caller.mcp_session_id);
        Some(match &tier {
            Some(tier) => context.tier(tier.as_str()).build(),
            None => context.build(),
        })
    })
    .map_err(|e| e.to_string())?
    .outcomes_in_meta(true);
    Ok(match &options.session {
        Some(session) => server.mcp_session_id(session.as_str()),
        None => server,
    })
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("mcp_server: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let server = match server(&options) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("mcp_server: {e}");
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp_server: no tokio runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let served = runtime.block_on(async {
        let running = server
            .serve(toolgate::mcp::rmcp::transport::stdio())
            .await
            .map_err(|e| e.to_string())?;
        running.waiting().await.map_err(|e| e.to_string())
    });
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_server: {e}");
            ExitCode::from(1)
        }
    }
}
