//! The support agent's refunds specialist served over MCP (`support_agent::mcp_server` has the
//! options, the server and the HTTP transport):
//!
//! ```text
//! cargo run -p toolgate-support-agent --bin mcp_server --features mcp -- --user u_001 --tier premium [--audit DIR]
//! cargo run -p toolgate-support-agent --bin mcp_server --features mcp-http -- --http 127.0.0.1:8765 [--audit DIR]
//! ```
//!
//! Exit codes: 0 when the client closed the connection (over `--http`: at Ctrl-C or SIGTERM,
//! once the live MCP sessions ended), 2 for a bad command line (the usage on standard error), 1
//! when the server could not start (over `--http`: `cannot listen on ADDR: …`, a port in use).

use std::process::ExitCode;

use support_agent::mcp_server::{Options, USAGE, parse, server};
use toolgate::mcp::McpServer;
use toolgate::mcp::rmcp::ServiceExt;

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("mcp_server: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Some(addr) = options.http {
        return serve_http(&options, addr);
    }
    serve(server(&options), |server| async move {
        let running = server
            .serve(toolgate::mcp::rmcp::transport::stdio())
            .await
            .map_err(|e| e.to_string())?;
        running.waiting().await.map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// Runs `serve` with the built `server` on a current-thread tokio runtime until it ends: exit 0,
/// or 1 with `mcp_server: <error>` on standard error when the server could not be built, the
/// runtime could not start (`no tokio runtime: …`) or serving failed.
fn serve<F>(server: Result<McpServer, String>, serve: impl FnOnce(McpServer) -> F) -> ExitCode
where
    F: std::future::Future<Output = Result<(), String>>,
{
    let served = server.and_then(|server| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("no tokio runtime: {e}"))?;
        runtime.block_on(serve(server))
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_server: {e}");
            ExitCode::from(1)
        }
    }
}

/// `--http` without the `mcp-http` feature.
#[cfg(not(feature = "mcp-http"))]
fn serve_http(_options: &Options, _addr: std::net::SocketAddr) -> ExitCode {
    eprintln!(
        "mcp_server: --http needs the mcp-http feature (cargo run -p \
         toolgate-support-agent --bin mcp_server --features mcp-http -- --http 127.0.0.1:8765)"
    );
    ExitCode::from(2)
}

/// Serves streamable HTTP on `addr` until Ctrl-C (SIGINT) or SIGTERM, then ends the live MCP
/// sessions (their Stop hooks run, their summary lines are written) and exits 0.
#[cfg(feature = "mcp-http")]
fn serve_http(options: &Options, addr: std::net::SocketAddr) -> ExitCode {
    use support_agent::mcp_server::http;
    serve(http::server(options), |server| async move {
        let (listener, url) = http::bind(addr).await?;
        eprintln!("mcp_server: serving MCP at {url}");
        http::run(listener, server, http::stopped()).await
    })
}
