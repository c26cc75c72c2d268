//! Compile-time behaviour of `#[differentiable]` and `#[derive(Differentiable)]`: every misuse is
//! an error at the user's token with a message saying what is supported
//! (`tests/ui/<category>/*.rs`, with their `.stderr`), and the pass cases compile.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
    t.pass("tests/pass/*.rs");
}
