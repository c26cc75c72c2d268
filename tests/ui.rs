//! Compile-time behaviour of `#[differentiable]` and `#[derive(Differentiable)]`: every misuse is
//! an error at the user's token with a message saying what is supported
//! (`tests/ui/<category>/*.rs`, with their `.stderr`), and the pass cases compile.

/// Cases whose snapshots pin the default build's diagnostics: under the `no-fusion` feature the
/// same first error at the same token comes with other notes or follow-up errors
/// (docs/expansion.md, "Fused regions"), so that build leaves them out.
const FUSION_DIAGNOSTICS: [&str; 5] = [
    "tests/ui/generic/f32_scalar.rs",
    "tests/ui/generic/tensor_of_a_literal.rs",
    "tests/ui/ops/number_passed_to_plain_function.rs",
    "tests/ui/signature/associated_function_with_its_own_attribute.rs",
    "tests/ui/structs/nodiff_number_field.rs",
];

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    if cfg!(feature = "no-fusion") {
        let mut cases: Vec<String> = std::fs::read_dir("tests/ui")
            .expect("tests/ui")
            .flat_map(|category| std::fs::read_dir(category.expect("a category").path()))
            .flatten()
            .map(|case| case.expect("a case").path().display().to_string())
            .filter(|path| path.ends_with(".rs") && !FUSION_DIAGNOSTICS.contains(&path.as_str()))
            .collect();
        cases.sort();
        for case in cases {
            t.compile_fail(case);
        }
    } else {
        t.compile_fail("tests/ui/*/*.rs");
    }
    t.pass("tests/pass/*.rs");
}

/// The cases left out under `no-fusion` exist, so that a renamed case is not silently skipped.
#[test]
fn the_cases_left_out_without_fusion_exist() {
    for case in FUSION_DIAGNOSTICS {
        assert!(std::path::Path::new(case).is_file(), "{case}");
    }
}
