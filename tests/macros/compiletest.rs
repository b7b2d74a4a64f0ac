//! Compile-time misuse of the macros, and the pass cases. Compiler messages change between
//! releases, so the cases run only on the toolchain their `.stderr` files were made with.

#[rustversion::attr(not(stable(1.95)), ignore)]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
