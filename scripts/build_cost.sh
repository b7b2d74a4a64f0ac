#!/usr/bin/env bash
# Build-cost figures of BENCHMARKS.md, rounds interleaved, medians printed as `NAME VALUE`:
#
#   clean_build_over_serde       clean `cargo build --release` of a crate of 20 #[tool] functions
#                                using toolgate ÷ the same crate written with only serde +
#                                serde_json + schemars (derived argument structs, a `match`);
#   clean_build_over_rmcp        the same toolgate crate ÷ the same 20 tools as methods of an
#                                rmcp 3.11 server (`#[tool_router]`, `#[tool]` with derived
#                                `Parameters`, `#[tool_handler]`; features `server`, `macros`);
#   rebuild100_over_handwritten  release rebuild after editing one tool body in a crate of 100
#                                #[tool] functions ÷ the same 100 functions by hand (derives and
#                                a `match`).
#
# The crates of a comparison have the same functions, the same `main` (build the tool list, answer
# one call named on the command line) and the same dependency versions: this workspace's
# Cargo.lock is copied into each, and bench-peers/Cargo.lock into the rmcp one (the same versions
# of every crate the two locks share, plus rmcp's macros: rmcp-macros, darling and syn 2). Each crate has its own target folder under a temporary directory. The
# toolgate crates depend on a snapshot of the committed tree (`git archive HEAD`), so editing the
# work tree during a run changes nothing.
#
# Usage: scripts/build_cost.sh [ROUNDS]   (default 3)
# Needs the crates of this workspace's Cargo.lock and of bench-peers/Cargo.lock in the local
# cargo cache (build both once, or `cargo fetch --manifest-path bench-peers/Cargo.toml`).
set -euo pipefail
# Each crate builds in its own target folder (a shared one would be cleaned between rounds).
unset CARGO_TARGET_DIR
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
snapshot="$work/toolgate-src"
mkdir -p "$snapshot"
git -C "$root" archive HEAD | tar -x -C "$snapshot"

# gen_toolgate N DIR / gen_plain N DIR: write a crate of N tools.
gen_toolgate() {
  local n=$1 dir=$2
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "with-toolgate"
version = "0.0.0"
edition = "2024"
[dependencies]
toolgate = { path = "$snapshot" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
[workspace]
TOML
  {
    echo '//! N tools written with toolgate.'
    echo 'use serde::Serialize;'
    echo 'use toolgate::{Dispatcher, HookContext, ToolUse, tool};'
    for i in $(seq 0 $((n - 1))); do
      cat <<RS

/// What tool_$i returns.
#[derive(Serialize)]
pub struct Out$i {
    id: String,
    n: u32,
    ok: bool,
}

/// Tool number $i: looks a record up by id.
#[tool]
fn tool_$i(
    /// The record's id.
    id: String,
    /// How many to take.
    n: u32,
    /// Whether to include closed records.
    ok: Option<bool>,
) -> Out$i {
    Out$i { id, n: n + $i, ok: ok.unwrap_or(true) }
}
RS
    done
    cat <<'RS'

fn main() {
    let d = Dispatcher::builder().registered().build().expect("tools build");
    let name = std::env::args().nth(1).unwrap_or_else(|| "tool_0".into());
    let s = d.session(HookContext::builder("u_1", "s_1").build());
    let call = ToolUse::new("toolu_1", name, serde_json::json!({"id": "x", "n": 1}));
    let r = toolgate::block_on(s.call(&call)).map(|r| r.content_text().into_owned());
    println!("{} {:?}", d.tool_definitions().len(), r);
}
RS
  } > "$dir/src/main.rs"
}

# The output and argument types of tool number $1, the same in the hand-written crate and the rmcp
# one: what serde derives and schemars describes.
record_types() {
  local i=$1
  cat <<RS

/// What tool_$i returns.
#[derive(Serialize)]
pub struct Out$i {
    id: String,
    n: u32,
    ok: bool,
}

/// Arguments of tool_$i.
#[derive(Deserialize, JsonSchema)]
struct Args$i {
    /// The record's id.
    id: String,
    /// How many to take.
    n: u32,
    /// Whether to include closed records.
    ok: Option<bool>,
}
RS
}

gen_plain() {
  local n=$1 dir=$2
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "serde-only"
version = "0.0.0"
edition = "2024"
[dependencies]
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = { version = "1", default-features = false, features = ["std", "derive"] }
[workspace]
TOML
  {
    echo '//! N tools written by hand with serde, serde_json and schemars.'
    echo 'use schemars::JsonSchema;'
    echo 'use serde::{Deserialize, Serialize};'
    echo 'use serde_json::{Value, json};'
    for i in $(seq 0 $((n - 1))); do
      record_types "$i"
      cat <<RS

/// Tool number $i: looks a record up by id.
fn tool_$i(id: String, n: u32, ok: Option<bool>) -> Out$i {
    Out$i { id, n: n + $i, ok: ok.unwrap_or(true) }
}
RS
    done
    echo
    echo 'fn definitions() -> Vec<Value> {'
    echo '    vec!['
    for i in $(seq 0 $((n - 1))); do
      echo "        json!({\"name\": \"tool_$i\", \"description\": \"Tool number $i: looks a record up by id.\", \"input_schema\": schemars::schema_for!(Args$i)}),"
    done
    echo '    ]'
    echo '}'
    echo
    echo 'fn dispatch(name: &str, input: &Value) -> Result<String, String> {'
    echo '    match name {'
    for i in $(seq 0 $((n - 1))); do
      echo "        \"tool_$i\" => {"
      echo "            let a = Args$i::deserialize(input).map_err(|e| e.to_string())?;"
      echo "            serde_json::to_string(&tool_$i(a.id, a.n, a.ok)).map_err(|e| e.to_string())"
      echo '        }'
    done
    echo '        _ => Err(format!("unknown tool {name}")),'
    echo '    }'
    echo '}'
    cat <<'RS'

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "tool_0".into());
    let r = dispatch(&name, &json!({"id": "x", "n": 1}));
    println!("{} {:?}", definitions().len(), r);
}
RS
  } > "$dir/src/main.rs"
}

# gen_rmcp N DIR: the same N tools as methods of one rmcp server.
gen_rmcp() {
  local n=$1 dir=$2
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "with-rmcp"
version = "0.0.0"
edition = "2024"
[dependencies]
rmcp = { version = "=3.11.0", default-features = false, features = ["server", "macros"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = { version = "1", default-features = false, features = ["std", "derive"] }
tokio = { version = "1", features = ["rt", "io-util"] }
[workspace]
TOML
  {
    echo '//! N tools written with rmcp.'
    echo 'use rmcp::handler::server::router::tool::ToolRouter;'
    echo 'use rmcp::handler::server::wrapper::Parameters;'
    echo 'use rmcp::model::{CallToolRequestParams, CallToolResponse, NumberOrString};'
    echo 'use rmcp::service::RequestContext;'
    echo 'use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};'
    echo 'use schemars::JsonSchema;'
    echo 'use serde::{Deserialize, Serialize};'
    for i in $(seq 0 $((n - 1))); do
      record_types "$i"
    done
    cat <<'RS'

#[derive(Clone)]
struct Server {
    tool_router: ToolRouter<Server>,
}

#[tool_router]
impl Server {
RS
    for i in $(seq 0 $((n - 1))); do
      cat <<RS
    /// Tool number $i: looks a record up by id.
    #[tool]
    fn tool_$i(&self, Parameters(a): Parameters<Args$i>) -> Result<String, ErrorData> {
        let out = Out$i { id: a.id, n: a.n + $i, ok: a.ok.unwrap_or(true) };
        serde_json::to_string(&out).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

RS
    done
    cat <<'RS'
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "tool_0".into());
    let server = Server { tool_router: Server::tool_router() };
    let tools = server.tool_router.list_all().len();
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let r = rt.block_on(async {
        // rmcp makes a request's context (its peer) only for a running service.
        let (ours, _theirs) = tokio::io::duplex(4096);
        let running = rmcp::service::serve_directly(server.clone(), ours, None);
        let ctx = RequestContext::new(NumberOrString::Number(1), running.peer().clone());
        let args = serde_json::json!({"id": "x", "n": 1}).as_object().cloned().unwrap_or_default();
        let params = CallToolRequestParams::new(name).with_arguments(args);
        match server.call_tool(params, ctx).await {
            Ok(CallToolResponse::Complete(result)) if result.is_error != Some(true) => {
                Ok(result.content[0].as_text().map(|t| t.text.clone()).unwrap_or_default())
            }
            Ok(CallToolResponse::Complete(result)) => Err(format!("{:?}", result.content)),
            Ok(_) => Err("not completed".to_owned()),
            Err(e) => Err(e.message.to_string()),
        }
    });
    println!("{} {:?}", tools, r);
}
RS
  } > "$dir/src/main.rs"
}

for c in small 100; do
  n=$([ "$c" = small ] && echo 20 || echo 100)
  gen_toolgate "$n" "$work/toolgate-$c"
  gen_plain "$n" "$work/plain-$c"
done
gen_rmcp 20 "$work/rmcp-small"
for d in "$work"/toolgate-small "$work"/toolgate-100 "$work"/plain-small "$work"/plain-100; do
  cp "$snapshot/Cargo.lock" "$d/Cargo.lock"
done
cp "$snapshot/bench-peers/Cargo.lock" "$work/rmcp-small/Cargo.lock"

seconds() {
  local start end
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
build() { (cd "$1" && cargo build --release -q 2>/dev/null); }
clean_build() {
  (cd "$1" && cargo clean -q 2>/dev/null || true)
  seconds build "$1"
}
# Edit one tool body (tool_50's constant) to a new value, then rebuild.
edit_rebuild() {
  local dir=$1 k=$2
  sed -i -E "s/n: n \+ 50(\+[0-9]+)?,/n: n + 50+$k,/" "$dir/src/main.rs"
  seconds build "$dir"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Check that both crates of each pair build and answer the same, and warm the 100-tool ones.
for c in small 100; do
  for k in toolgate plain; do
    build "$work/$k-$c"
  done
  a=$("$work/toolgate-$c/target/release/with-toolgate" tool_3)
  b=$("$work/plain-$c/target/release/serde-only" tool_3)
  if [ "$a" != "$b" ]; then
    echo "the two $c crates answer differently: $a / $b" >&2
    exit 1
  fi
done
build "$work/rmcp-small"
a=$("$work/toolgate-small/target/release/with-toolgate" tool_3)
b=$("$work/rmcp-small/target/release/with-rmcp" tool_3)
if [ "$a" != "$b" ]; then
  echo "the toolgate and rmcp crates answer differently: $a / $b" >&2
  exit 1
fi

tg_clean=(); plain_clean=(); rmcp_clean=(); tg_re=(); plain_re=()
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    tg_clean+=("$(clean_build "$work/toolgate-small")")
    plain_clean+=("$(clean_build "$work/plain-small")")
    rmcp_clean+=("$(clean_build "$work/rmcp-small")")
  else
    rmcp_clean+=("$(clean_build "$work/rmcp-small")")
    plain_clean+=("$(clean_build "$work/plain-small")")
    tg_clean+=("$(clean_build "$work/toolgate-small")")
  fi
  for k in 1 2 3; do
    tg_re+=("$(edit_rebuild "$work/toolgate-100" "$r$k")")
    plain_re+=("$(edit_rebuild "$work/plain-100" "$r$k")")
  done
done
tc=$(median "${tg_clean[@]}"); pc=$(median "${plain_clean[@]}"); mc=$(median "${rmcp_clean[@]}")
tr=$(median "${tg_re[@]}"); pr=$(median "${plain_re[@]}")
echo "clean_build_toolgate_s $tc"
echo "clean_build_serde_s $pc"
echo "clean_build_over_serde $(echo "scale=2; $tc / $pc" | bc)"
echo "clean_build_rmcp_s $mc"
echo "clean_build_over_rmcp $(echo "scale=2; $tc / $mc" | bc)"
echo "rebuild100_toolgate_s $tr"
echo "rebuild100_handwritten_s $pr"
echo "rebuild100_over_handwritten $(echo "scale=2; $tr / $pr" | bc)"
