//! Invalid configurations fail to compile, each with a message that names the problem, its
//! numbers and a fix, at the token that is wrong. Each `tests/ui/*.stderr` is reviewed.
//! Regenerate after an intended change with `TRYBUILD=overwrite cargo test --test ui`.

#[test]
fn invalid_kernels_are_compile_errors_at_the_offending_span() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
