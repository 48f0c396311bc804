//! The host C++ compiler: the emitted CUDA C, after tessera's header of CUDA built-ins,
//! compiled to a shared library the simulator loads.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Error;

/// The header of CUDA built-ins every simulated kernel is compiled after.
pub const HEADER: &str = include_str!("../../sim/tessera_sim.h");

/// The flags every simulation library is compiled with: optimized (the simulation runs the
/// kernel's arithmetic natively), position-independent, only the entry points exported, no
/// type-based alias analysis (CUDA code reinterprets `float*` as `float4*`), no contraction of
/// `a * b + c` (so results do not depend on the host's FMA units), stack probes (a thread
/// that overflows its stack always hits the guard page below it), and no `_FORTIFY_SOURCE`
/// (which some distributions turn on: the same checks on every host).
pub fn base_flags() -> Vec<String> {
    [
        "-O2",
        "-std=c++17",
        "-fPIC",
        "-shared",
        "-fvisibility=hidden",
        "-fno-strict-aliasing",
        "-ffp-contract=off",
        "-fstack-clash-protection",
        "-U_FORTIFY_SOURCE",
        "-Wno-unknown-pragmas",
        "-Wl,-z,defs",
    ]
    .map(String::from)
    .to_vec()
}

/// A host C++ compiler that could be run: `$CXX`, else the first of `c++`, `g++`, `clang++`
/// on the `PATH`.
///
/// ```
/// let compiler = tessera_runtime::HostCompiler::from_env()?;
/// println!("{}", compiler.version());          // e.g. "g++ (Debian 12.2.0-14) 12.2.0"
/// assert!(tessera_runtime::HostCompiler::new("/nonexistent").is_err());
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCompiler {
    command: String,
    program: PathBuf,
    leading_args: Vec<String>,
    version: String,
    target: String,
}

impl HostCompiler {
    /// `$CXX` when set (it may hold arguments, as in `CXX="ccache g++"`), else the first of
    /// `c++`, `g++`, `clang++` that runs.
    pub fn from_env() -> Result<Self, Error> {
        if let Some(cxx) = std::env::var("CXX").ok().filter(|v| !v.trim().is_empty()) {
            return Self::new(&cxx).map_err(|error| match error {
                Error::HostCompilerMissing { compiler, reason } => {
                    Error::HostCompilerMissing { compiler: format!("{compiler} (from $CXX)"), reason }
                }
                other => other,
            });
        }
        let mut reasons = Vec::new();
        for candidate in ["c++", "g++", "clang++"] {
            match Self::new(candidate) {
                Ok(compiler) => return Ok(compiler),
                Err(Error::HostCompilerMissing { reason, .. }) => reasons.push(format!("{candidate}: {reason}")),
                Err(other) => return Err(other),
            }
        }
        Err(Error::HostCompilerMissing {
            compiler: "c++, g++ or clang++ on the PATH (CXX is not set)".into(),
            reason: reasons.join("; "),
        })
    }

    /// The compiler `command` (a program, possibly followed by arguments), checked by
    /// running it with `--version`.
    pub fn new(command: &str) -> Result<Self, Error> {
        let missing = |reason: String| Error::HostCompilerMissing { compiler: command.to_string(), reason };
        let mut words = command.split_whitespace().map(str::to_owned);
        let program = PathBuf::from(words.next().ok_or_else(|| missing("it is empty".into()))?);
        let leading_args: Vec<String> = words.collect();
        let query = |arg: &str| -> Result<String, Error> {
            let output = Command::new(&program)
                .args(&leading_args)
                .arg(arg)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| missing(e.to_string()))?;
            if !output.status.success() {
                return Err(missing(format!(
                    "`{arg}` exited with {}: {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                )));
            }
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
        };
        let version = query("--version")?.lines().next().unwrap_or_default().to_string();
        let target = query("-dumpmachine").unwrap_or_default();
        Ok(Self { command: command.to_string(), program, leading_args, version, target })
    }

    /// The first line of `--version`, e.g. `g++ (Debian 12.2.0-14) 12.2.0`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The command as given (`c++`, `$CXX`, ...).
    pub fn command(&self) -> &str {
        &self.command
    }

    /// What decides the compiler's output besides source and flags: part of the cache key.
    pub(crate) fn identity(&self) -> String {
        format!("{}\n{}\n{}", self.command, self.version, self.target)
    }

    /// Compiles `unit` (a whole translation unit) into the shared library `output`.
    /// Returns the compiler's messages (warnings); a failure is `Error::HostCompile`.
    pub(crate) fn compile(&self, unit: &str, flags: &[String], output: &Path, kernel: &str) -> Result<String, Error> {
        let mut child = Command::new(&self.program)
            .args(&self.leading_args)
            .args(flags)
            .args(["-x", "c++", "-", "-o"])
            .arg(output)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::HostCompilerMissing { compiler: self.command.clone(), reason: e.to_string() })?;
        // Written from another thread: a compiler that reports errors while we still write
        // could otherwise fill its stderr pipe and wait on us while we wait on it.
        let writer = child.stdin.take().map(|mut stdin| {
            let unit = unit.to_owned();
            std::thread::spawn(move || stdin.write_all(unit.as_bytes()))
        });
        let result = child.wait_with_output().map_err(|e| Error::HostCompile {
            kernel: kernel.into(),
            compiler: self.command.clone(),
            log: format!("waiting for the compiler failed: {e}"),
            excerpt: String::new(),
        })?;
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        let log = format!("{}{}", String::from_utf8_lossy(&result.stdout), String::from_utf8_lossy(&result.stderr));
        if !result.status.success() {
            return Err(Error::HostCompile {
                kernel: kernel.into(),
                compiler: format!("{} ({})", self.command, self.version),
                excerpt: failing_lines(unit, &log, &format!("{kernel}.cu")),
                log: log.trim_end().to_string(),
            });
        }
        Ok(log)
    }
}

/// The translation unit the simulator compiles for `kernel`: the header, the kernel's source
/// exactly as the GPU would get it (`#line` keeps the compiler's messages on its lines) but
/// for `extern __shared__` arrays, which become fixed-size ones on the same lines, and the
/// entry point.
pub fn translation_unit(source: &str, kernel: &str) -> String {
    let source = super::scan::rewrite_dynamic_shared(source);
    format!(
        "#line 1 \"tessera_sim.h\"\n{HEADER}\n#line 1 \"{kernel}.cu\"\n{source}\n#line 1 \"tessera_sim_entry\"\nTESSERA_SIM_ENTRY({kernel})\n"
    )
}

/// The lines of the kernel's source that a compiler log names (`kernel.cu:12:5: error: ..`),
/// two lines of context each side, numbered.
fn failing_lines(unit: &str, log: &str, file: &str) -> String {
    let marker = format!("#line 1 \"{file}\"\n");
    let source = unit.find(&marker).map(|start| &unit[start + marker.len()..]).unwrap_or_default();
    let named =
        log.lines().filter_map(|l| l.strip_prefix(file)?.strip_prefix(':')?.split(':').next()?.parse::<usize>().ok());
    crate::excerpt::source_excerpt(source, named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compiler_that_does_not_exist_is_a_typed_error_naming_it() {
        match HostCompiler::new("/nonexistent/c++") {
            Err(Error::HostCompilerMissing { compiler, reason }) => {
                assert_eq!(compiler, "/nonexistent/c++");
                assert!(!reason.is_empty());
            }
            other => panic!("expected HostCompilerMissing, got {other:?}"),
        }
        assert!(matches!(HostCompiler::new("  "), Err(Error::HostCompilerMissing { .. })));
    }

    #[test]
    fn failing_lines_point_into_the_kernel_source_not_the_header() {
        let unit = translation_unit("int a;\nint b = c;\nint d;", "k");
        let log = "k.cu:2:9: error: 'c' was not declared in this scope";
        let excerpt = failing_lines(&unit, log, "k.cu");
        assert!(excerpt.contains(">    2 | int b = c;"), "{excerpt}");
        assert!(excerpt.contains("     1 | int a;"), "{excerpt}");
    }

    #[test]
    fn the_translation_unit_keeps_the_source_verbatim_between_line_markers() {
        let unit = translation_unit("extern \"C\" __global__ void k() {}", "k");
        assert!(unit.starts_with("#line 1 \"tessera_sim.h\"\n"));
        assert!(unit.contains("#line 1 \"k.cu\"\nextern \"C\" __global__ void k() {}\n"));
        assert!(unit.trim_end().ends_with("TESSERA_SIM_ENTRY(k)"));
    }
}
