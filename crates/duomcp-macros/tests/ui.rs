//! Compile-time behaviour of the macros, pinned: what compiles, and the exact errors (with
//! their spans and hints) for the common mistakes. The `.stderr` files are for the toolchain
//! in CI (rustc 1.95); regenerate them with `TRYBUILD=overwrite cargo test -p duomcp-macros`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
