//! `tessera bench`: every catalog kernel beside its baseline in one run — cuBLAS SGEMM for
//! GEMM, the device-to-device copy of the same bytes for the memory-bound families — with
//! CUDA events, warm-up, the L2 cache flushed before every repetition, each kernel timed in
//! alternation with its baseline on the same inputs, medians and spread;
//! as a table, JSON or CSV, and SVG charts (a roofline, and % of baseline by size).

use std::fmt::Write as _;

use crate::catalog::{copy, gemv, hgemm, map, norm, reduce, sgemm, softmax, stencil, transpose};
use crate::runtime::tune::{measurement_value, GpuMeasure};
use crate::{DeviceTensor, Error, Gpu, KernelDefinition};

/// A catalog family and the baseline it is measured against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Copy,
    Transpose,
    Sgemm,
    /// The reductions' first pass (the bandwidth-bound one): sum and dot partials.
    Reduce,
    Map,
    /// The 5-point Laplacian, one colour of red-black Gauss-Seidel, the residual's pass 1.
    Stencil,
    /// BF16 and F16 inputs, f32 accumulation on tensor cores, beside cuBLAS's `cublasGemmEx`.
    Hgemm,
    /// Row softmax: the kernel `softmax::softmax` takes for the row length.
    Softmax,
    /// LayerNorm and RMSNorm.
    Norm,
    /// y = A·x and y = Aᵀ·x.
    Gemv,
}

impl Family {
    pub const ALL: [Family; 10] = [
        Family::Copy,
        Family::Transpose,
        Family::Sgemm,
        Family::Hgemm,
        Family::Reduce,
        Family::Map,
        Family::Stencil,
        Family::Softmax,
        Family::Norm,
        Family::Gemv,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Copy => "copy",
            Family::Transpose => "transpose",
            Family::Sgemm => "sgemm",
            Family::Reduce => "reduce",
            Family::Map => "map",
            Family::Stencil => "stencil",
            Family::Hgemm => "hgemm",
            Family::Softmax => "softmax",
            Family::Norm => "norm",
            Family::Gemv => "gemv",
        }
    }

    /// The family called `name` on the command line.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether `kernel` is measured at `shape`: a softmax or a norm only where
    /// `softmax::softmax` or `norm::layer_norm`/`rms_norm` would take it, every other kernel wherever its shape symbols are the given ones.
    fn measures(self, kernel: &KernelDefinition, shape: &[(String, i64)]) -> bool {
        let value = |name: &str| shape.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        match (self, value("C")) {
            (Family::Softmax, Some(columns)) => softmax::kernel_for(columns.max(0) as usize).name() == kernel.name(),
            (Family::Norm, Some(columns)) => kernel.name().contains("wide") == (columns > 8192),
            _ => true,
        }
    }

    fn kernels(self) -> Vec<&'static KernelDefinition> {
        match self {
            Family::Copy => copy::ALL.to_vec(),
            Family::Transpose => transpose::ALL.to_vec(),
            Family::Sgemm => sgemm::ALL.to_vec(),
            Family::Reduce => vec![&reduce::sum_partials_f32::KERNEL, &reduce::dot_partials_f32::KERNEL],
            Family::Map => map::ALL.to_vec(),
            Family::Stencil => stencil::ALL.to_vec(),
            Family::Hgemm => hgemm::all().collect(),
            Family::Softmax => softmax::ALL.to_vec(),
            Family::Norm => norm::ALL.to_vec(),
            Family::Gemv => gemv::ALL.to_vec(),
        }
    }

    /// The shapes measured when none are given.
    pub fn default_sizes(self) -> Vec<Vec<(String, i64)>> {
        let shape = |pairs: &[(&str, i64)]| pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect::<Vec<_>>();
        match self {
            Family::Copy => vec![shape(&[("N", 1 << 24)]), shape(&[("N", 1 << 28)])],
            Family::Transpose => vec![
                shape(&[("R", 4096), ("C", 4096)]),
                shape(&[("R", 4095), ("C", 4097)]),
                shape(&[("R", 16384), ("C", 16384)]),
            ],
            Family::Sgemm | Family::Hgemm => [1024, 2048, 4096, 8192]
                .iter()
                .map(|&s| shape(&[("M", s), ("N", s), ("K", s)]))
                .chain([
                    shape(&[("M", 4095), ("N", 4095), ("K", 4095)]),
                    shape(&[("M", 4097), ("N", 4097), ("K", 4097)]),
                    shape(&[("M", 8192), ("N", 8192), ("K", 256)]),
                ])
                .collect(),
            Family::Reduce => vec![shape(&[("N", 1 << 24), ("P", 1024)]), shape(&[("N", 1 << 28), ("P", 1024)])],
            Family::Map => vec![shape(&[("N", 1 << 24)]), shape(&[("N", 1 << 28)])],
            // a square power of two and a tail in both dimensions; the residual's pass 1 with P
            Family::Stencil => vec![
                shape(&[("R", 8192), ("C", 8192)]),
                shape(&[("R", 8191), ("C", 8193)]),
                shape(&[("R", 8192), ("C", 8192), ("P", 1024)]),
            ],
            // the issue's shapes: square, a tail, many short rows, few long ones
            Family::Softmax => vec![
                shape(&[("R", 8192), ("C", 8192)]),
                shape(&[("R", 4096), ("C", 4097)]),
                shape(&[("R", 32768), ("C", 128)]),
                shape(&[("R", 16), ("C", 65536)]),
            ],
            Family::Norm => vec![shape(&[("R", 8192), ("C", 8192)]), shape(&[("R", 4096), ("C", 4097)])],
            Family::Gemv => vec![
                shape(&[("M", 8192), ("K", 8192)]),
                shape(&[("M", 4097), ("K", 4095)]),
                shape(&[("M", 8192), ("N", 8192)]),
                shape(&[("M", 4097), ("N", 4095)]),
            ],
        }
    }

    /// The elements of the device copy a memory-bound family is measured against: as many as
    /// its largest tensor holds.
    fn copied_elements(self, shape: &[(String, i64)]) -> usize {
        let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| (*v).max(0) as usize);
        match self {
            Family::Transpose | Family::Stencil | Family::Softmax | Family::Norm => value("R") * value("C"),
            Family::Gemv => value("M") * value("K").max(value("N")),
            _ => value("N"),
        }
    }

    /// (floating-point operations, compulsory bytes of global traffic) of `kernel` at `shape`;
    /// memory-bound families count no operations (their roof is bandwidth).
    pub fn work(self, kernel: &str, shape: &[(String, i64)]) -> (f64, f64) {
        let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(0.0, |(_, v)| *v as f64);
        match self {
            Family::Copy => (0.0, 2.0 * 4.0 * value("N")),
            Family::Transpose => (0.0, 2.0 * 4.0 * value("R") * value("C")),
            Family::Sgemm => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                (2.0 * m * n * k, 4.0 * (m * k + k * n + m * n))
            }
            // 16-bit A and B (f32 for the TF32 kernel), an f32 C
            Family::Hgemm => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                let input_bytes = if kernel.contains("tf32") { 4.0 } else { 2.0 };
                (2.0 * m * n * k, input_bytes * (m * k + k * n) + 4.0 * m * n)
            }
            // read once, and a partial per block written
            Family::Reduce => {
                (0.0, 4.0 * value("N") * if kernel.starts_with("dot") { 2.0 } else { 1.0 } + 4.0 * value("P"))
            }
            // saxpy reads x and y and writes y; the others read x and write y
            Family::Map => (0.0, 4.0 * value("N") * if kernel == "saxpy" { 3.0 } else { 2.0 }),
            // The Laplacian reads u once and writes out once (the halo re-reads hit in cache).
            // A row of gauss_seidel_red_black is one launch, one colour, half a sweep: f at
            // the colour's points, u at the other colour's (the neighbours) and u written at
            // the colour's, each half the grid, 6·R·C bytes in all. Those points are every
            // other float, so whole 32-byte sectors move and the hardware moves about twice
            // that; the percentage of the copy shows what the chessboard costs. The residual's
            // pass 1 reads f and u once and writes a partial per block.
            Family::Stencil => {
                let points = value("R") * value("C");
                match kernel {
                    "gauss_seidel_red_black" => (0.0, 6.0 * points),
                    "residual_partials" => (0.0, 8.0 * points + 4.0 * value("P")),
                    _ => (0.0, 8.0 * points),
                }
            }
            // x read once, y written once; the norms also read their weight (and bias) rows
            Family::Softmax => (0.0, 8.0 * value("R") * value("C")),
            Family::Norm => {
                let per_column = if kernel.starts_with("layer_norm") { 8.0 } else { 4.0 };
                (0.0, 8.0 * value("R") * value("C") + per_column * value("C"))
            }
            // A once, x, y once
            Family::Gemv => {
                let (m, other) = (value("M"), value("K").max(value("N")));
                (0.0, 4.0 * (m * other + m + other))
            }
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    pub families: Vec<Family>,
    /// Shapes given on the command line; each applies to the kernels whose shape symbols it names.
    pub sizes: Option<Vec<Vec<(String, i64)>>>,
    pub repetitions: usize,
    pub warmup: usize,
    pub flush_l2: bool,
    pub output: Output,
    pub svg_dir: Option<std::path::PathBuf>,
    /// The naive SGEMM is skipped above this extent (it takes seconds).
    pub naive_up_to: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Table,
    Json,
    Csv,
}

pub const USAGE: &str =
    "tessera bench [copy|transpose|sgemm|hgemm|reduce|map|stencil|softmax|norm|gemv ..] [--sizes \"N=268435456;R=4096,C=4096;M=4096,N=4096,K=4096\"] \
[--reps N] [--warmup N] [--no-flush] [--json | --csv] [--svg DIR] [--naive-up-to N]";

impl BenchOptions {
    /// Parses the arguments after `bench`.
    ///
    /// ```
    /// use tessera::bench::{BenchOptions, Family, Output};
    /// let args: Vec<String> = ["sgemm", "--sizes", "M=64,N=64,K=64", "--csv"].iter().map(|s| s.to_string()).collect();
    /// let options = BenchOptions::parse(&args).unwrap();
    /// assert_eq!(options.families, vec![Family::Sgemm]);
    /// assert_eq!(options.output, Output::Csv);
    /// assert_eq!(options.sizes.unwrap()[0].len(), 3);
    /// ```
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = BenchOptions {
            families: vec![],
            sizes: None,
            repetitions: 20,
            warmup: 3,
            flush_l2: true,
            output: Output::Table,
            svg_dir: None,
            naive_up_to: 2048,
        };
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let mut value = |name: &str| rest.next().cloned().ok_or(format!("{name} needs a value; usage: {USAGE}"));
            match arg.as_str() {
                family if Family::from_name(family).is_some() => options.families.extend(Family::from_name(family)),
                "--sizes" => options.sizes = Some(parse_sizes(&value("--sizes")?)?),
                "--reps" => options.repetitions = value("--reps")?.parse().map_err(|e| format!("--reps: {e}"))?,
                "--warmup" => options.warmup = value("--warmup")?.parse().map_err(|e| format!("--warmup: {e}"))?,
                "--naive-up-to" => {
                    options.naive_up_to = value("--naive-up-to")?.parse().map_err(|e| format!("--naive-up-to: {e}"))?
                }
                "--no-flush" => options.flush_l2 = false,
                "--json" => options.output = Output::Json,
                "--csv" => options.output = Output::Csv,
                "--svg" => options.svg_dir = Some(value("--svg")?.into()),
                other => return Err(format!("unknown argument `{other}`; usage: {USAGE}")),
            }
        }
        if options.repetitions == 0 {
            return Err("--reps must be at least 1".into());
        }
        if options.families.is_empty() {
            options.families = Family::ALL.to_vec();
        }
        Ok(options)
    }
}

/// `N=1024;M=64,N=64,K=64` → two shapes.
fn parse_sizes(text: &str) -> Result<Vec<Vec<(String, i64)>>, String> {
    text.split(';')
        .filter(|s| !s.trim().is_empty())
        .map(|shape| {
            shape
                .split(',')
                .map(|part| {
                    let (name, value) = part.split_once('=').ok_or(format!("`{part}`: expected NAME=VALUE"))?;
                    let value: i64 =
                        value.trim().parse().map_err(|_| format!("`{part}`: {value} is not an integer"))?;
                    if value < 0 {
                        return Err(format!("`{part}`: extents are not negative"));
                    }
                    Ok((name.trim().to_string(), value))
                })
                .collect()
        })
        .collect()
}

/// One kernel at one shape, beside its baseline.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchRow {
    pub family: String,
    pub kernel: String,
    pub shape: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// GB/s for memory-bound families, TFLOP/s for GEMM.
    pub value: f64,
    pub unit: String,
    pub baseline: String,
    pub baseline_value: f64,
    pub percent_of_baseline: f64,
    /// FLOP per byte of compulsory traffic (0 for copies).
    pub intensity: f64,
    /// The roof at this intensity, in `unit`: the measured copy bandwidth, or
    /// min(FP32 peak, intensity × that bandwidth).
    pub roofline: f64,
    pub percent_of_roofline: f64,
    pub vector: u32,
    pub tuned: bool,
}

/// Runs the benchmark on `gpu`; `progress` hears of each step (for stderr).
pub fn run(gpu: &Gpu, options: &BenchOptions, progress: &mut dyn FnMut(&str)) -> Result<Vec<BenchRow>, Error> {
    let flush = match (options.flush_l2, gpu.l2_bytes()) {
        (true, Some(bytes)) if bytes > 0 => {
            let elements = bytes / 4 * 2;
            Some((gpu.zeros::<f32>([elements])?, gpu.zeros::<f32>([elements])?))
        }
        _ => None,
    };
    let mut flush_state = flush;
    let mut flush = || match &mut flush_state {
        Some((from, to)) => gpu.copy(&*from, to),
        None => Ok(()),
    };
    let peak = gpu.fp32_peak_tflops().unwrap_or(f64::INFINITY);
    let tensor_peak = gpu.tensor_peak_tflops().unwrap_or(f64::INFINITY);
    let mut rows = Vec::new();
    let mut bandwidth = None;
    for family in &options.families {
        let sizes = options.sizes.clone().unwrap_or_else(|| family.default_sizes());
        for shape in sizes {
            let symbols: Vec<&str> = shape.iter().map(|(n, _)| n.as_str()).collect();
            let kernels: Vec<&'static KernelDefinition> = family
                .kernels()
                .into_iter()
                .filter(|k| family.measures(k, &shape))
                .filter(|k| {
                    k.ir().is_ok_and(|ir| {
                        let mut own = ir.shape_symbols();
                        own.sort();
                        let mut given = symbols.clone();
                        given.sort();
                        own == given
                    })
                })
                .collect();
            if kernels.is_empty() {
                continue;
            }
            let label = shape.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",");
            let mut baseline = Baseline::new(gpu, *family, &shape, None)?;
            // the baseline's own work: the copy moves N (or R × C) floats each way; cuBLAS is the GEMM
            let (baseline_flops, baseline_bytes) = match family {
                Family::Sgemm | Family::Hgemm | Family::Copy | Family::Transpose => family.work("", &shape),
                Family::Stencil => Family::Transpose.work("", &shape),
                Family::Reduce | Family::Map | Family::Softmax | Family::Norm | Family::Gemv => {
                    (0.0, 8.0 * family.copied_elements(&shape) as f64)
                }
            };
            for kernel in kernels {
                let (flops, bytes) = family.work(kernel.name(), &shape);
                let (unit, scale) = if flops > 0.0 { ("TFLOP/s", flops / 1e12) } else { ("GB/s", bytes / 1e9) };
                let largest = shape.iter().map(|(_, v)| *v).max().unwrap_or(0);
                if kernel.name() == "sgemm_naive" && largest > options.naive_up_to {
                    continue;
                }
                progress(&format!("{} at {label}", kernel.name()));
                if *family == Family::Hgemm {
                    // cuBLAS on the kernel's own input type (BF16 or F16)
                    baseline = Baseline::new(gpu, *family, &shape, Some(input_type(kernel)))?;
                }
                let mut measure = GpuMeasure::new(
                    gpu,
                    kernel,
                    &shape,
                    &[
                        ("alpha".into(), 1.0),
                        ("beta".into(), 0.0),
                        // the stencil family: h² at 8192 points a side, the red points
                        ("h2".into(), 1.5e-8),
                        ("colour".into(), 0.0),
                        // the norms
                        ("eps".into(), 1e-5),
                    ],
                )?;
                measure.warmup = options.warmup;
                measure.repetitions = options.repetitions;
                // timed in alternation with the baseline, which each row carries
                let (base, timing, launched) = measure.time_launch_beside(&mut flush, || baseline.run())?;
                let value = scale / (timing.median_ms * 1e-3);
                let baseline_value = if baseline_flops > 0.0 {
                    baseline_flops / 1e12 / (base.median_ms * 1e-3)
                } else {
                    let gb_per_s = baseline_bytes / 1e9 / (base.median_ms * 1e-3);
                    bandwidth = Some(bandwidth.map_or(gb_per_s, |b: f64| b.max(gb_per_s)));
                    gb_per_s
                };
                let intensity = if bytes > 0.0 { flops / bytes } else { 0.0 };
                rows.push(BenchRow {
                    family: family.name().into(),
                    kernel: kernel.name().into(),
                    shape: label.clone(),
                    median_ms: timing.median_ms,
                    min_ms: timing.min_ms,
                    max_ms: timing.max_ms,
                    value,
                    unit: unit.into(),
                    baseline: baseline.name().into(),
                    baseline_value,
                    percent_of_baseline: 100.0 * value / baseline_value,
                    intensity,
                    roofline: 0.0,
                    percent_of_roofline: 0.0,
                    vector: launched.vector.get(),
                    tuned: launched.tuned,
                });
            }
        }
    }
    // The roof uses the best copy bandwidth measured; a run without a memory-bound family
    // measures one copy of 2^26 floats for it.
    let bandwidth = match bandwidth {
        Some(bandwidth) => bandwidth,
        None if rows.is_empty() => 0.0,
        None => {
            progress("device copy for the roofline's bandwidth");
            let elements = 1usize << 26;
            let from: DeviceTensor<f32> = gpu.zeros([elements])?;
            let mut to: DeviceTensor<f32> = gpu.zeros([elements])?;
            let timing =
                gpu.time_flushed(options.warmup, options.repetitions, &mut flush, || gpu.copy(&from, &mut to))?;
            2.0 * 4.0 * elements as f64 / 1e9 / (timing.median_ms * 1e-3)
        }
    };
    for row in &mut rows {
        let compute = if row.family == "hgemm" { tensor_peak } else { peak };
        row.roofline = if row.unit == "GB/s" { bandwidth } else { compute.min(row.intensity * bandwidth / 1e3) };
        row.percent_of_roofline = 100.0 * row.value / row.roofline;
    }
    Ok(rows)
}

/// What a family's kernels are measured against, its tensors allocated once per shape and
/// filled like the kernels' own ([`measurement_value`]).
enum Baseline<'g> {
    /// `cuMemcpyDtoDAsync` of the same number of floats.
    Copy { gpu: &'g Gpu, from: DeviceTensor<f32>, to: DeviceTensor<f32> },
    /// cuBLAS SGEMM (pedantic FP32) of the same M, N, K.
    Sgemm { blas: crate::runtime::Cublas, a: DeviceTensor<f32>, b: DeviceTensor<f32>, c: DeviceTensor<f32> },
    /// cuBLAS `cublasGemmEx`, BF16 inputs, f32 compute and output.
    GemmBf16 {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::bf16>,
        b: DeviceTensor<half::bf16>,
        c: DeviceTensor<f32>,
    },
    /// cuBLAS SGEMM with TF32 tensor-core math (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    GemmTf32 { blas: crate::runtime::Cublas, a: DeviceTensor<f32>, b: DeviceTensor<f32>, c: DeviceTensor<f32> },
    /// cuBLAS `cublasGemmEx`, F16 inputs, f32 compute and output.
    GemmF16 {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::f16>,
        b: DeviceTensor<half::f16>,
        c: DeviceTensor<f32>,
    },
}

/// The element type of a kernel's first tensor parameter (an HGEMM's A).
fn input_type(kernel: &KernelDefinition) -> crate::dsl::ElementType {
    kernel
        .ir()
        .ok()
        .and_then(|ir| ir.params.iter().find_map(|p| p.tensor().map(|t| t.element)))
        .unwrap_or(crate::dsl::ElementType::BF16)
}

impl<'g> Baseline<'g> {
    fn new(
        gpu: &'g Gpu,
        family: Family,
        shape: &[(String, i64)],
        input: Option<crate::dsl::ElementType>,
    ) -> Result<Self, Error> {
        let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| (*v).max(0) as usize);
        let filled = |dims: &[usize]| -> Result<DeviceTensor<f32>, Error> {
            let len = dims.iter().product::<usize>();
            gpu.upload(&(0..len).map(|i| measurement_value(i) as f32).collect::<Vec<_>>(), dims)
        };
        match family {
            Family::Copy
            | Family::Transpose
            | Family::Reduce
            | Family::Map
            | Family::Stencil
            | Family::Softmax
            | Family::Norm
            | Family::Gemv => {
                let elements = family.copied_elements(shape);
                Ok(Baseline::Copy { gpu, from: filled(&[elements])?, to: gpu.zeros([elements])? })
            }
            Family::Sgemm => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                Ok(Baseline::Sgemm {
                    blas: gpu.cublas()?,
                    a: filled(&[m, k])?,
                    b: filled(&[k, n])?,
                    c: gpu.zeros([m, n])?,
                })
            }
            Family::Hgemm => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                let values = |len: usize| (0..len).map(measurement_value);
                Ok(match input {
                    Some(crate::dsl::ElementType::F32) => Baseline::GemmTf32 {
                        blas: gpu.cublas()?,
                        a: filled(&[m, k])?,
                        b: filled(&[k, n])?,
                        c: gpu.zeros([m, n])?,
                    },
                    Some(crate::dsl::ElementType::F16) => Baseline::GemmF16 {
                        blas: gpu.cublas()?,
                        a: gpu.upload(&values(m * k).map(half::f16::from_f64).collect::<Vec<_>>(), [m, k])?,
                        b: gpu.upload(&values(k * n).map(half::f16::from_f64).collect::<Vec<_>>(), [k, n])?,
                        c: gpu.zeros([m, n])?,
                    },
                    _ => Baseline::GemmBf16 {
                        blas: gpu.cublas()?,
                        a: gpu.upload(&values(m * k).map(half::bf16::from_f64).collect::<Vec<_>>(), [m, k])?,
                        b: gpu.upload(&values(k * n).map(half::bf16::from_f64).collect::<Vec<_>>(), [k, n])?,
                        c: gpu.zeros([m, n])?,
                    },
                })
            }
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Baseline::Copy { .. } => "device copy",
            Baseline::Sgemm { .. } => "cuBLAS",
            Baseline::GemmBf16 { .. } => "cuBLAS bf16",
            Baseline::GemmF16 { .. } => "cuBLAS f16",
            Baseline::GemmTf32 { .. } => "cuBLAS tf32",
        }
    }

    /// Queues one run.
    fn run(&mut self) -> Result<(), Error> {
        match self {
            Baseline::Copy { gpu, from, to } => gpu.copy(&*from, to),
            Baseline::Sgemm { blas, a, b, c } => blas.sgemm(1.0, &*a, &*b, 0.0, c),
            Baseline::GemmBf16 { blas, a, b, c } => blas.gemm_ex(1.0, &*a, &*b, 0.0, c),
            Baseline::GemmF16 { blas, a, b, c } => blas.gemm_ex(1.0, &*a, &*b, 0.0, c),
            Baseline::GemmTf32 { blas, a, b, c } => blas.sgemm_tf32(1.0, &*a, &*b, 0.0, c),
        }
    }
}

/// An aligned text table.
pub fn table(rows: &[BenchRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:<32} {:<24} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9}",
        "family", "kernel", "shape", "median ms", "spread %", "value", "of baseline", "of roof", "baseline"
    );
    for row in rows {
        let spread = if row.median_ms > 0.0 { 100.0 * (row.max_ms - row.min_ms) / row.median_ms } else { 0.0 };
        let name = if row.tuned { format!("{} (tuned)", row.kernel) } else { row.kernel.clone() };
        let _ = writeln!(
            out,
            "{:<10} {:<32} {:<24} {:>9.3} {:>9.1} {:>9.1} {:>10.1}% {:>8.1}% {:>9}",
            row.family,
            name,
            row.shape,
            row.median_ms,
            spread,
            row.value,
            row.percent_of_baseline,
            row.percent_of_roofline,
            row.baseline
        );
    }
    if let Some(first) = rows.first() {
        let _ = writeln!(
            out,
            "values in GB/s of compulsory traffic (read + written) for copy, transpose, reduce, map and stencil, TFLOP/s for sgemm and hgemm (whose roof is the dense tensor-core peak); \
             first baseline: {} at {:.1} {}",
            first.baseline, first.baseline_value, first.unit
        );
    }
    out
}

/// The rows as a JSON array of objects (the fields of [`BenchRow`]).
pub fn json(rows: &[BenchRow]) -> String {
    serde_json::to_string_pretty(rows).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The rows as CSV with a header line.
pub fn csv(rows: &[BenchRow]) -> String {
    let mut out = String::from("family,kernel,shape,median_ms,min_ms,max_ms,value,unit,baseline,baseline_value,percent_of_baseline,intensity,roofline,percent_of_roofline,vector,tuned\n");
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},\"{}\",{:.6},{:.6},{:.6},{:.3},{},{},{:.3},{:.2},{:.4},{:.3},{:.2},{},{}",
            r.family,
            r.kernel,
            r.shape,
            r.median_ms,
            r.min_ms,
            r.max_ms,
            r.value,
            r.unit,
            r.baseline,
            r.baseline_value,
            r.percent_of_baseline,
            r.intensity,
            r.roofline,
            r.percent_of_roofline,
            r.vector,
            r.tuned
        );
    }
    out
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
/// Room under the by-shape chart for its angled shape labels.
const LABELS: f64 = 70.0;
const COLORS: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A log-log roofline (TFLOP/s over FLOP/byte) with every GEMM row placed on it; the
/// memory-bound families do no arithmetic and are in the baseline charts instead.
pub fn roofline_svg(rows: &[BenchRow], peak_tflops: f64, bandwidth_gbs: f64) -> String {
    let (x_min, x_max, y_min) = (0.1f64, 1000.0f64, 0.1f64);
    let y_max = (peak_tflops * 2.0).max(1.0);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |v: f64| LEFT + (v.max(x_min).log10() - x_min.log10()) / (x_max.log10() - x_min.log10()) * plot_w;
    let y = |v: f64| TOP + plot_h - (v.max(y_min).log10() - y_min.log10()) / (y_max.log10() - y_min.log10()) * plot_h;
    let mut svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n");
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(svg, "<text x=\"{LEFT}\" y=\"22\" font-size=\"15\">Roofline: FP32 peak {peak_tflops:.1} TFLOP/s, copy bandwidth {bandwidth_gbs:.0} GB/s</text>");
    let _ = writeln!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#444\"/>"
    );
    for decade in [0.1, 1.0, 10.0, 100.0, 1000.0] {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{decade}</text>",
            x(decade),
            HEIGHT - BOTTOM + 18.0
        );
    }
    let mut tick = y_min;
    while tick <= y_max {
        let _ =
            writeln!(svg, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{tick}</text>", LEFT - 6.0, y(tick) + 4.0);
        tick *= 10.0;
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>",
        LEFT + plot_w / 2.0,
        HEIGHT - 12.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"16\" y=\"{:.1}\" transform=\"rotate(-90 16 {:.1})\" text-anchor=\"middle\">TFLOP/s</text>",
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    let ridge = peak_tflops * 1e3 / bandwidth_gbs.max(1e-9);
    let _ =
        writeln!(
        svg,
        "<polyline fill=\"none\" stroke=\"#000\" stroke-width=\"2\" points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\"/>",
        x(x_min), y(x_min * bandwidth_gbs / 1e3), x(ridge), y(peak_tflops), x(x_max), y(peak_tflops)
    );
    let kernels: Vec<&str> = dedup(rows.iter().filter(|r| r.unit == "TFLOP/s").map(|r| r.kernel.as_str()));
    for (index, kernel) in kernels.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        for row in rows.iter().filter(|r| r.kernel == *kernel && r.unit == "TFLOP/s") {
            let _ = writeln!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{color}\"><title>{} {}: {:.1} TFLOP/s</title></circle>",
                x(row.intensity), y(row.value), escape(kernel), escape(&row.shape), row.value
            );
        }
        let _ = writeln!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            WIDTH - RIGHT + 16.0,
            TOP + 10.0 + 18.0 * index as f64,
            WIDTH - RIGHT + 26.0,
            TOP + 14.0 + 18.0 * index as f64,
            escape(kernel)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// % of baseline by shape for one family: one line per kernel.
pub fn baseline_svg(rows: &[BenchRow], family: &str) -> String {
    let rows: Vec<&BenchRow> = rows.iter().filter(|r| r.family == family).collect();
    let shapes = dedup(rows.iter().map(|r| r.shape.as_str()));
    let kernels = dedup(rows.iter().map(|r| r.kernel.as_str()));
    let y_max = rows.iter().map(|r| r.percent_of_baseline).fold(100.0f64, f64::max).ceil() + 10.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM - LABELS;
    let x = |i: usize| LEFT + (i as f64 + 0.5) / shapes.len().max(1) as f64 * plot_w;
    let y = |v: f64| TOP + plot_h - v / y_max * plot_h;
    let baseline_name = rows.first().map_or("baseline", |r| r.baseline.as_str());
    let mut svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n");
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"{LEFT}\" y=\"22\" font-size=\"15\">{family}: % of {} by shape</text>",
        escape(baseline_name)
    );
    let _ = writeln!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#444\"/>"
    );
    let mut tick = 0.0;
    while tick <= y_max {
        let _ = writeln!(svg, "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{tick}%</text>", LEFT + plot_w, y(tick), y(tick), LEFT - 6.0, y(tick) + 4.0);
        tick += 20.0;
    }
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#000\" stroke-dasharray=\"4 3\"/>",
        LEFT + plot_w,
        y(100.0),
        y(100.0)
    );
    for (i, shape) in shapes.iter().enumerate() {
        let (label_x, label_y) = (x(i), TOP + plot_h + 14.0);
        let _ = writeln!(
            svg,
            "<text x=\"{label_x:.1}\" y=\"{label_y:.1}\" text-anchor=\"end\" font-size=\"10\" transform=\"rotate(-30 {label_x:.1} {label_y:.1})\">{}</text>",
            escape(shape)
        );
    }
    for (index, kernel) in kernels.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        let points: Vec<String> = shapes
            .iter()
            .enumerate()
            .filter_map(|(i, shape)| {
                rows.iter()
                    .find(|r| r.kernel == *kernel && r.shape == *shape)
                    .map(|r| format!("{:.1},{:.1}", x(i), y(r.percent_of_baseline)))
            })
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>",
            points.join(" "),
            escape(kernel)
        );
        let _ = writeln!(svg, "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>", WIDTH - RIGHT + 10.0, WIDTH - RIGHT + 24.0, TOP + 10.0 + 18.0 * index as f64, TOP + 10.0 + 18.0 * index as f64, WIDTH - RIGHT + 28.0, TOP + 14.0 + 18.0 * index as f64, escape(kernel));
    }
    svg.push_str("</svg>\n");
    svg
}

fn dedup<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}
