#!/usr/bin/env bash
# The tests, every optional integration included, on a fresh machine: first what the tests
# start themselves and cannot build with cargo, installed when missing (Debian's headless
# Chromium for the report's and the inbox's browser tests, and its chromedriver, which the
# inbox's test drives it with over WebDriver; PostgreSQL's server, whose initdb and pg_ctl the
# PostgreSQL tests run for a throwaway server of their own: Debian keeps them in
# /usr/lib/postgresql/N/bin, off PATH; python3 and node, which read the audit files as Python's
# and JavaScript's line readers do); then `cargo test`. Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: the tests need ${missing[*]} (Debian: apt-get install ${missing[*]}); install it and run again" >&2
    exit 1
  fi
  echo "scripts/test.sh: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
exec cargo test --workspace --all-targets --all-features "$@"
