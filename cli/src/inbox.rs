//! `toolgate inbox SOURCE --listen ADDR --policy FILE`: the approval inbox's page on the store of
//! SOURCE (an SQLite file, or a PostgreSQL URL), served until stopped; `toolgate inbox
//! --new-token ID` prints a sign-in token and its entry for the tokens file.

use std::ffi::OsString;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use clap::ArgMatches;
use toolgate_core::approval::inbox::Identity;
use toolgate_inbox::{Auth, InboxPage, ProxyAuth, Source, Tokens};

use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, fail};

/// `toolgate inbox …`.
pub(crate) fn run(m: &ArgMatches, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if let Some(id) = m.get_one::<String>("new-token") {
        return new_token(m, id, out, err);
    }
    let source = m
        .get_one::<OsString>("source")
        .map(|s| Source::parse(&s.to_string_lossy()))
        .expect("clap requires SOURCE without --new-token");
    let listening = match setup(m, &source) {
        Ok(l) => l,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let _ = writeln!(
        err,
        "toolgate inbox: {} on http://{} (stop with Ctrl-C)",
        source.shown(),
        listening.addr()
    );
    let _ = err.flush();
    match toolgate_inbox::serve_blocking(listening) {
        Ok(()) => EXIT_OK,
        Err(e) => fail(err, format!("the server stopped: {e}"), EXIT_FAILED),
    }
}

/// The page, bound to `--listen`.
fn setup(m: &ArgMatches, source: &Source) -> Result<toolgate_inbox::Listening, String> {
    let addr: SocketAddr = m
        .get_one::<String>("listen")
        .map(String::as_str)
        .unwrap_or("127.0.0.1:8080")
        .parse()
        .map_err(|_| "--listen: expected an address and a port, as 127.0.0.1:8080".to_owned())?;
    let policy_path = m
        .get_one::<PathBuf>("policy")
        .expect("clap requires --policy");
    let policy = toolgate_inbox::read_policy(policy_path).map_err(|e| format!("--policy {e}"))?;
    let auth = auth(m)?;
    // Refused before the store is opened: no address other than loopback without a sign-in.
    if !auth.authenticates() && !addr.ip().is_loopback() {
        return Err(toolgate_inbox::PageError::NotLoopback(addr.to_string()).to_string());
    }
    let audit_dir = m.get_one::<PathBuf>("audit-dir").map(PathBuf::as_path);
    let inbox = source.inbox(policy, audit_dir).map_err(|e| e.to_string())?;
    let mut page = InboxPage::builder(Arc::new(inbox), auth);
    if let Some(url) = m.get_one::<String>("public-url") {
        page = page.public_url(url).map_err(|e| e.to_string())?;
    }
    toolgate_inbox::bind(page, addr).map_err(|e| e.to_string())
}

/// Who signs in: `--tokens`, `--trusted-proxy`, or the one local person.
fn auth(m: &ArgMatches) -> Result<Auth, String> {
    let proxies: Vec<&String> = m
        .get_many::<String>("trusted-proxy")
        .into_iter()
        .flatten()
        .collect();
    match (m.get_one::<PathBuf>("tokens"), proxies.is_empty()) {
        (Some(_), false) => Err("--tokens and --trusted-proxy: give one".to_owned()),
        (Some(path), true) => Tokens::read(path)
            .map(Auth::Tokens)
            .map_err(|e| format!("--tokens {e}")),
        (None, false) => {
            let peers = proxies
                .iter()
                .map(|p| {
                    p.parse::<IpAddr>()
                        .map_err(|_| format!("--trusted-proxy {p}: expected an IP address"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut proxy = ProxyAuth::new(peers);
            if let Some(h) = m.get_one::<String>("identity-header") {
                proxy.identity_header = h.to_ascii_lowercase();
            }
            if let Some(h) = m.get_one::<String>("groups-header") {
                proxy.groups_header = h.to_ascii_lowercase();
            }
            Ok(Auth::Proxy(proxy))
        }
        (None, true) => {
            let id = m
                .get_one::<String>("local-user")
                .cloned()
                .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
                .unwrap_or_else(|| "local".to_owned());
            let who = m
                .get_many::<String>("local-group")
                .into_iter()
                .flatten()
                .fold(Identity::new(id), |w, g| w.in_group(g));
            Ok(Auth::Local(who))
        }
    }
}

/// `--new-token ID [--group G]…`: the token (shown once) and its tokens-file entry.
fn new_token(m: &ArgMatches, id: &str, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if id.trim().is_empty() || id.chars().any(char::is_control) {
        return fail(
            err,
            "--new-token: the id must be printable, non-empty text",
            EXIT_BAD_INPUT,
        );
    }
    let (token, hash) = match toolgate_inbox::new_token() {
        Ok(t) => t,
        Err(e) => return fail(err, e, EXIT_FAILED),
    };
    let groups: Vec<String> = m
        .get_many::<String>("group")
        .into_iter()
        .flatten()
        .map(|g| serde_json::to_string(g).unwrap_or_default())
        .collect();
    let text = format!(
        "# {id}'s token (give it to them; it is not kept anywhere, and not shown again):\n\
         # {token}\n[[person]]\nid = {}\ngroups = [{}]\ntoken_sha256 = \"{hash}\"\n",
        serde_json::to_string(id).unwrap_or_default(),
        groups.join(", ")
    );
    match out.write_all(text.as_bytes()) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_FAILED,
    }
}
