#!/usr/bin/env bash
# Clean debug build of toolgate-macros ÷ clean debug build of a proc-macro crate with syn 3
# alone (same syn features, plus quote and proc-macro2), rounds interleaved, median printed.
# Usage: scripts/macro_build_cost.sh [ROUNDS]   (default 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/syn-only/src" "$work/with-macros/src"
cat > "$work/syn-only/Cargo.toml" <<TOML
[package]
name = "syn-only"
version = "0.0.0"
edition = "2024"
[lib]
proc-macro = true
[dependencies]
syn = { version = "3.0.10", default-features = false, features = ["derive", "parsing", "printing", "clone-impls", "proc-macro"] }
quote = "1.0.47"
proc-macro2 = "1.0.107"
[workspace]
TOML
cat > "$work/syn-only/src/lib.rs" <<'RS'
//! A proc-macro crate with syn alone.
use proc_macro::TokenStream;
/// Parses a derive input and gives it back.
#[proc_macro_derive(Nothing)]
pub fn nothing(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    let _ = quote::quote!(#input);
    TokenStream::new()
}
RS
cat > "$work/with-macros/Cargo.toml" <<TOML
[package]
name = "with-macros"
version = "0.0.0"
edition = "2024"
[dependencies]
toolgate-macros = { path = "$root/hooks-macros" }
[workspace]
TOML
echo "//! Depends on toolgate-macros only." > "$work/with-macros/src/lib.rs"

for c in syn-only with-macros; do
  (cd "$work/$c" && cargo generate-lockfile -q)
done

time_build() {
  local dir=$1
  (cd "$dir" && cargo clean -q 2>/dev/null || true)
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && cargo build -q 2>/dev/null)
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

syn_times=(); mac_times=()
for _ in $(seq "$rounds"); do
  syn_times+=("$(time_build "$work/syn-only")")
  mac_times+=("$(time_build "$work/with-macros")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
s=$(median "${syn_times[@]}"); m=$(median "${mac_times[@]}")
echo "syn_only_clean_build_s $s"
echo "toolgate_macros_clean_build_s $m"
echo "macros_over_syn_only $(echo "scale=2; $m / $s" | bc)"
