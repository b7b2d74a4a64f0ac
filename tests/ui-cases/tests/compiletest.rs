//! The macros' compile-time misuse (`tests/ui/fail/`, each case with the compiler's `.stderr`)
//! and pass cases (`tests/ui/pass/`), run by trybuild. Compiler messages change between
//! releases, so the cases run only on the toolchain their `.stderr` files were made with.
//!
//! trybuild builds the cases in a crate it generates under `target/tests/trybuild/`, with its
//! own cargo run and target folder; that crate's dependencies are this package's
//! (dev-)dependencies: toolgate with no optional feature, `toolgate-extern-tools`, serde,
//! serde_json and schemars. The workspace run's features do not reach it: trybuild resolves
//! the generated crate on its own and passes on only this package's features (it has none), so
//! `cargo test --workspace --all-features` builds the cases as a user's crate with toolgate's
//! default features sees them, and the `.stderr` files are what rustc writes for that set of
//! crates (the crates loaded decide how it shortens type paths, `String` or
//! `std::string::String`).

#[rustversion::attr(not(stable(1.95)), ignore)]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
