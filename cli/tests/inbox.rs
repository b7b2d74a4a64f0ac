//! `toolgate inbox`: a sign-in token and its entry, the refusals before anything is served, and
//! the page served by the command itself (a real process on 127.0.0.1).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use sha2::Digest;
use support::{Scratch, command, toolgate};

const POLICY: &str = "# Leads decide refunds.\n[[rules]]\nwho = [\"group:leads\"]\nmay = [\"approve\", \"decline\"]\ntools = [\"issue_refund\"]\n";

#[test]
fn a_new_token_is_printed_once_with_its_entry_for_the_tokens_file() {
    let (code, out, err) = toolgate(&[
        "inbox",
        "--new-token",
        "lead@example.com",
        "--group",
        "leads",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "# lead@example.com's token (give it to them; it is not kept anywhere, and not shown again):"
    );
    let token = lines[1].strip_prefix("# ").unwrap();
    assert!(token.starts_with("tgi_") && token.len() == 68, "{token}");
    let hash: String = sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        lines[2..],
        [
            "[[person]]",
            "id = \"lead@example.com\"",
            "groups = [\"leads\"]",
            &format!("token_sha256 = \"{hash}\""),
        ]
    );
    let tokens = toolgate_inbox::Tokens::parse(&out).unwrap();
    assert_eq!(tokens.people[0].id, "lead@example.com");
    let (_, again, _) = toolgate(&["inbox", "--new-token", "lead@example.com"]);
    assert_ne!(
        again.lines().nth(1),
        Some(lines[1]),
        "a new token each time"
    );
}

#[test]
fn without_a_sign_in_it_refuses_any_address_but_loopback_and_names_a_bad_file() {
    let s = Scratch::new("inbox-refusals");
    let policy = s.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let p = policy.to_str().unwrap();
    let (code, out, err) = toolgate(&[
        "inbox",
        "state.sqlite",
        "--listen",
        "0.0.0.0:8080",
        "--policy",
        p,
    ]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            2,
            "",
            "toolgate: error: without authentication the inbox listens on a loopback address \
             only (127.0.0.1 or ::1), not 0.0.0.0:8080: give --tokens FILE or --trusted-proxy ADDR\n"
        )
    );
    std::fs::write(
        &policy,
        "[[rules]]\nwho = [\"*\"]\nmay = [\"aprove\"]\ntools = [\"*\"]\n",
    )
    .unwrap();
    let (code, _, err) = toolgate(&["inbox", "state.sqlite", "--policy", p]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(&format!("toolgate: error: --policy {p}: TOML parse error")),
        "{err}"
    );
    assert!(err.contains("unknown variant `aprove`"), "{err}");
    std::fs::write(&policy, POLICY).unwrap();
    let missing = s.path().join("none.sqlite");
    let (code, _, err) = toolgate(&["inbox", missing.to_str().unwrap(), "--policy", p]);
    assert_eq!(
        (code, err),
        (
            2,
            format!(
                "toolgate: error: {}: no such SQLite file (the agent makes it: its --out-dir's \
                 state.sqlite)\n",
                missing.display()
            )
        )
    );
}

#[test]
fn the_command_serves_the_page_and_signs_a_person_in() {
    let s = Scratch::new("inbox-serve");
    let db = s.path().join("state.sqlite");
    drop(toolgate_core::store::sqlite::SqliteStore::open(&db).unwrap());
    let (_, entry, _) = toolgate(&["inbox", "--new-token", "ann", "--group", "leads"]);
    let token = entry
        .lines()
        .nth(1)
        .unwrap()
        .strip_prefix("# ")
        .unwrap()
        .to_owned();
    std::fs::write(s.path().join("tokens.toml"), &entry).unwrap();
    std::fs::write(s.path().join("policy.toml"), POLICY).unwrap();
    let mut child = command(&[
        "inbox",
        db.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s.path().join("tokens.toml").to_str().unwrap(),
        "--policy",
        s.path().join("policy.toml").to_str().unwrap(),
    ])
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut first = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim_end()
        .strip_prefix(&format!("toolgate inbox: {} on http://", db.display()))
        .and_then(|rest| rest.strip_suffix(" (stop with Ctrl-C)"))
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    let get = |path: &str, cookie: &str| -> String {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{cookie}\r\n"
        )
        .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    };
    let sign_in = get("/sign-in", "");
    assert!(sign_in.starts_with("HTTP/1.1 200 OK\r\n"), "{sign_in}");
    let value = sign_in
        .split("toolgate_inbox_sign_in=")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let body = format!("sign_in={value}&token={token}");
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /sign-in HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\nCookie: toolgate_inbox_sign_in={value}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut signed = String::new();
    stream.read_to_string(&mut signed).unwrap();
    assert!(signed.starts_with("HTTP/1.1 303 See Other\r\n"), "{signed}");
    let session = signed
        .split("toolgate_inbox=")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let list = get("/", &format!("Cookie: toolgate_inbox={session}\r\n"));
    assert!(list.contains("Signed in as <strong>ann</strong>"), "{list}");
    assert!(list.contains("No call waits for a person."), "{list}");
    assert!(!list.contains(&token));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_database_that_cannot_be_reached_is_named_without_its_password() {
    let s = Scratch::new("inbox-db");
    let policy = s.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://agent:s3cret-pw@127.0.0.1:{port}/agent?connect_timeout=2");
    let (code, out, err) = toolgate(&["inbox", &url, "--policy", policy.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.starts_with(&format!(
            "toolgate: error: postgres://agent:***@127.0.0.1:{port}/agent"
        )),
        "{err}"
    );
    assert!(!err.contains("s3cret-pw"), "{err}");
}
