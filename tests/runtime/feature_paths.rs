//! The feature tables (README.md's "Cargo features", the crate docs' in `src/lib.rs`, the
//! comments over `[features]` in Cargo.toml) name items by their full paths, and each path they
//! name compiles with its feature: every path is in [`NAMED`], compiled below under its
//! feature, and no table writes an item of this list by a shorter name.

/// Each path a table may name: `use`d (an item, a module, a function) or taken as a value (a
/// method, a variant), under its feature (`""`: none), and listed in [`NAMED`] as written.
macro_rules! paths {
    ($($feature:tt $how:ident $path:path;)*) => {
        /// (feature, path as the tables write it).
        const NAMED: &[(&str, &str)] = &[$(($feature, stringify!($path)),)*];

        #[test]
        fn every_path_the_feature_tables_name_compiles_with_its_feature() {
            $(paths!(@one $feature $how $path);)*
        }
    };
    (@one "" $how:ident $path:path) => { paths!(@how $how $path) };
    (@one $feature:tt $how:ident $path:path) => {
        #[cfg(feature = $feature)]
        { paths!(@how $how $path) }
    };
    (@how item $path:path) => {{
        #[allow(unused_imports)]
        use $path as _;
    }};
    (@how value $path:path) => {{
        let _ = $path;
    }};
}

paths! {
    "tokio" item toolgate::dispatch::TokioTimer;
    "tower" item toolgate::tower::HooksLayer;
    "tower" item toolgate::tower::SessionService;
    "claude-code" item toolgate::claude_code::ClaudeCodeHook;
    "audit-verify" item toolgate::audit::verify_audit_dir;
    "audit-verify" item toolgate::audit::verify_audit_file;
    "audit-report" item toolgate::audit::Trail;
    "audit-report" item toolgate::audit::TrailError;
    "audit-report" item toolgate::audit::parse_call_line;
    "audit-report" item toolgate::audit::read_call_lines;
    "audit-report" item toolgate::audit::report::Figures;
    "openai" item toolgate::provider::openai::tool_use;
    "openai" item toolgate::provider::openai::tool_uses;
    "openai" item toolgate::provider::openai::tool_message;
    "openai" item toolgate::provider::openai_responses::tool_use;
    "openai" item toolgate::provider::openai_responses::tool_uses;
    "openai" item toolgate::provider::openai_responses::function_call_output;
    "openai" value toolgate::Session::respond_openai_choice;
    "openai" value toolgate::Session::respond_openai_response;
    "" value toolgate::provider::Provider::OpenAi;
    "" value toolgate::provider::Provider::OpenAiResponses;
    "" value toolgate::provider::Provider::Gemini;
    "gemini" item toolgate::provider::gemini::tool_use;
    "gemini" item toolgate::provider::gemini::function_response;
    "gemini" value toolgate::Session::respond_gemini_candidate;
    "mcp" item toolgate::mcp::McpServer;
    "mcp" item toolgate::mcp::McpGuard;
    "mcp-http" value toolgate::mcp::McpServer::streamable_http_service;
    "mcp-http" value toolgate::mcp::McpCaller::http_request;
    "mcp-http" value toolgate::mcp::McpGuard::streamable_http;
    "seal" item toolgate::approval::SealKey;
    "seal" item toolgate::approval::SealKeys;
    "seal" value toolgate::dispatch::DispatcherBuilder::seal_keys;
    "inbox" item toolgate::approval::inbox::Inbox;
    "inbox" item toolgate::approval::inbox::InboxStore;
    "inbox" item toolgate::approval::inbox::Policy;
    "inbox-http" item toolgate::inbox_http::InboxPage;
    "inbox-http" item toolgate::inbox_http::Tokens;
    "inbox-http" item toolgate::inbox_http::ProxyAuth;
    "sqlite" item toolgate::store::sqlite::SqliteStore;
    "sqlite" value toolgate::Dispatcher::session_on::<toolgate::store::sqlite::SqliteStore>;
    "postgres" item toolgate::store::postgres::PostgresStore;
    "postgres" item toolgate::store::postgres::PostgresAuditSink;
}

/// A path as the tables write it: no spaces, no turbofish.
fn written(path: &str) -> String {
    let path: String = path.chars().filter(|c| !c.is_whitespace()).collect();
    match path.split_once("::<") {
        Some((head, _)) => head.to_owned(),
        None => path,
    }
}

/// The backticked spans of `text`.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A span's paths, braces expanded: `toolgate::a::{b, c}` is `toolgate::a::b`, `toolgate::a::c`.
fn expanded(span: &str) -> Vec<String> {
    match (span.find("::{"), span.strip_suffix('}')) {
        (Some(at), Some(inner)) => inner[at + 3..]
            .split(',')
            .map(|last| format!("{}::{}", &span[..at], last.trim()))
            .collect(),
        _ => vec![span.to_owned()],
    }
}

/// The rows of a feature table: each line between `| feature | what it adds |` and the first
/// line that is not a row, `prefix` (`//! `) removed.
fn table_rows<'t>(text: &'t str, prefix: &str) -> Vec<&'t str> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.strip_prefix(prefix).unwrap_or(line);
        if line.starts_with("| feature | what it adds |") {
            inside = true;
        } else if inside && line.starts_with('|') {
            rows.push(line);
        } else if inside {
            break;
        }
    }
    assert!(rows.len() > 10, "no feature table found");
    rows
}

/// The comment lines (`## `) over `[features]`' entries in Cargo.toml.
fn cargo_feature_comments(text: &str) -> Vec<&str> {
    let start = text.find("\n[features]\n").expect("a [features] table");
    let table = &text[start + 12..];
    let end = table.find("\n[").unwrap_or(table.len());
    table[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .collect()
}

/// What is wrong with the paths of `lines` (from `source`): a path that starts with `toolgate::`
/// and is not in [`NAMED`], a span with `::` that is not a full path, a span that is the last
/// name of a path of [`NAMED`] written alone.
fn problems(source: &str, lines: &[&str]) -> Vec<String> {
    let named: Vec<String> = NAMED.iter().map(|(_, p)| written(p)).collect();
    let last_names: Vec<&str> = named.iter().filter_map(|p| p.rsplit("::").next()).collect();
    let mut found = Vec::new();
    for line in lines {
        for span in spans(line).into_iter().filter(|s| !s.starts_with("#[")) {
            for path in expanded(span) {
                if path.starts_with("toolgate::") {
                    if !named.contains(&path) {
                        found.push(format!("{source}: `{path}` is compiled by no test"));
                    }
                } else if path.contains("::") && !path.contains(' ') {
                    found.push(format!(
                        "{source}: `{path}` is not a full path (toolgate::…)"
                    ));
                } else if last_names.contains(&path.as_str()) && path != "report" {
                    found.push(format!("{source}: `{path}` alone: write its full path"));
                }
            }
        }
    }
    found
}

fn read(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_feature_tables_name_only_full_paths_that_a_test_compiles() {
    let readme = read("README.md");
    let crate_docs = read("src/lib.rs");
    let cargo = read("Cargo.toml");
    let mut found = problems("README.md", &table_rows(&readme, ""));
    found.extend(problems("src/lib.rs", &table_rows(&crate_docs, "//! ")));
    found.extend(problems("Cargo.toml", &cargo_feature_comments(&cargo)));
    assert_eq!(found, Vec::<String>::new());
    // The check finds what it is for.
    let bad = [
        "| `audit-verify` | `verify_audit_dir`: the chain checked |",
        "| `gemini` | `provider::gemini::tool_use` |",
        "| `x` | `toolgate::verify_audit_dir`, `toolgate::audit::{verify_audit_file, nothing}` |",
    ];
    assert_eq!(
        problems("example", &bad),
        [
            "example: `verify_audit_dir` alone: write its full path",
            "example: `provider::gemini::tool_use` is not a full path (toolgate::…)",
            "example: `toolgate::verify_audit_dir` is compiled by no test",
            "example: `toolgate::audit::nothing` is compiled by no test",
        ]
    );
}

#[test]
fn each_table_names_the_same_paths_for_each_feature() {
    let paths_of = |lines: Vec<&str>| -> Vec<String> {
        let mut paths: Vec<String> = lines
            .iter()
            .flat_map(|l| spans(l))
            .flat_map(expanded)
            .filter(|p| p.starts_with("toolgate::"))
            .collect();
        paths.sort();
        paths.dedup();
        paths
    };
    let readme = paths_of(table_rows(&read("README.md"), ""));
    let crate_docs = paths_of(table_rows(&read("src/lib.rs"), "//! "));
    assert_eq!(readme, crate_docs);
    let cargo = read("Cargo.toml");
    let in_cargo = paths_of(cargo_feature_comments(&cargo));
    for path in &readme {
        assert!(
            in_cargo.contains(path),
            "Cargo.toml's comments do not name `{path}`"
        );
    }
}
