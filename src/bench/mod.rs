//! `tessera bench`: every catalog kernel beside its baseline in one run — cuBLAS SGEMM for
//! GEMM, the device-to-device copy of the same bytes for the memory-bound families — with
//! CUDA events, warm-up, the L2 cache flushed before every repetition (a copy of twice its size,
//! then a read of as much again, so it is left holding clean lines: the timed kernel does not
//! write back the flush's dirty ones), each kernel timed in
//! alternation with its baseline on the same inputs, medians and spread;
//! as a table, JSON or CSV, and SVG charts (a roofline, and % of baseline by size).

use std::fmt::Write as _;

mod charts;
pub use charts::{baseline_svg, roofline_svg, ChartError};

use crate::catalog::{attention, copy, epilogue, gemv, hgemm, map, norm, reduce, sgemm, softmax, stencil, transpose};
use crate::runtime::tune::{measurement_value, GpuMeasure};
use crate::{DeviceTensor, Error, Gpu, KernelDefinition};

/// A catalog family and the baseline it is measured against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Family {
    /// The copies, beside the device-to-device copy.
    Copy,
    /// The transposes, beside the copy of as many bytes.
    Transpose,
    /// SGEMM V1–V13, beside cuBLAS FP32.
    Sgemm,
    /// The reductions' first pass (the bandwidth-bound one): sum and dot partials.
    Reduce,
    /// Element-wise maps (saxpy, ..), beside the copy of the bytes they move.
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
    /// SGEMMs with a fused epilogue (bias + GELU, bias + ReLU + residual) and the plain V13,
    /// beside cuBLAS SGEMM followed by the separate `bias_gelu_f32` kernel.
    Epilogue,
    /// Fused attention forward (BF16) and `attention::backward`, beside a cuBLAS BF16 GEMM of
    /// 4096³ as the anchor that torch's figures (`benchmarks/attention_torch.py`) are paired with too.
    Attention,
}

impl Family {
    pub const ALL: [Family; 12] = [
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
        Family::Epilogue,
        Family::Attention,
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
            Family::Epilogue => "epilogue",
            Family::Attention => "attention",
        }
    }

    /// Whether `kernel` is measured at `shape`: a softmax or a norm only where
    /// `softmax::softmax` or `norm::layer_norm`/`rms_norm` would take it, every other kernel wherever its shape symbols are the given ones.
    fn measures(self, kernel: &KernelDefinition, shape: &[(String, i64)]) -> bool {
        let value = |name: &str| shape.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        match (self, value("C")) {
            // long rows: both passes of the chunked softmax (their shapes name S), and the
            // cluster kernel where a cluster holds the row (what `softmax` takes on sm_90)
            (Family::Softmax, Some(columns)) => {
                let columns = columns.max(0) as usize;
                match columns {
                    // block-per-row rows: the kernel `softmax` takes, and beside it the block
                    // that counts vectors from each row's start
                    1025..=8192 if kernel.name() == softmax::softmax_block_f32::NAME => true,
                    8193..=32768 if kernel.name() == softmax::softmax_block_wide_f32::NAME => true,
                    8193..=16384 if kernel.name() == softmax::softmax_aligned_wide_f32::NAME => true,
                    0..=32768 => softmax::kernel_for_columns(columns, false).name() == kernel.name(),
                    _ => {
                        kernel.name().starts_with("softmax_chunk")
                            || (columns <= softmax::CLUSTER_COLUMNS
                                && kernel.name() == softmax::softmax_cluster_f32::NAME)
                    }
                }
            }
            (Family::Norm, Some(columns)) => {
                norm::Width::for_columns(columns.max(0) as usize) == Some(norm::Width::of(kernel.name()))
            }
            // the kernels `attention::forward_on` takes for the head dim (BF16, causal and not,
            // mma.sync and wgmma)
            (Family::Attention, _) => {
                let head_dim = value("HD").unwrap_or(0).max(0) as usize;
                kernel.name().contains("bf16")
                    && attention::TensorCores::ALL.iter().any(|&cores| {
                        [false, true].iter().any(|&causal| {
                            attention::kernel_for::<half::bf16>(cores, head_dim, causal)
                                .is_ok_and(|k| k.name() == kernel.name())
                        })
                    })
            }
            _ => true,
        }
    }

    /// Whether `kernel` computes the family's result at `shape` at all (what a kernel named
    /// with `--kernels` is measured at): an attention kernel only at the head dims of its width
    /// (`D`, a smaller head dim zero-filled to it); any other kernel wherever its shape
    /// symbols are the given ones.
    fn computes(self, kernel: &KernelDefinition, shape: &[(String, i64)]) -> bool {
        match self {
            Family::Attention => {
                let head_dim = shape.iter().find(|(n, _)| n == "HD").map_or(0, |(_, v)| (*v).max(0) as usize);
                let width = attention::HEAD_DIMS.iter().find(|&&width| head_dim >= 1 && head_dim <= width);
                let own = kernel
                    .ir()
                    .ok()
                    .and_then(|ir| ir.config.constants.iter().find(|c| c.name == "D").map(|c| c.value.max(0) as usize));
                width.is_some() && width.copied() == own
            }
            _ => true,
        }
    }

    /// The catalog kernels the family measures.
    ///
    /// ```
    /// use tessera::bench::Family;
    /// assert!(Family::Hgemm.kernels().iter().any(|k| k.name() == "hgemm_v15_bf16"));
    /// ```
    pub fn kernels(self) -> Vec<&'static KernelDefinition> {
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
            Family::Attention => attention::ALL.to_vec(),
            Family::Epilogue => {
                vec![
                    &sgemm::sgemm_v12::KERNEL,
                    &sgemm::sgemm_v13::KERNEL,
                    &epilogue::sgemm_bias_gelu_stream_k::KERNEL,
                    &epilogue::sgemm_bias_gelu::KERNEL,
                    &epilogue::sgemm_bias_relu_residual::KERNEL,
                ]
            }
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
            Family::Sgemm | Family::Hgemm | Family::Epilogue => [1024, 2048, 4096, 8192]
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
            // (the colours stored apart: R × H with H = C / 2, the tail 8191 × 8194 points)
            Family::Stencil => vec![
                shape(&[("R", 8192), ("C", 8192)]),
                shape(&[("R", 8191), ("C", 8193)]),
                shape(&[("R", 8192), ("H", 4096)]),
                shape(&[("R", 8191), ("H", 4097)]),
                shape(&[("R", 8192), ("C", 8192), ("H", 4096)]),
                shape(&[("R", 8192), ("C", 8192), ("P", 1024)]),
                shape(&[("R", 8192), ("H", 4096), ("P", 1024)]),
            ],
            // the issue's shapes: square, a tail, many short rows, few long ones
            Family::Softmax => vec![
                shape(&[("R", 8192), ("C", 8192)]),
                shape(&[("R", 4096), ("C", 4097)]),
                shape(&[("R", 32768), ("C", 128)]),
                // 16 × 65536: the cluster kernel (what `softmax` takes on sm_90), and the chunked
                // softmax's two passes, 8 chunks a row
                shape(&[("R", 16), ("C", 65536)]),
                shape(&[("R", 16), ("C", 65536), ("S", 65536usize.div_ceil(softmax::CHUNK) as i64)]),
            ],
            Family::Norm => vec![shape(&[("R", 8192), ("C", 8192)]), shape(&[("R", 4096), ("C", 4097)])],
            // issue 16's: 16k tokens (batch · seq), 16 heads of 128 or 32 of 64
            Family::Attention => [(16, 128), (32, 64)]
                .iter()
                .flat_map(|&(heads, head_dim)| {
                    [512i64, 1024, 2048, 4096, 8192, 16384].map(|seq| {
                        shape(&[
                            ("B", 16384 / seq),
                            ("H", heads),
                            ("HKV", heads),
                            ("SQ", seq),
                            ("SKV", seq),
                            ("HD", head_dim),
                        ])
                    })
                })
                .collect(),
            Family::Gemv => vec![
                shape(&[("M", 8192), ("K", 8192)]),
                shape(&[("M", 4097), ("K", 4095)]),
                shape(&[("M", 8192), ("N", 8192)]),
                shape(&[("M", 4097), ("N", 4095)]),
                // fewer bands of 32 columns than SMs: gemv_t splits the rows, pass 1 then pass 2
                shape(&[("M", 8192), ("N", 3000)]),
                shape(&[("M", 8192), ("N", 3000), ("S", gemv::row_slices(8192, 3000) as i64)]),
                shape(&[("S", gemv::row_slices(8192, 3000) as i64), ("N", 3000)]),
            ],
        }
    }

    /// The elements of the device copy a memory-bound family is measured against: as many as
    /// its largest tensor holds.
    fn copied_elements(self, shape: &[(String, i64)]) -> usize {
        let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| (*v).max(0) as usize);
        match self {
            Family::Transpose | Family::Softmax | Family::Norm => value("R") * value("C"),
            // a grid, or one colour of it
            Family::Stencil => value("R") * if value("C") > 0 { value("C") } else { value("H") },
            Family::Gemv => (value("M") * value("K").max(value("N"))).max(value("S") * value("N")),
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
            // the GEMM's, and the bias (and the residual) read by the epilogue
            Family::Epilogue => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                let residual = if kernel.contains("residual") { m * n } else { 0.0 };
                (2.0 * m * n * k, 4.0 * (m * k + k * n + m * n + n + residual))
            }
            // 16-bit A and B (f32 for the TF32 kernel), an f32 C (16-bit for the `_to_` kernels)
            Family::Hgemm => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                let input_bytes = if kernel.contains("tf32") { 4.0 } else { 2.0 };
                let output_bytes = if kernel.contains("_to_") { 2.0 } else { 4.0 };
                (2.0 * m * n * k, input_bytes * (m * k + k * n) + output_bytes * m * n)
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
            // that; the percentage of the copy shows what the chessboard costs. With the
            // colours stored apart (R × H each) the same colour moves f, the other colour and
            // its own, 12·R·H bytes, and nothing else. The residuals' pass 1 reads f and u
            // once and writes a partial per block; splitting and merging move the grid once
            // each way.
            Family::Stencil => {
                let (points, colour_points) = (value("R") * value("C"), value("R") * value("H"));
                match kernel {
                    "gauss_seidel_red_black" => (0.0, 6.0 * points),
                    "gauss_seidel_colour" => (0.0, 12.0 * colour_points),
                    "residual_partials" => (0.0, 8.0 * points + 4.0 * value("P")),
                    "residual_split_partials" => (0.0, 16.0 * colour_points + 4.0 * value("P")),
                    "split_red_black" | "merge_red_black" => (0.0, 4.0 * points + 8.0 * colour_points),
                    _ => (0.0, 8.0 * points),
                }
            }
            // x read once, y written once; the norms also read their weight (and bias) rows
            // (the chunked softmax: pass 1 reads x, pass 2 reads x and writes y, each with the
            // chunks' statistics)
            Family::Softmax => {
                let statistics = 8.0 * value("R") * value("S");
                match kernel {
                    "softmax_chunk_stats_f32" => (0.0, 4.0 * value("R") * value("C") + statistics),
                    "softmax_chunk_write_f32" => (0.0, 8.0 * value("R") * value("C") + statistics),
                    _ => (0.0, 8.0 * value("R") * value("C")),
                }
            }
            // (2 bytes an element for the bf16 and f16 kernels)
            Family::Norm => {
                let size = if kernel.ends_with("f16") { 2.0 } else { 4.0 };
                let rows_per_column = if kernel.starts_with("layer_norm") { 2.0 } else { 1.0 };
                (0.0, size * (2.0 * value("R") * value("C") + rows_per_column * value("C")))
            }
            // 4 · SQ · SKV · HD per (batch, head) (two GEMMs), half of it under a causal mask;
            // Q, K, V read and O written once (2 bytes each), the log-sum-exp (4)
            Family::Attention => {
                let (batch, heads, kv_heads) = (value("B"), value("H"), value("HKV"));
                let (seq_q, seq_kv, head_dim) = (value("SQ"), value("SKV"), value("HD"));
                let causal = if kernel.contains("causal") { 0.5 } else { 1.0 };
                let flops = 4.0 * seq_q * seq_kv * head_dim * heads * batch * causal;
                let bytes = 2.0 * batch * head_dim * (2.0 * heads * seq_q + 2.0 * kv_heads * seq_kv)
                    + 4.0 * batch * heads * seq_q;
                (flops, bytes)
            }
            // A once, x, y once
            // (pass 1 of the row-split Aᵀ·x also writes S partial rows; pass 2 reads them)
            Family::Gemv => match kernel {
                "gemv_t_finish_f32" => (0.0, 4.0 * (value("S") * value("N") + value("N"))),
                _ => {
                    let (m, other) = (value("M"), value("K").max(value("N")));
                    (0.0, 4.0 * (m * other + m + other + value("S") * other))
                }
            },
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
    /// Only the kernels of these names (every kernel of the families when `None`).
    pub kernels: Option<Vec<String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Table,
    Json,
    Csv,
}

impl Default for BenchOptions {
    /// Every family at its default sizes, 20 repetitions after 3 warm-ups, L2 flushed, a table.
    fn default() -> Self {
        BenchOptions {
            families: Family::ALL.to_vec(),
            sizes: None,
            repetitions: 20,
            warmup: 3,
            flush_l2: true,
            output: Output::Table,
            svg_dir: None,
            naive_up_to: 2048,
            kernels: None,
        }
    }
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

/// A step of [`run`]: `done` of `of` measurements taken, `step` the next one.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    pub done: usize,
    pub of: usize,
    pub step: &'a str,
}

/// Runs the benchmark on `gpu`; `progress` hears of each step (for a progress bar on stderr).
pub fn run(gpu: &Gpu, options: &BenchOptions, progress: &mut dyn FnMut(Progress<'_>)) -> Result<Vec<BenchRow>, Error> {
    // The flush copies twice the L2's bytes, which leaves it full of the copy's dirty lines, then
    // reads the copy's source again, which writes them back (untimed) and leaves clean ones:
    // otherwise the timed kernel pays for writing back up to an L2 of someone else's data (5.7 µs
    // of sum_partials_f32's 24.7 at 2^24 elements on an H200, BENCHMARKS.md).
    let flush = match (options.flush_l2, gpu.l2_bytes()) {
        (true, Some(bytes)) if bytes > 0 => {
            let elements = bytes / 4 * 2;
            Some((gpu.zeros::<f32>([elements])?, gpu.zeros::<f32>([elements])?, gpu.zeros::<f32>([reduce::PARTIALS])?))
        }
        _ => None,
    };
    let mut flush_state = flush;
    let mut flush = || match &mut flush_state {
        Some((from, to, partials)) => {
            gpu.copy(&*from, to)?;
            reduce::sum_partials_f32::launch(gpu, &*from, partials).map(|_| ())
        }
        None => Ok(()),
    };
    let peak = gpu.fp32_peak_tflops().unwrap_or(f64::INFINITY);
    let tensor_peak = gpu.tensor_peak_tflops().unwrap_or(f64::INFINITY);
    // Planned first, so that the progress knows how many measurements there are.
    let mut plan: Vec<(Family, Vec<(String, i64)>, Vec<&'static KernelDefinition>)> = Vec::new();
    for family in &options.families {
        for shape in options.sizes.clone().unwrap_or_else(|| family.default_sizes()) {
            let mut given: Vec<&str> = shape.iter().map(|(n, _)| n.as_str()).collect();
            given.sort();
            let largest = shape.iter().map(|(_, v)| *v).max().unwrap_or(0);
            let kernels: Vec<&'static KernelDefinition> = family
                .kernels()
                .into_iter()
                // a kernel named with `--kernels` is measured even where the family's entry
                // point would take another for the shape, wherever it can compute it
                .filter(|k| {
                    family.measures(k, &shape)
                        || (options.kernels.as_ref().is_some_and(|names| names.iter().any(|name| name == k.name()))
                            && family.computes(k, &shape))
                })
                .filter(|k| {
                    k.ir().is_ok_and(|ir| {
                        let mut own = ir.shape_symbols();
                        own.sort();
                        own == given
                    })
                })
                .filter(|k| !(k.name() == "sgemm_naive" && largest > options.naive_up_to))
                .filter(|k| options.kernels.as_ref().is_none_or(|names| names.iter().any(|name| name == k.name())))
                .collect();
            if !kernels.is_empty() {
                plan.push((*family, shape, kernels));
            }
        }
    }
    // the hgemm family also times `tessera::gemm` on BF16 and F16 at each shape
    let entry_points = |family: Family, shape: &[(String, i64)]| match family {
        Family::Hgemm => ENTRY_POINT_INPUTS.len(),
        // attention::backward, non-causal and causal, and on Hopper mma.sync's beside it
        Family::Attention => 2 * backward_tensor_cores(gpu, shape).len(),
        // gemv::gemv_t, every pass it takes, at an Aᵀ·x shape
        Family::Gemv => usize::from(is_transposed_gemv_shape(shape)),
        // tessera::gemm_bias_gelu, the fused kernel it picks for the shape
        Family::Epilogue => 1,
        _ => 0,
    };
    let tf32_entry_rows = |kernels: &[&'static KernelDefinition]| usize::from(kernels.iter().any(|k| is_tf32_wgmma(k)));
    let of = plan
        .iter()
        .map(|(family, shape, kernels)| kernels.len() + entry_points(*family, shape) + tf32_entry_rows(kernels))
        .sum::<usize>();
    let mut done = 0;
    let mut rows = Vec::new();
    let mut bandwidth = None;
    for (family, shape, kernels) in plan {
        let label = shape.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",");
        let mut baseline = Baseline::new(gpu, family, &shape, None, crate::dsl::ElementType::F32)?;
        // the baseline's own work: the copy moves N (or R × C) floats each way; cuBLAS is the GEMM
        let (baseline_flops, baseline_bytes) = match family {
            Family::Sgemm | Family::Hgemm | Family::Copy | Family::Transpose | Family::Epilogue => {
                family.work("", &shape)
            }
            Family::Attention => Family::Hgemm.work("", &ATTENTION_ANCHOR.map(|(n, v)| (n.to_string(), v))),
            Family::Reduce | Family::Map | Family::Stencil | Family::Softmax | Family::Norm | Family::Gemv => {
                (0.0, 8.0 * family.copied_elements(&shape) as f64)
            }
        };
        let tf32_entry_point = family == Family::Hgemm && kernels.iter().any(|k| is_tf32_wgmma(k));
        for kernel in kernels {
            let (flops, bytes) = family.work(kernel.name(), &shape);
            let (unit, scale) = if flops > 0.0 { ("TFLOP/s", flops / 1e12) } else { ("GB/s", bytes / 1e9) };
            progress(Progress { done, of, step: &format!("{} at {label}", kernel.name()) });
            done += 1;
            if family == Family::Hgemm {
                // cuBLAS on the kernel's own input type (BF16 or F16)
                baseline = Baseline::new(gpu, family, &shape, Some(input_type(kernel)), output_type(kernel))?;
            }
            if family == Family::Hgemm && through_aligned_copies(kernel, &shape) {
                // a TMA kernel on rows TMA cannot read copies element by element: what runs it
                // at full width is the aligned copies of `tessera::gemm`, timed with them
                let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
                let dims = [value("M"), value("N"), value("K")];
                let (base, timing, launched) =
                    time_gemm(input_type(kernel), Some(kernel), gpu, options, dims, &mut flush, &mut baseline)?;
                let baseline_tflops = baseline_flops / 1e12 / (base.median_ms * 1e-3);
                rows.push(entry_point_row(
                    family,
                    format!("{} (aligned copies)", kernel.name()),
                    &label,
                    (flops, bytes),
                    &timing,
                    (baseline.name(), baseline_tflops),
                    &launched,
                ));
                continue;
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
                    // the grid's columns where its colours are stored apart (H = ⌈C / 2⌉)
                    ("cols".into(), grid_columns(&shape)),
                    // the norms
                    ("eps".into(), 1e-5),
                    // attention: 1/√head_dim in log2 units
                    ("scale_log2".into(), attention_scale_log2(&shape)),
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
        if tf32_entry_point {
            // what a B stored [K, N] runs: B as it is where TMA reads its rows, else a
            // transposed copy first, timed with it
            let name = "hgemm::gemm_tf32_wgmma (B [K, N])";
            progress(Progress { done, of, step: &format!("{name} at {label}") });
            done += 1;
            baseline =
                Baseline::new(gpu, family, &shape, Some(crate::dsl::ElementType::F32), crate::dsl::ElementType::F32)?;
            let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
            let (flops, bytes) = family.work("gemm_tf32", &shape);
            let (base, timing, launched) =
                time_tf32_entry_point(gpu, options, [value("M"), value("N"), value("K")], &mut flush, &mut baseline)?;
            let baseline_tflops = baseline_flops / 1e12 / (base.median_ms * 1e-3);
            rows.push(entry_point_row(
                family,
                name.into(),
                &label,
                (flops, bytes),
                &timing,
                (baseline.name(), baseline_tflops),
                &launched,
            ));
        }
        if family == Family::Gemv && is_transposed_gemv_shape(&shape) {
            // what a user's Aᵀ·x runs: the row-split passes where gemv_t takes them, timed together
            let name = "gemv::gemv_t (every pass)";
            progress(Progress { done, of, step: &format!("{name} at {label}") });
            done += 1;
            let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
            let (base, timing, launched) =
                time_gemv_t_entry_point(gpu, options, [value("M"), value("N")], &mut flush, &mut baseline)?;
            let copy_gb_per_s = baseline_bytes / 1e9 / (base.median_ms * 1e-3);
            rows.push(entry_point_row(
                family,
                name.into(),
                &label,
                family.work("gemv_t_f32", &shape),
                &timing,
                (baseline.name(), copy_gb_per_s),
                &launched,
            ));
        }
        if family == Family::Epilogue {
            // what a user's C = GELU(α·A·B + bias) runs: fused into V13, or a GEMM and bias_gelu_f32
            progress(Progress { done, of, step: &format!("tessera::gemm_bias_gelu at {label}") });
            done += 1;
            let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
            let (flops, bytes) = family.work("sgemm_bias_gelu", &shape);
            let dims = [value("M"), value("N"), value("K")];
            let plan = crate::gemm_dispatch::choose_bias_gelu(gpu, &[dims[0], dims[2]], &[dims[2], dims[1]])
                .map_err(gemm_error)?;
            let (base, timing, launched) =
                time_gemm_bias_gelu_entry_point(gpu, options, dims, &mut flush, &mut baseline)?;
            let baseline_tflops = baseline_flops / 1e12 / (base.median_ms * 1e-3);
            rows.push(entry_point_row(
                family,
                format!("tessera::gemm_bias_gelu ({})", plan.describe()),
                &label,
                (flops, bytes),
                &timing,
                (baseline.name(), baseline_tflops),
                &launched,
            ));
        }
        if family == Family::Attention {
            let cores = attention::TensorCores::of(gpu);
            let backward_cores = backward_tensor_cores(gpu, &shape);
            for (causal, on) in [false, true].into_iter().flat_map(|c| backward_cores.iter().map(move |&on| (c, on))) {
                let name = format!(
                    "attention::backward{} (bf16{})",
                    if on == cores { "" } else { " on mma.sync" },
                    if causal { ", causal" } else { "" }
                );
                progress(Progress { done, of, step: &format!("{name} at {label}") });
                done += 1;
                let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
                let dims = [value("B"), value("H"), value("HKV"), value("SQ"), value("SKV"), value("HD")];
                let (base, timing, launched) =
                    time_attention_backward(gpu, options, dims, causal, on, &mut flush, &mut baseline)?;
                // FlashAttention's count: the backward's five GEMMs, 2.5 times the forward's two
                let (forward_flops, bytes) = family.work(if causal { "causal" } else { "" }, &shape);
                let flops = 2.5 * forward_flops;
                let baseline_tflops = baseline_flops / 1e12 / (base.median_ms * 1e-3);
                rows.push(entry_point_row(
                    family,
                    name,
                    &label,
                    (flops, bytes),
                    &timing,
                    (baseline.name(), baseline_tflops),
                    &launched,
                ));
            }
        }
        let gemm_inputs: &[crate::dsl::ElementType] = if family == Family::Hgemm { &ENTRY_POINT_INPUTS } else { &[] };
        for &input in gemm_inputs {
            let name = format!("tessera::gemm ({input})");
            progress(Progress { done, of, step: &format!("{name} at {label}") });
            done += 1;
            baseline = Baseline::new(gpu, family, &shape, Some(input), crate::dsl::ElementType::F32)?;
            let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
            let (m, n, k) = (value("M"), value("N"), value("K"));
            let (flops, bytes) = family.work("", &shape);
            let (base, timing, launched) = time_gemm(input, None, gpu, options, [m, n, k], &mut flush, &mut baseline)?;
            let baseline_tflops = flops / 1e12 / (base.median_ms * 1e-3);
            rows.push(entry_point_row(
                family,
                name,
                &label,
                (flops, bytes),
                &timing,
                (baseline.name(), baseline_tflops),
                &launched,
            ));
        }
    }
    // The roof uses the best copy bandwidth measured; a run without a memory-bound family
    // measures one copy of 2^26 floats for it.
    let bandwidth = match bandwidth {
        Some(bandwidth) => bandwidth,
        None if rows.is_empty() => 0.0,
        None => {
            progress(Progress { done, of, step: "device copy for the roofline's bandwidth" });
            let elements = 1usize << 26;
            let from: DeviceTensor<f32> = gpu.zeros([elements])?;
            let mut to: DeviceTensor<f32> = gpu.zeros([elements])?;
            let timing =
                gpu.time_flushed(options.warmup, options.repetitions, &mut flush, || gpu.copy(&from, &mut to))?;
            2.0 * 4.0 * elements as f64 / 1e9 / (timing.median_ms * 1e-3)
        }
    };
    for row in &mut rows {
        let compute = if row.family == "hgemm" || row.family == "attention" { tensor_peak } else { peak };
        row.roofline = if row.unit == "GB/s" { bandwidth } else { compute.min(row.intensity * bandwidth / 1e3) };
        row.percent_of_roofline = 100.0 * row.value / row.roofline;
    }
    Ok(rows)
}

/// Whether the hgemm bench times `kernel` at `shape` through aligned copies of A and B: a TMA
/// kernel with 16-bit inputs and an f32 C, at a shape whose rows of A (K) or B (N) are not a
/// multiple of 16 bytes.
fn through_aligned_copies(kernel: &KernelDefinition, shape: &[(String, i64)]) -> bool {
    let unaligned = |name: &str| shape.iter().any(|(n, v)| n == name && v % 8 != 0);
    let tma = kernel.ir().is_ok_and(|ir| ir.copies_by_tma());
    tma && input_type(kernel).is_half()
        && output_type(kernel) == crate::dsl::ElementType::F32
        && (unaligned("K") || unaligned("N"))
}

/// The GEMM attention rows are paired with: a shape-independent anchor, so the ratios of
/// tessera's and torch's attention (each beside the same GEMM) compare across runs.
const ATTENTION_ANCHOR: [(&str, i64); 3] = [("M", 4096), ("N", 4096), ("K", 4096)];

/// 1/√head_dim in log2 units, the `scale_log2` `attention::forward` passes.
fn attention_scale_log2(shape: &[(String, i64)]) -> f64 {
    let head_dim = shape.iter().find(|(n, _)| n == "HD").map_or(1, |(_, v)| (*v).max(1));
    std::f64::consts::LOG2_E / (head_dim as f64).sqrt()
}

/// The column count of the stencil grid at `shape`: C, or 2·H where only the colours' width is
/// given (an even grid; an odd C has the same H).
fn grid_columns(shape: &[(String, i64)]) -> f64 {
    let value = |name: &str| shape.iter().find(|(n, _)| n == name).map(|(_, v)| *v as f64);
    value("C").or(value("H").map(|h| 2.0 * h)).unwrap_or(0.0)
}

/// What a family's kernels are measured against, its tensors allocated once per shape and
/// filled like the kernels' own ([`measurement_value`]).
enum Baseline<'g> {
    /// `cuMemcpyDtoDAsync` of the same number of floats.
    Copy { gpu: &'g Gpu, from: DeviceTensor<f32>, to: DeviceTensor<f32> },
    /// cuBLAS SGEMM (pedantic FP32) of the same M, N, K.
    Sgemm { blas: crate::runtime::Cublas, a: DeviceTensor<f32>, b: DeviceTensor<f32>, c: DeviceTensor<f32> },
    /// cuBLAS SGEMM, then `bias_gelu_f32` on its C: what a fused epilogue saves.
    SgemmThenBiasGelu {
        gpu: &'g Gpu,
        blas: crate::runtime::Cublas,
        a: DeviceTensor<f32>,
        b: DeviceTensor<f32>,
        bias: DeviceTensor<f32>,
        c: DeviceTensor<f32>,
    },
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
    /// cuBLAS `cublasGemmEx`, BF16 inputs and output, f32 compute (torch's `a @ b`).
    GemmBf16ToBf16 {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::bf16>,
        b: DeviceTensor<half::bf16>,
        c: DeviceTensor<half::bf16>,
    },
    /// cuBLAS `cublasGemmEx`, F16 inputs and output, f32 compute.
    GemmF16ToF16 {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::f16>,
        b: DeviceTensor<half::f16>,
        c: DeviceTensor<half::f16>,
    },
}

/// The input types whose `tessera::gemm` the hgemm family times beside the kernels.
const ENTRY_POINT_INPUTS: [crate::dsl::ElementType; 2] = [crate::dsl::ElementType::BF16, crate::dsl::ElementType::F16];

/// [`time_gemm_entry_point`] on F16 inputs where `input` says so, else BF16.
fn time_gemm(
    input: crate::dsl::ElementType,
    kernel: Option<&'static KernelDefinition>,
    gpu: &Gpu,
    options: &BenchOptions,
    dims: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<(crate::runtime::Timing, crate::runtime::Timing, crate::Launched), Error> {
    match input {
        crate::dsl::ElementType::F16 => {
            time_gemm_entry_point(kernel, gpu, half::f16::from_f64, options, dims, flush, baseline)
        }
        _ => time_gemm_entry_point(kernel, gpu, half::bf16::from_f64, options, dims, flush, baseline),
    }
}

/// Times [`crate::gemm`] — the kernel it picks and, for rows that are not 16-byte aligned,
/// its copies into aligned buffers and back, all inside the timed region — in alternation
/// with `baseline`: (baseline, gemm, the GEMM's launch). With `kernel`, that kernel through
/// [`crate::gemm_dispatch::gemm_through_aligned_copies_with`] instead.
fn time_gemm_entry_point<T: crate::gemm_dispatch::GemmInput>(
    kernel: Option<&'static KernelDefinition>,
    gpu: &Gpu,
    convert: fn(f64) -> T,
    options: &BenchOptions,
    [m, n, k]: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<(crate::runtime::Timing, crate::runtime::Timing, crate::Launched), Error> {
    let values = |len: usize| (0..len).map(|i| convert(measurement_value(i))).collect::<Vec<_>>();
    let a = gpu.upload(&values(m * k), [m, k])?;
    let b = gpu.upload(&values(k * n), [k, n])?;
    let mut c = gpu.zeros::<f32>([m, n])?;
    time_entry_point(gpu, options, flush, baseline, "gemm", || {
        let launched = match kernel {
            Some(kernel) => {
                crate::gemm_dispatch::gemm_through_aligned_copies_with(kernel, gpu, &a, &b, &mut c, 1.0, 0.0)
            }
            None => crate::gemm(gpu, &a, &b, &mut c, 1.0, 0.0),
        };
        launched.map_err(gemm_error)
    })
}

/// A GEMM entry point's error as the bench's: a launch's as it is, a table's or a shape's in words.
fn gemm_error(error: crate::gemm_dispatch::GemmError) -> Error {
    match error {
        crate::gemm_dispatch::GemmError::Launch(error) => error,
        other => Error::Ir { kernel: "gemm".into(), message: other.to_string() },
    }
}

/// Whether `kernel` is one of the TF32 wgmma kernels (on Bᵀ or on B as stored), beside which the
/// hgemm bench times [`hgemm::gemm_tf32_wgmma`].
fn is_tf32_wgmma(kernel: &KernelDefinition) -> bool {
    hgemm::ALL_TF32_TRANSPOSED_B.iter().chain(&hgemm::ALL_TF32_WGMMA_KN).any(|k| k.name() == kernel.name())
}

/// Times [`hgemm::gemm_tf32_wgmma`] on B stored [K, N] (multiplied as it is, or transposed into a
/// scratch copy first, the copy inside the timed region), in alternation with `baseline`.
fn time_tf32_entry_point(
    gpu: &Gpu,
    options: &BenchOptions,
    [m, n, k]: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<(crate::runtime::Timing, crate::runtime::Timing, crate::Launched), Error> {
    let values = |len: usize| (0..len).map(|i| measurement_value(i) as f32).collect::<Vec<_>>();
    let a = gpu.upload(&values(m * k), [m, k])?;
    let b = gpu.upload(&values(k * n), [k, n])?;
    let mut c = gpu.zeros::<f32>([m, n])?;
    time_entry_point(gpu, options, flush, baseline, "gemm_tf32_wgmma", || {
        hgemm::gemm_tf32_wgmma(gpu, &a, &b, &mut c, 1.0, 0.0)
    })
}

/// Whether `shape` is one of y = Aᵀ·x (M and N, no slices given).
fn is_transposed_gemv_shape(shape: &[(String, i64)]) -> bool {
    let has = |name: &str| shape.iter().any(|(n, _)| n == name);
    has("M") && has("N") && !has("S")
}

/// `gemv::gemv_t` (both passes where it splits the rows) timed beside `baseline`: (baseline,
/// gemv_t, its last launch).
fn time_gemv_t_entry_point(
    gpu: &Gpu,
    options: &BenchOptions,
    [m, n]: [usize; 2],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<(crate::runtime::Timing, crate::runtime::Timing, crate::Launched), Error> {
    let values = |len: usize| (0..len).map(|i| measurement_value(i) as f32).collect::<Vec<_>>();
    let a = gpu.upload(&values(m * n), [m, n])?;
    let x = gpu.upload(&values(m), [m])?;
    let mut y = gpu.zeros::<f32>([n])?;
    time_entry_point(gpu, options, flush, baseline, "gemv_t", || gemv::gemv_t(gpu, &a, &x, &mut y))
}

/// `tessera::gemm_bias_gelu` timed beside `baseline`: (baseline, the entry point, its launch).
fn time_gemm_bias_gelu_entry_point(
    gpu: &Gpu,
    options: &BenchOptions,
    [m, n, k]: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<(crate::runtime::Timing, crate::runtime::Timing, crate::Launched), Error> {
    let values = |len: usize| (0..len).map(|i| measurement_value(i) as f32).collect::<Vec<_>>();
    let a = gpu.upload(&values(m * k), [m, k])?;
    let b = gpu.upload(&values(k * n), [k, n])?;
    let bias = gpu.upload(&values(n), [n])?;
    let mut c = gpu.zeros::<f32>([m, n])?;
    time_entry_point(gpu, options, flush, baseline, "gemm_bias_gelu", || {
        crate::gemm_bias_gelu(gpu, &a, &b, &bias, &mut c, 1.0).map_err(gemm_error)
    })
}

/// Times `entry_point` (all of its launches inside the timed region) in alternation with
/// `baseline`: (baseline, entry point, its last launch). `name` names it where no repetition ran.
fn time_entry_point(
    gpu: &Gpu,
    options: &BenchOptions,
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
    name: &str,
    mut entry_point: impl FnMut() -> Result<crate::Launched, Error>,
) -> Result<(crate::runtime::Timing, crate::runtime::Timing, crate::Launched), Error> {
    let mut last = None;
    let (base, timing) = gpu.time_paired(
        options.warmup,
        options.repetitions,
        flush,
        || baseline.run(),
        || {
            last = Some(entry_point()?);
            Ok(())
        },
    )?;
    let launched = last.ok_or_else(|| Error::Ir { kernel: name.into(), message: "no repetition ran".into() })?;
    Ok((base, timing, launched))
}

/// The row of an entry point timed as a whole (`tessera::gemm`, `attention::backward`,
/// `gemv::gemv_t`): `work` is its (flops, bytes), `baseline` the name and value of what it was
/// timed beside — TFLOP/s, or GB/s for a memory-bound one (no flops counted).
fn entry_point_row(
    family: Family,
    kernel: String,
    shape: &str,
    (flops, bytes): (f64, f64),
    timing: &crate::runtime::Timing,
    (baseline, baseline_value): (&str, f64),
    launched: &crate::Launched,
) -> BenchRow {
    let (unit, scale) = if flops > 0.0 { ("TFLOP/s", flops / 1e12) } else { ("GB/s", bytes / 1e9) };
    let value = scale / (timing.median_ms * 1e-3);
    BenchRow {
        family: family.name().into(),
        kernel,
        shape: shape.into(),
        median_ms: timing.median_ms,
        min_ms: timing.min_ms,
        max_ms: timing.max_ms,
        value,
        unit: unit.into(),
        baseline: baseline.into(),
        baseline_value,
        percent_of_baseline: 100.0 * value / baseline_value,
        intensity: flops / bytes,
        roofline: 0.0,
        percent_of_roofline: 0.0,
        vector: launched.vector.get(),
        tuned: launched.tuned,
    }
}

/// The tensor cores `attention::backward` rows are timed on at an attention shape: what
/// `attention::backward` runs on `gpu`, and on Hopper mma.sync's beside it, each where its
/// backward has kernels for the shape's head dim (the forward goes further).
fn backward_tensor_cores(gpu: &Gpu, shape: &[(String, i64)]) -> Vec<attention::TensorCores> {
    let head_dim = shape.iter().find(|(n, _)| n == "HD").map_or(0, |(_, v)| (*v).max(0) as usize);
    let cores = match attention::TensorCores::of(gpu) {
        attention::TensorCores::MmaSync => vec![attention::TensorCores::MmaSync],
        cores => vec![cores, attention::TensorCores::MmaSync],
    };
    cores.into_iter().filter(|&on| attention::backward_kernels_for::<half::bf16>(on, head_dim, false).is_ok()).collect()
}

/// Times [`attention::backward_on`] `cores` (its launches: Δ, dK and dV — apart at head dim
/// 256 — and dQ) on BF16 tensors of `[batch, heads, kv_heads, seq_q, seq_kv, head_dim]`, O and
/// the log-sum-exp from one forward pass first, in alternation with `baseline`: (baseline, backward, the last
/// launch).
#[allow(clippy::too_many_arguments)]
fn time_attention_backward(
    gpu: &Gpu,
    options: &BenchOptions,
    [batch, heads, kv_heads, seq_q, seq_kv, head_dim]: [usize; 6],
    causal: bool,
    cores: attention::TensorCores,
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<(crate::runtime::Timing, crate::runtime::Timing, crate::Launched), Error> {
    let tensor = |dims: [usize; 4], offset: usize| {
        let len = dims.iter().product::<usize>();
        let values = (0..len).map(|i| half::bf16::from_f64(measurement_value(i + offset))).collect::<Vec<_>>();
        gpu.upload(&values, dims)
    };
    let (q_dims, kv_dims) = ([batch, heads, seq_q, head_dim], [batch, kv_heads, seq_kv, head_dim]);
    let (q, k, v, dout) = (tensor(q_dims, 0)?, tensor(kv_dims, 1)?, tensor(kv_dims, 2)?, tensor(q_dims, 3)?);
    let mut o = gpu.zeros::<half::bf16>(q_dims)?;
    let mut lse = gpu.zeros::<f32>([batch, heads, seq_q])?;
    attention::forward(gpu, &q, &k, &v, &mut o, &mut lse, causal)?;
    let (mut dq, mut dk, mut dv) = (gpu.zeros(q_dims)?, gpu.zeros(kv_dims)?, gpu.zeros(kv_dims)?);
    time_entry_point(gpu, options, flush, baseline, "attention::backward", || {
        attention::backward_on(gpu, cores, &q, &k, &v, &o, &lse, &dout, &mut dq, &mut dk, &mut dv, causal)
    })
}

/// The element type of a kernel's first tensor parameter (an HGEMM's A).
fn input_type(kernel: &KernelDefinition) -> crate::dsl::ElementType {
    kernel
        .ir()
        .ok()
        .and_then(|ir| ir.params.iter().find_map(|p| p.tensor().map(|t| t.element)))
        .unwrap_or(crate::dsl::ElementType::BF16)
}

/// The element type of a kernel's last tensor parameter (an HGEMM's C): f32, or the inputs'
/// 16-bit type.
fn output_type(kernel: &KernelDefinition) -> crate::dsl::ElementType {
    kernel
        .ir()
        .ok()
        .and_then(|ir| ir.params.iter().rev().find_map(|p| p.tensor().map(|t| t.element)))
        .unwrap_or(crate::dsl::ElementType::F32)
}

impl<'g> Baseline<'g> {
    fn new(
        gpu: &'g Gpu,
        family: Family,
        shape: &[(String, i64)],
        input: Option<crate::dsl::ElementType>,
        output: crate::dsl::ElementType,
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
            Family::Epilogue => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                Ok(Baseline::SgemmThenBiasGelu {
                    gpu,
                    blas: gpu.cublas()?,
                    a: filled(&[m, k])?,
                    b: filled(&[k, n])?,
                    bias: filled(&[n])?,
                    c: gpu.zeros([m, n])?,
                })
            }
            // the anchor: cuBLAS BF16 at 4096³, the same GEMM torch's attention figures sit beside
            Family::Attention => {
                let anchor = ATTENTION_ANCHOR.map(|(n, v)| (n.to_string(), v));
                Baseline::new(gpu, Family::Hgemm, &anchor, Some(crate::dsl::ElementType::BF16), output)
            }
            Family::Hgemm => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                let values = |len: usize| (0..len).map(measurement_value);
                // A and B of the 16-bit baselines, from the values the kernels get
                let bf16 = |rows: usize, cols: usize| {
                    gpu.upload(&values(rows * cols).map(half::bf16::from_f64).collect::<Vec<_>>(), [rows, cols])
                };
                let f16 = |rows: usize, cols: usize| {
                    gpu.upload(&values(rows * cols).map(half::f16::from_f64).collect::<Vec<_>>(), [rows, cols])
                };
                let same_type_output = input == Some(output);
                Ok(match input {
                    Some(crate::dsl::ElementType::BF16) if same_type_output => Baseline::GemmBf16ToBf16 {
                        blas: gpu.cublas()?,
                        a: bf16(m, k)?,
                        b: bf16(k, n)?,
                        c: gpu.zeros([m, n])?,
                    },
                    Some(crate::dsl::ElementType::F16) if same_type_output => Baseline::GemmF16ToF16 {
                        blas: gpu.cublas()?,
                        a: f16(m, k)?,
                        b: f16(k, n)?,
                        c: gpu.zeros([m, n])?,
                    },
                    Some(crate::dsl::ElementType::F32) => Baseline::GemmTf32 {
                        blas: gpu.cublas()?,
                        a: filled(&[m, k])?,
                        b: filled(&[k, n])?,
                        c: gpu.zeros([m, n])?,
                    },
                    Some(crate::dsl::ElementType::F16) => {
                        Baseline::GemmF16 { blas: gpu.cublas()?, a: f16(m, k)?, b: f16(k, n)?, c: gpu.zeros([m, n])? }
                    }
                    _ => Baseline::GemmBf16 {
                        blas: gpu.cublas()?,
                        a: bf16(m, k)?,
                        b: bf16(k, n)?,
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
            Baseline::SgemmThenBiasGelu { .. } => "cuBLAS + bias_gelu_f32",
            Baseline::GemmBf16 { .. } => "cuBLAS bf16",
            Baseline::GemmF16 { .. } => "cuBLAS f16",
            Baseline::GemmTf32 { .. } => "cuBLAS tf32",
            Baseline::GemmBf16ToBf16 { .. } => "cuBLAS bf16 (bf16 out)",
            Baseline::GemmF16ToF16 { .. } => "cuBLAS f16 (f16 out)",
        }
    }

    /// Queues one run.
    fn run(&mut self) -> Result<(), Error> {
        match self {
            Baseline::Copy { gpu, from, to } => gpu.copy(&*from, to),
            Baseline::Sgemm { blas, a, b, c } => blas.sgemm(1.0, &*a, &*b, 0.0, c),
            Baseline::SgemmThenBiasGelu { gpu, blas, a, b, bias, c } => {
                blas.sgemm(1.0, &*a, &*b, 0.0, c)?;
                epilogue::bias_gelu_f32::launch(*gpu, &*bias, c).map(|_| ())
            }
            Baseline::GemmBf16 { blas, a, b, c } => blas.gemm_ex(1.0, &*a, &*b, 0.0, c),
            Baseline::GemmF16 { blas, a, b, c } => blas.gemm_ex(1.0, &*a, &*b, 0.0, c),
            Baseline::GemmTf32 { blas, a, b, c } => blas.sgemm_tf32(1.0, &*a, &*b, 0.0, c),
            Baseline::GemmBf16ToBf16 { blas, a, b, c } => blas.gemm_ex(1.0, &*a, &*b, 0.0, c),
            Baseline::GemmF16ToF16 { blas, a, b, c } => blas.gemm_ex(1.0, &*a, &*b, 0.0, c),
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

/// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break — a shape
/// `M=4096,N=4096`, an entry point `attention::backward (bf16, causal)` — its quotes doubled.
///
/// ```
/// assert_eq!(tessera::bench::csv_field("M=1,N=2"), "\"M=1,N=2\"");
/// assert_eq!(tessera::bench::csv_field("sgemm_v13"), "sgemm_v13");
/// ```
pub fn csv_field(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\"")).into()
    } else {
        text.into()
    }
}

/// The rows as CSV with a header line.
pub fn csv(rows: &[BenchRow]) -> String {
    let mut out = String::from("family,kernel,shape,median_ms,min_ms,max_ms,value,unit,baseline,baseline_value,percent_of_baseline,intensity,roofline,percent_of_roofline,vector,tuned\n");
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{:.6},{:.6},{:.6},{:.3},{},{},{:.3},{:.2},{:.4},{:.3},{:.2},{},{}",
            csv_field(&r.family),
            csv_field(&r.kernel),
            csv_field(&r.shape),
            r.median_ms,
            r.min_ms,
            r.max_ms,
            r.value,
            csv_field(&r.unit),
            csv_field(&r.baseline),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_attention_kernel_runs_only_at_the_head_dims_of_its_width() {
        let shape = |head_dim: i64| vec![("HD".to_string(), head_dim)];
        let d64 = &attention::attention_forward_wgmma_tma_bf16_d64::KERNEL;
        let d128 = &attention::attention_forward_wgmma_tma_bf16_d128::KERNEL;
        assert!(Family::Attention.computes(d64, &shape(64)));
        assert!(Family::Attention.computes(d64, &shape(48)));
        assert!(!Family::Attention.computes(d64, &shape(128)));
        assert!(Family::Attention.computes(d128, &shape(128)));
        assert!(Family::Attention.computes(d128, &shape(100)));
        assert!(!Family::Attention.computes(d128, &shape(64)));
        assert!(!Family::Attention.computes(d128, &shape(512)));
        assert!(Family::Hgemm.computes(&hgemm::gemm_tf32_wgmma_bt::KERNEL, &[("M".into(), 64)]));
    }
}
