//! The macros' tests, one binary: compile-time misuse and pass cases (`compiletest`, the
//! trybuild cases under `tests/ui/`), what a `#[tool]`'s return type becomes (`returns`) and the
//! output schema it gives MCP (`output_schema`), and
//! registration across two crates of the workspace (`cross_crate`). Tests are named
//! `<file>::<test>`.

mod compiletest;
mod cross_crate;
mod output_schema;
mod returns;
