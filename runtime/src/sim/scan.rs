//! What the simulator refuses before compiling: features only a GPU has, named with the line
//! that uses them, rather than a wall of host-compiler errors.

use crate::Error;

/// (what to look for, what to call it). Matched on the source with comments removed; a
/// pattern starting with a letter must start an identifier.
const GPU_ONLY: &[(&str, &str)] = &[
    ("asm", "inline PTX assembly (`asm`)"),
    ("__asm__", "inline PTX assembly (`asm`)"),
    ("extern __shared__", "dynamic shared memory other than one `extern __shared__ T name[];` per line"),
    ("__pipeline_memcpy_async", "cp.async pipelines"),
    ("__pipeline_commit", "cp.async pipelines"),
    ("__pipeline_wait_prior", "cp.async pipelines"),
    ("wmma::", "tensor-core fragments (`wmma`)"),
    ("nvcuda::", "tensor-core fragments (`wmma`)"),
    ("cooperative_groups", "cooperative groups"),
    ("#include <cuda", "a CUDA header"),
    ("#include \"cuda", "a CUDA header"),
    ("#include <mma.h>", "a CUDA header"),
    ("#include <sm_", "a CUDA header"),
];

/// Checks that `source` defines `kernel` and uses nothing the simulator cannot run.
pub(crate) fn check(source: &str, kernel: &str) -> Result<(), Error> {
    let is_identifier = !kernel.is_empty()
        && !kernel.starts_with(|c: char| c.is_ascii_digit())
        && kernel.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let code = without_host_excluded(&without_comments(source));
    if !is_identifier || !code.lines().any(|line| has_identifier(line, kernel)) {
        return Err(Error::KernelNotInSource { kernel: kernel.into() });
    }
    for (number, line) in code.lines().enumerate() {
        for (pattern, feature) in GPU_ONLY {
            let found = if pattern.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                has_identifier(line, pattern.trim_end_matches(':'))
                    && (!pattern.ends_with("::") || line.contains(pattern))
            } else {
                line.trim_start().starts_with(pattern) || line.contains(pattern)
            };
            // The one form of dynamic shared memory the simulator rewrites (see `rewrite_dynamic_shared`).
            if found && *pattern == "extern __shared__" && dynamic_shared_declaration(line).is_some() {
                continue;
            }
            if found {
                return Err(Error::SimUnsupported {
                    kernel: kernel.into(),
                    feature,
                    line: number + 1,
                    text: source.lines().nth(number).unwrap_or(line).trim().to_string(),
                });
            }
        }
    }
    Ok(())
}

/// `extern __shared__ <type and attributes> name[];` on one line (what tessera emits for
/// buffers over 48 KiB) → (indentation, type and attributes, name).
pub(crate) fn dynamic_shared_declaration(line: &str) -> Option<(&str, &str, &str)> {
    let indent = &line[..line.len() - line.trim_start().len()];
    let rest = line.trim().strip_prefix("extern")?.trim_start().strip_prefix("__shared__")?;
    let declarator = rest.trim_end().strip_suffix(';')?.trim_end().strip_suffix(']')?.trim_end().strip_suffix('[')?;
    let declarator = declarator.trim_end();
    let name_start = declarator.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let (declaration, name) = declarator.split_at(name_start);
    let is_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    // one declarator only: `float s[], t[]` or `float s[] = ..` are left to the refusal
    let single = !declaration.contains(['[', ']', ',', '=', ';']);
    (is_name && single && !declaration.trim().is_empty()).then_some((indent, declaration.trim(), name))
}

/// `source` with each `extern __shared__ T name[];` turned into a fixed-size `__shared__`
/// array as large as any GPU's opt-in maximum (`TESSERA_SIM_DYNAMIC_SHARED_BYTES` elements),
/// on the same line, so the compiler's line numbers still match the source.
pub(crate) fn rewrite_dynamic_shared(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.contains("extern __shared__") {
        return std::borrow::Cow::Borrowed(source);
    }
    let code = without_comments(source);
    let lines: Vec<String> = source
        .lines()
        .zip(code.lines().chain(std::iter::repeat("")))
        .map(|(line, code)| match dynamic_shared_declaration(code) {
            Some((indent, declaration, name)) => format!(
                "{indent}__shared__ {declaration} {name}[TESSERA_SIM_DYNAMIC_SHARED_BYTES];  // simulated `extern __shared__`"
            ),
            None => line.to_string(),
        })
        .collect();
    let mut out = lines.join("\n");
    if source.ends_with('\n') {
        out.push('\n');
    }
    std::borrow::Cow::Owned(out)
}

/// Whether `word` occurs in `line` as a whole identifier.
fn has_identifier(line: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// `code` with the lines between `#ifndef TESSERA_SIM_H` and its `#endif` blanked out: the
/// simulator's header defines that name, so its compiler never sees them (tessera's cp.async
/// helpers are inline PTX there, and the header defines its own).
fn without_host_excluded(code: &str) -> String {
    let mut depth = 0usize; // > 0: inside the excluded block, counting nested #if's
    let mut out = String::with_capacity(code.len());
    for line in code.lines() {
        let directive = line.trim_start();
        if depth == 0 && directive.starts_with("#ifndef") && has_identifier(directive, "TESSERA_SIM_H") {
            depth = 1;
        } else if depth > 0 && directive.starts_with("#if") {
            depth += 1;
        } else if depth > 0 && directive.starts_with("#endif") {
            depth -= 1;
        } else if depth == 0 {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// `source` with `//` and `/* */` comments blanked out, line structure kept.
fn without_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    let (mut in_line, mut in_block, mut in_string) = (false, false, false);
    while let Some(c) = chars.next() {
        if in_line {
            if c == '\n' {
                in_line = false;
                out.push('\n');
            }
        } else if in_block {
            if c == '*' && chars.peek() == Some(&'/') {
                chars.next();
                in_block = false;
            } else if c == '\n' {
                out.push('\n');
            }
        } else if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '/' && chars.peek() == Some(&'/') {
            in_line = true;
        } else if c == '/' && chars.peek() == Some(&'*') {
            chars.next();
            in_block = true;
        } else {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "extern \"C\" __global__ void k(float* y) {\n    y[0] = 1.0f;\n}\n";

    #[test]
    fn plain_cuda_c_passes() {
        check(KERNEL, "k").unwrap();
    }

    #[test]
    fn inline_ptx_is_refused_with_its_line() {
        let source = "extern \"C\" __global__ void k(unsigned* y) {\n    unsigned lane;\n    asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n}\n";
        match check(source, "k") {
            Err(Error::SimUnsupported { feature, line, .. }) => {
                assert!(feature.contains("asm"), "{feature}");
                assert_eq!(line, 3);
            }
            other => panic!("expected SimUnsupported, got {other:?}"),
        }
    }

    #[test]
    fn code_only_the_gpu_compiles_is_skipped_and_code_after_it_is_still_checked() {
        let guarded = "#ifndef TESSERA_SIM_H\n#if 1\nasm volatile(\"cp.async.commit_group;\\n\" ::);\n#endif\n#endif  // TESSERA_SIM_H\n";
        check(&format!("{guarded}{KERNEL}"), "k").unwrap();
        let after = format!("{guarded}extern \"C\" __global__ void k(float* y) {{\n    asm(\"trap;\");\n}}\n");
        match check(&after, "k") {
            Err(Error::SimUnsupported { line, .. }) => assert_eq!(line, 7),
            other => panic!("expected SimUnsupported, got {other:?}"),
        }
    }

    #[test]
    fn gpu_only_words_in_comments_or_identifiers_are_not_features() {
        let source = "// asm(\"...\") would be faster\n/* wmma:: later */\nextern \"C\" __global__ void k(float* spasm) { spasm[0] = 0; }\n";
        check(source, "k").unwrap();
    }

    #[test]
    fn one_dynamic_shared_array_per_line_is_rewritten_to_a_fixed_size_one() {
        let source = "extern \"C\" __global__ void k(float* y) {\n    extern __shared__ __align__(16) unsigned char tessera_smem[];\n    y[0] = 0;\n}\n";
        check(source, "k").unwrap();
        let rewritten = rewrite_dynamic_shared(source);
        assert_eq!(rewritten.lines().count(), source.lines().count());
        assert!(
            rewritten.contains(
                "\n    __shared__ __align__(16) unsigned char tessera_smem[TESSERA_SIM_DYNAMIC_SHARED_BYTES];"
            ),
            "{rewritten}"
        );
        assert_eq!(dynamic_shared_declaration("extern __shared__ float s[];"), Some(("", "float", "s")));
        assert_eq!(dynamic_shared_declaration("extern __shared__ float s[64];"), None);
        assert!(matches!(rewrite_dynamic_shared(KERNEL), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn other_dynamic_shared_memory_and_cuda_headers_are_refused() {
        for (source, want) in [
            ("extern __shared__ float s[], t[];\nextern \"C\" __global__ void k() {}", "dynamic shared memory"),
            ("#include <cuda_fp16.h>\nextern \"C\" __global__ void k() {}", "a CUDA header"),
            ("#include <cuda/pipeline>\nextern \"C\" __global__ void k() {}", "a CUDA header"),
        ] {
            match check(source, "k") {
                Err(Error::SimUnsupported { feature, line: 1, .. }) => {
                    assert!(feature.contains(want), "{feature}")
                }
                other => panic!("expected SimUnsupported for {source:?}, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_kernel_name_missing_from_the_source_or_not_an_identifier_is_an_error() {
        assert!(matches!(check(KERNEL, "other"), Err(Error::KernelNotInSource { .. })));
        assert!(matches!(check(KERNEL, "k); evil("), Err(Error::KernelNotInSource { .. })));
    }
}
