//! The `tessera` command line, declared with clap's derive: every subcommand has `--help`
//! and `-h`, and clap validates the values (kernel names, architectures, shapes) with its
//! own messages before anything runs.
//!
//! ```
//! use clap::Parser;
//! use tessera::cli::{Cli, Command};
//! let cli = Cli::try_parse_from(["tessera", "check", "sgemm_v3", "--arch", "sm_80", "--shape", "M=512,N=256"]).unwrap();
//! let Command::Check(check) = cli.command else { unreachable!() };
//! assert_eq!(check.arch, tessera::dsl::Target::SM_80);
//! assert_eq!(check.shape.unwrap().0, vec![("M".to_string(), 512), ("N".to_string(), 256)]);
//! ```

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand};

use crate::bench::{BenchOptions, Family, Output};
use crate::check::{CheckOptions, JSON_SCHEMA};
use crate::dsl::{GpuSpec, Target, VectorWidth};
use crate::Arch;

/// Tile kernels in Rust syntax: inspect, check, tune and measure the catalog.
#[derive(Debug, Parser)]
#[command(name = "tessera", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lists the catalog's kernels with their configuration (`tessera list softmax`: those whose
    /// names hold `softmax`).
    List {
        /// Only the kernels whose names hold this text.
        filter: Option<String>,
    },
    /// Prints a kernel's CUDA source, or what NVRTC makes of it.
    Show(ShowArgs),
    /// What a kernel's configuration costs before it runs: resources, occupancy, roofline,
    /// the analysis of every access.
    Check(CheckArgs),
    /// Searches the configurations around a kernel's declared one on the GPU and stores the
    /// fastest for launches at shapes like the given one.
    Tune(TuneArgs),
    /// Measures the catalog beside its baselines (the device copy, cuBLAS) on the GPU.
    Bench(BenchArgs),
}

/// Values of named symbols: `M=4096,N=4096,K=4096`.
///
/// ```
/// let shape: tessera::cli::Assignments<i64> = "M=1000, N=17".parse().unwrap();
/// assert_eq!(shape.0, vec![("M".to_string(), 1000), ("N".to_string(), 17)]);
/// assert!("M=big".parse::<tessera::cli::Assignments<i64>>().unwrap_err().contains("`big`"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Assignments<T>(pub Vec<(String, T)>);

impl<T: FromStr> FromStr for Assignments<T> {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        text.split(',')
            .filter(|part| !part.trim().is_empty())
            .map(|part| {
                let (name, value) =
                    part.split_once('=').ok_or_else(|| format!("`{part}` is not NAME=value, e.g. M=4096"))?;
                let value = value.trim().parse().map_err(|_| {
                    format!("`{}` in `{part}` is not a value of type {}", value.trim(), std::any::type_name::<T>())
                })?;
                Ok((name.trim().to_string(), value))
            })
            .collect::<Result<_, String>>()
            .map(Assignments)
    }
}

/// GEMM shapes for the examples' `--shapes`: `M,N,K;M,N,K..`, empty entries skipped.
///
/// ```
/// use tessera::cli::GemmShapes;
/// let shapes: GemmShapes = "4096,4096,4096; 1000, 17, 129;".parse().unwrap();
/// assert_eq!(shapes.0, vec![(4096, 4096, 4096), (1000, 17, 129)]);
/// assert!("4096,4096".parse::<GemmShapes>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmShapes(pub Vec<(usize, usize, usize)>);

impl FromStr for GemmShapes {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut shapes = Vec::new();
        for shape in text.split(';').filter(|s| !s.trim().is_empty()) {
            let parts: Vec<usize> = shape
                .split(',')
                .map(|p| p.trim().parse().map_err(|e| format!("`{shape}`: {e}")))
                .collect::<Result<_, _>>()?;
            let [m, n, k] = parts[..] else { return Err(format!("`{shape}`: expected M,N,K")) };
            shapes.push((m, n, k));
        }
        Ok(GemmShapes(shapes))
    }
}

/// Extents of shape symbols: `M=4096,N=4096,K=4096`, each positive.
///
/// ```
/// let shape: tessera::cli::Shape = "R=64,C=32".parse().unwrap();
/// assert_eq!(shape.0, vec![("R".to_string(), 64), ("C".to_string(), 32)]);
/// assert!("N=0".parse::<tessera::cli::Shape>().unwrap_err().contains("positive"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Shape(pub Vec<(String, i64)>);

impl FromStr for Shape {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let Assignments(pairs) = text.parse::<Assignments<i64>>()?;
        if let Some((name, value)) = pairs.iter().find(|(_, value)| *value <= 0) {
            return Err(format!("{name}={value}: an extent is positive"));
        }
        Ok(Shape(pairs))
    }
}

fn target(name: &str) -> Result<Target, String> {
    Target::from_name(name).ok_or_else(|| format!("expected one of {}", Target::known_names()))
}

fn vector_width(text: &str) -> Result<VectorWidth, String> {
    text.parse().ok().and_then(VectorWidth::new).ok_or_else(|| "expected 1, 2, 4 or 8".to_string())
}

/// The catalog kernel `name`, or the message that says there is none.
///
/// ```
/// assert!(tessera::cli::catalog_kernel("sgemm_v12").is_ok());
/// assert!(tessera::cli::catalog_kernel("sgemm_v99").err().is_some_and(|e| e.contains("`tessera list`")));
/// // a family's name lists its kernels; a typo, the nearest names
/// assert!(tessera::cli::catalog_kernel("softmax").err().is_some_and(|e| e.contains("did you mean softmax_")));
/// assert!(tessera::cli::catalog_kernel("softmax").err().is_some_and(|e| e.contains("`tessera list softmax`")));
/// assert!(tessera::cli::catalog_kernel("sgemm_v1x").err().is_some_and(|e| e.contains("sgemm_v10, sgemm_v11")));
/// ```
pub fn catalog_kernel(name: &str) -> Result<&'static crate::KernelDefinition, String> {
    crate::catalog::find(name).ok_or_else(|| {
        let names: Vec<&str> = crate::catalog::all().iter().map(|kernel| kernel.name()).collect();
        match suggestions(name, &names).as_slice() {
            [] => format!("no catalog kernel `{name}`; `tessera list` lists them"),
            // names that hold it: `tessera list` of it shows them all with their configurations
            close if close.iter().all(|kernel| kernel.contains(name) || *kernel == "…") => format!(
                "no catalog kernel `{name}`; did you mean {}? (`tessera list {name}` lists them all)",
                close.join(", ")
            ),
            close => format!(
                "no catalog kernel `{name}`; did you mean {}? (`tessera list` lists the catalog)",
                close.join(", ")
            ),
        }
    })
}

/// Up to 8 names of `names` that hold `given` (`softmax` → the softmax kernels), else the 3
/// nearest by edit distance within a third of its length (a typo).
fn suggestions<'a>(given: &str, names: &[&'a str]) -> Vec<&'a str> {
    let holding: Vec<&str> = names.iter().copied().filter(|name| name.contains(given)).collect();
    if !holding.is_empty() {
        let shown = holding.len().min(8);
        let mut listed: Vec<&str> = holding[..shown].to_vec();
        if holding.len() > shown {
            listed.push("…");
        }
        return listed;
    }
    let mut near: Vec<(usize, &str)> = names
        .iter()
        .map(|name| (strsim::levenshtein(given, name), *name))
        .filter(|(distance, _)| *distance <= given.len().div_ceil(3))
        .collect();
    near.sort();
    near.into_iter().take(3).map(|(_, name)| name).collect()
}

/// A catalog kernel that a bench family measures.
fn benched_kernel(name: &str) -> Result<String, String> {
    let kernel = catalog_kernel(name)?;
    if !Family::ALL.iter().any(|family| family.kernels().iter().any(|k| k.name() == kernel.name())) {
        return Err(format!("`{name}` is in no bench family"));
    }
    Ok(name.to_string())
}

fn gpu_spec(name: &str) -> Result<GpuSpec, String> {
    GpuSpec::find(name).ok_or_else(|| format!("expected one of {}", GpuSpec::known_names()))
}

/// What `show` prints besides the source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShowOutput {
    /// The CUDA C tessera renders.
    #[default]
    Source,
    /// The PTX NVRTC makes of it.
    Ptx,
    /// The SASS of the cubin (needs `cuobjdump`).
    Sass,
    /// The NVRTC/ptxas log of the cubin compile, and the figures parsed from it.
    Log,
    /// The static analysis report.
    Report,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The catalog kernel (`tessera list` lists them).
    pub kernel: String,
    /// Overrides of the configuration, e.g. BM=64,BK=16,threads=128.
    #[arg(long, value_name = "NAME=VALUE,..")]
    pub config: Option<Assignments<i64>>,
    /// Elements per access: 1, 2, 4 or 8 (at most 16 bytes).
    #[arg(long, value_parser = vector_width)]
    pub vector: Option<VectorWidth>,
    /// The NVRTC target of --ptx, --sass and --log.
    #[arg(long, default_value = "sm_90")]
    pub arch: Arch,
    /// The PTX instead of the source.
    #[arg(long, group = "output")]
    pub ptx: bool,
    /// The SASS instead of the source (needs `cuobjdump`).
    #[arg(long, group = "output")]
    pub sass: bool,
    /// The NVRTC/ptxas log of the cubin compile.
    #[arg(long, group = "output")]
    pub log: bool,
    /// The static analysis report.
    #[arg(long, group = "output")]
    pub report: bool,
}

impl ShowArgs {
    /// The one output the flags ask for.
    pub fn output(&self) -> ShowOutput {
        match (self.ptx, self.sass, self.log, self.report) {
            (true, ..) => ShowOutput::Ptx,
            (_, true, ..) => ShowOutput::Sass,
            (_, _, true, _) => ShowOutput::Log,
            (.., true) => ShowOutput::Report,
            _ => ShowOutput::Source,
        }
    }
}

/// What a catalog kernel's configuration costs before it runs, for one architecture: resources
/// per block, the occupancy bound per SM (from threads and shared memory, then from the registers
/// NVRTC allocates when it compiles the kernel for that architecture: no GPU needed), the roofline
/// time bound at a shape (every shape symbol not given is 4096 for a matrix dimension, 2^24 for a
/// vector length), and the static analysis of every access.
#[derive(Debug, Args)]
#[command(after_long_help = JSON_SCHEMA)]
pub struct CheckArgs {
    /// The catalog kernel (`tessera list` lists them).
    pub kernel: String,
    /// The architecture: its limits, its occupancy rules, the NVRTC target.
    #[arg(long, default_value = "sm_90", value_parser = target)]
    pub arch: Target,
    /// Values of the shape symbols for the roofline.
    #[arg(long, value_name = "S=n,..")]
    pub shape: Option<Shape>,
    /// The data-sheet peaks of the roofline (default: the architecture's GPU: sm_80 A100 SXM,
    /// sm_86 A40, sm_89 L40S, sm_90 H100 SXM; also H200).
    #[arg(long, value_parser = gpu_spec)]
    pub gpu: Option<GpuSpec>,
    /// Skip the compile: bounds without registers.
    #[arg(long)]
    pub no_nvrtc: bool,
    /// One JSON object instead of the table (its schema: `--help`).
    #[arg(long)]
    pub json: bool,
}

impl CheckArgs {
    /// The options the check runs with (the default disk cache for the compiles).
    pub fn options(&self) -> CheckOptions {
        CheckOptions {
            shape: self.shape.clone().map(|s| s.0).unwrap_or_default(),
            gpu: self.gpu,
            nvrtc: !self.no_nvrtc,
            ..CheckOptions::new(self.arch)
        }
    }
}

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The catalog kernel (`tessera list` lists them).
    pub kernel: String,
    /// The shape to tune for: a value for every shape symbol of the kernel.
    #[arg(long, value_name = "S=n,..")]
    pub shape: Shape,
    /// Values of the kernel's scalar parameters, e.g. alpha=1,beta=0.
    #[arg(long, value_name = "NAME=VALUE,..")]
    pub scalar: Option<Assignments<f64>>,
    /// Search rounds; each searches around the best configuration so far.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Show the space and compile it; measure nothing (no GPU needed).
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The families to measure (all when none is given).
    #[arg(value_enum)]
    pub families: Vec<Family>,
    /// Shapes to measure, separated by `;`; each applies to the kernels whose shape symbols it
    /// names, e.g. "N=268435456;R=4096,C=4096;M=4096,N=4096,K=4096".
    #[arg(long, value_delimiter = ';', value_name = "S=n,..;..")]
    pub sizes: Vec<Shape>,
    /// Timed repetitions per kernel (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// Untimed runs before the timed ones.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Keep the L2 cache warm between repetitions (it is flushed by default).
    #[arg(long)]
    pub no_flush: bool,
    /// Launch the later passes of multi-pass computations (`gemv::gemv_t`'s, ..) after the
    /// pass before has ended, not as its programmatic dependent (sm_90 on: the default
    /// overlaps the launch with that pass's last blocks).
    #[arg(long)]
    pub no_dependent_launches: bool,
    /// JSON instead of the table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV instead of the table.
    #[arg(long)]
    pub csv: bool,
    /// Also write SVG charts (a roofline, % of baseline by shape per family) into this folder.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// The naive SGEMM is skipped above this extent (it takes seconds).
    #[arg(long, default_value_t = 2048)]
    pub naive_up_to: i64,
    /// β of the GEMMs' C = α·A·B + β·C, for the kernels and cuBLAS alike (0: C is never read).
    #[arg(long, default_value_t = 0.0, value_name = "BETA")]
    pub beta: f32,
    /// Only these kernels (names as `tessera list` gives them, separated by `,`), each beside
    /// its family's baseline; the families are those of the kernels when none is given. A
    /// kernel named here runs at every shape given, even where its family's entry point would
    /// take another kernel for that shape.
    #[arg(long, value_delimiter = ',', value_name = "NAME,..", value_parser = benched_kernel)]
    pub kernels: Vec<String>,
}

impl From<BenchArgs> for BenchOptions {
    fn from(args: BenchArgs) -> Self {
        BenchOptions {
            families: match (args.families.is_empty(), args.kernels.is_empty()) {
                (false, _) => args.families,
                (true, true) => Family::ALL.to_vec(),
                // the families that hold one of the kernels asked for
                (true, false) => Family::ALL
                    .into_iter()
                    .filter(|family| family.kernels().iter().any(|k| args.kernels.iter().any(|name| name == k.name())))
                    .collect(),
            },
            sizes: (!args.sizes.is_empty()).then(|| args.sizes.into_iter().map(|s| s.0).collect()),
            repetitions: args.reps as usize,
            warmup: args.warmup as usize,
            flush_l2: !args.no_flush,
            output: match (args.json, args.csv) {
                (true, _) => Output::Json,
                (_, true) => Output::Csv,
                _ => Output::Table,
            },
            svg_dir: args.svg,
            naive_up_to: args.naive_up_to,
            kernels: (!args.kernels.is_empty()).then_some(args.kernels),
            beta: args.beta,
        }
    }
}

/// A progress bar on stderr (drawn only where stderr is a terminal) for `bench` and `tune`.
///
/// ```
/// let bar = tessera::cli::ProgressLine::new();
/// bar.step(1, 4, "sgemm_v3 at M=64,N=64,K=64");
/// bar.finish();
/// ```
pub struct ProgressLine {
    bar: indicatif::ProgressBar,
}

impl Default for ProgressLine {
    fn default() -> Self {
        Self::new()
    }
}

impl ProgressLine {
    pub fn new() -> Self {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("#>."),
        );
        ProgressLine { bar }
    }

    /// `done` of `of` steps taken, `message` the one under way.
    pub fn step(&self, done: usize, of: usize, message: &str) {
        self.bar.set_length(of as u64);
        self.bar.set_position(done as u64);
        self.bar.set_message(message.to_string());
    }

    /// A line printed above the bar.
    pub fn println(&self, line: &str) {
        self.bar.println(line);
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
