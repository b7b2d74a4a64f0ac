//! Compile-time misuse of the macros, and the pass cases. Compiler messages change between
//! releases, so the cases run only on the toolchain their `.stderr` files were made with.
//! They are made with every feature on, as `.ci/run` and the README's test command run them:
//! the crates the `mcp` feature loads change how rustc shortens type paths in four of them
//! (`std::string::String` for `String`, `JsonSchema` for `schemars::JsonSchema`).

#[rustversion::attr(not(stable(1.95)), ignore)]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
