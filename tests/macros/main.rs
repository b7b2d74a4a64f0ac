//! The macros' tests, one binary: what a `#[tool]`'s return type becomes (`returns`) and the
//! output schema it gives MCP (`output_schema`), and registration across two crates of the
//! workspace (`cross_crate`), and the hooks that only rewrite, which guard no write tool
//! (`rewrite_only`). Tests are named `<file>::<test>`. The trybuild cases
//! (compile-time misuse and pass cases) are the package `tests/ui-cases/`.

mod cross_crate;
mod output_schema;
mod returns;
mod rewrite_only;
