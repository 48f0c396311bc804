//! The families `tessera bench` measures: their kernels, default shapes, the work each kernel
//! does at a shape (flops, compulsory bytes) and the baseline it is timed beside.

use super::*;

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
    /// GEMMs with a fused epilogue (bias + GELU, bias + residual, bias + ReLU + residual; f32 on
    /// SGEMM V13, bf16 and f16 on HGEMM V11) and the plain GEMMs, beside cuBLAS on the same types
    /// followed by the separate `bias_gelu_*` kernel (`bias_residual_*` for the kernels that add
    /// a residual).
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
    pub(super) fn measures(self, kernel: &KernelDefinition, shape: &[(String, i64)]) -> bool {
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
                    // f32, bf16 and f16 rows alike
                    0..=32768 => [
                        softmax::kernel_for_columns::<f32>(columns, false),
                        softmax::kernel_for_columns::<half::bf16>(columns, false),
                        softmax::kernel_for_columns::<half::f16>(columns, false),
                    ]
                    .iter()
                    .any(|k| k.name() == kernel.name()),
                    _ => {
                        kernel.name().starts_with("softmax_chunk")
                            || (columns <= softmax::CLUSTER_COLUMNS && kernel.name().starts_with("softmax_cluster_"))
                    }
                }
            }
            // f32, bf16 and f16 rows alike, LayerNorm and RMSNorm
            (Family::Norm, Some(columns)) => {
                let columns = columns.max(0) as usize;
                [
                    norm::layer_norm_kernel_for::<f32>(columns),
                    norm::rms_norm_kernel_for::<f32>(columns),
                    norm::layer_norm_kernel_for::<half::bf16>(columns),
                    norm::rms_norm_kernel_for::<half::bf16>(columns),
                    norm::layer_norm_kernel_for::<half::f16>(columns),
                    norm::rms_norm_kernel_for::<half::f16>(columns),
                ]
                .iter()
                .flatten()
                .any(|k| k.name() == kernel.name())
            }
            // a narrow-row A·x kernel or Aᵀ·x first pass where `gemv::gemv` / `gemv_t` takes it
            // (the narrowest width that holds the row); the warp per row and the bands everywhere
            (Family::Gemv, _) => narrow_gemv_width(kernel).is_none_or(|width| {
                let columns = value(width.symbol).unwrap_or(0).max(0) as usize;
                width.least <= columns && columns <= width.most
            }),
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
    /// (`D`, a smaller head dim zero-filled to it); any other kernel wherever its `require(..)`s
    /// on shape symbols hold (a row kernel on rows it holds).
    pub(super) fn computes(self, kernel: &KernelDefinition, shape: &[(String, i64)]) -> bool {
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
            // a row kernel (softmax, norms, narrow-row GEMV) only on rows it holds: its
            // `require(C <= ..)` would refuse the launch
            _ => kernel.ir().is_ok_and(|ir| crate::dsl::check_launch_requirements(ir, shape).is_ok()),
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
            Family::Sgemm => sgemm::ALL.iter().chain(&sgemm_bt::ALL).copied().collect(),
            Family::Reduce => vec![&reduce::sum_partials_f32::KERNEL, &reduce::dot_partials_f32::KERNEL],
            Family::Map => map::ALL.to_vec(),
            Family::Stencil => stencil::ALL.to_vec(),
            Family::Hgemm => hgemm::all().chain(hgemm_bt::ALL).collect(),
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
                    &epilogue::sgemm_bias_residual::KERNEL,
                    &epilogue::sgemm_bias_relu_residual::KERNEL,
                    &hgemm::hgemm_v11_bf16_to_bf16::KERNEL,
                    &epilogue::hgemm_bias_bf16::KERNEL,
                    &epilogue::hgemm_bias_small_tiles_bf16::KERNEL,
                    &epilogue::hgemm_bt_bias_bf16::KERNEL,
                    &epilogue::hgemm_bt_bias_small_tiles_bf16::KERNEL,
                    &epilogue::hgemm_bias_gelu_bf16::KERNEL,
                    &epilogue::hgemm_bias_residual_bf16::KERNEL,
                    &epilogue::hgemm_bias_residual_small_tiles_bf16::KERNEL,
                    &epilogue::hgemm_bt_bias_residual_bf16::KERNEL,
                    &epilogue::hgemm_bt_bias_residual_small_tiles_bf16::KERNEL,
                    &hgemm::hgemm_v11_f16_to_f16::KERNEL,
                    &epilogue::hgemm_bias_f16::KERNEL,
                    &epilogue::hgemm_bias_small_tiles_f16::KERNEL,
                    &epilogue::hgemm_bt_bias_f16::KERNEL,
                    &epilogue::hgemm_bt_bias_small_tiles_f16::KERNEL,
                    &epilogue::hgemm_bias_gelu_f16::KERNEL,
                    &epilogue::hgemm_bias_residual_f16::KERNEL,
                    &epilogue::hgemm_bias_residual_small_tiles_f16::KERNEL,
                    &epilogue::hgemm_bt_bias_residual_f16::KERNEL,
                    &epilogue::hgemm_bt_bias_residual_small_tiles_f16::KERNEL,
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
            // the issue's shapes: square, a tail, many short rows, few long ones; and rows of 512,
            // 2048 and 4096 (a warp, a block of 64, for 16-bit rows 128 × 32 a row)
            Family::Softmax => vec![
                shape(&[("R", 8192), ("C", 8192)]),
                shape(&[("R", 4096), ("C", 4097)]),
                shape(&[("R", 32768), ("C", 128)]),
                shape(&[("R", 32768), ("C", 512)]),
                shape(&[("R", 16384), ("C", 2048)]),
                shape(&[("R", 8192), ("C", 4096)]),
                // 16 × 65536: the cluster kernel (what `softmax` takes on sm_90), and the chunked
                // softmax's two passes, 8 chunks a row
                shape(&[("R", 16), ("C", 65536)]),
                shape(&[("R", 16), ("C", 65536), ("S", 65536usize.div_ceil(softmax::CHUNK) as i64)]),
            ],
            // the issue's shapes, and a transformer's hidden sizes: 256 (16 lanes a row), 1024 (a
            // warp), 2048 (a block of 64), 2560 (a block of 96), 4096 (16-bit rows: 128 × 32),
            // 6144 and 7168 (16-bit LayerNorm: 128 × 48 and 128 × 56)
            Family::Norm => vec![
                shape(&[("R", 8192), ("C", 8192)]),
                shape(&[("R", 4096), ("C", 4097)]),
                shape(&[("R", 131072), ("C", 256)]),
                shape(&[("R", 32768), ("C", 1024)]),
                shape(&[("R", 16384), ("C", 2048)]),
                shape(&[("R", 16384), ("C", 2560)]),
                shape(&[("R", 8192), ("C", 4096)]),
                shape(&[("R", 8192), ("C", 6144)]),
                shape(&[("R", 8192), ("C", 7168)]),
            ],
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
                // narrow rows: a group of lanes per row
                shape(&[("M", 1048576), ("K", 64)]),
                shape(&[("M", 524288), ("K", 128)]),
                shape(&[("M", 131072), ("K", 512)]),
                shape(&[("M", 1048576), ("N", 64)]),
                shape(&[("M", 262144), ("N", 256)]),
                shape(&[("M", 8192), ("N", 8192)]),
                shape(&[("M", 4097), ("N", 4095)]),
                // 160 bands of 32 f32 columns, more than one wave of the band kernel: the split
                shape(&[("M", 8192), ("N", 5120)]),
                // fewer bands of 32 columns than SMs (94): gemv_t runs the band kernel alone on
                // 8192 rows and splits 16384 rows, pass 1 then pass 2
                shape(&[("M", 8192), ("N", 3000)]),
                shape(&[("M", 16384), ("N", 3000)]),
                shape(&[("M", 16384), ("N", 3000), ("S", gemv::row_slices::<f32>(16384, 3000) as i64)]),
                shape(&[("S", gemv::row_slices::<f32>(16384, 3000) as i64), ("N", 3000)]),
                // .. and at the slice count it takes for 16-bit rows (16: bands of 64 columns)
                shape(&[("M", 8192), ("N", 3000), ("S", gemv::row_slices::<half::bf16>(8192, 3000) as i64)]),
                shape(&[("S", gemv::row_slices::<half::bf16>(8192, 3000) as i64), ("N", 3000)]),
            ],
        }
    }

    /// The elements of the device copy a memory-bound family is measured against: as many as
    /// its largest tensor holds.
    pub(super) fn copied_elements(self, shape: &[(String, i64)]) -> usize {
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
            // the GEMM's, and the bias (and the residual) read by the epilogue (2 bytes an
            // element for the bf16 and f16 kernels)
            Family::Epilogue => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                let residual = if kernel.contains("residual") { m * n } else { 0.0 };
                (2.0 * m * n * k, element_bytes(kernel) * (m * k + k * n + m * n + n + residual))
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
            // (2 bytes an element for the bf16 and f16 kernels, f32 statistics)
            Family::Softmax => {
                let size = element_bytes(kernel);
                let statistics = 8.0 * value("R") * value("S");
                if kernel.starts_with("softmax_chunk_stats") {
                    (0.0, size * value("R") * value("C") + statistics)
                } else if kernel.starts_with("softmax_chunk_write") {
                    (0.0, 2.0 * size * value("R") * value("C") + statistics)
                } else {
                    (0.0, 2.0 * size * value("R") * value("C"))
                }
            }
            // (2 bytes an element for the bf16 and f16 kernels)
            Family::Norm => {
                let size = element_bytes(kernel);
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
            // (2 bytes an element of A, x and y for the bf16 and f16 kernels; the partials are f32)
            Family::Gemv => match kernel {
                finish if finish.starts_with("gemv_t_finish") => {
                    (0.0, 4.0 * value("S") * value("N") + element_bytes(finish) * value("N"))
                }
                _ => {
                    let size = element_bytes(kernel);
                    let (m, other) = (value("M"), value("K").max(value("N")));
                    (0.0, size * (m * other + m + other) + 4.0 * value("S") * other)
                }
            },
        }
    }
}

/// Bytes an element of a row-wise kernel's data: 2 for the `_bf16` and `_f16` kernels, else 4.
fn element_bytes(kernel: &str) -> f64 {
    if kernel.ends_with("f16") {
        2.0
    } else {
        4.0
    }
}

/// The rows a narrow-row GEMV kernel is for: the shape symbol of their length, and the columns
/// from which its entry point takes it (one past the next narrower width's) to the most it holds.
struct NarrowWidth {
    symbol: &'static str,
    least: usize,
    most: usize,
}

/// The rows of a narrow-row A·x kernel ([`gemv::narrow`], on `K`) or Aᵀ·x first pass
/// ([`gemv::narrow_transposed`], on `N`); `None` for any other kernel.
fn narrow_gemv_width(kernel: &KernelDefinition) -> Option<NarrowWidth> {
    let row_lengths = [gemv::narrow::F32_WIDTHS, gemv::narrow::BF16_WIDTHS, gemv::narrow::F16_WIDTHS].map(|w| ("K", w));
    let transposed = [gemv::F32_NARROW_TRANSPOSED, gemv::BF16_NARROW_TRANSPOSED, gemv::F16_NARROW_TRANSPOSED]
        .map(|kernels| ("N", kernels.widths));
    row_lengths.into_iter().chain(transposed).find_map(|(symbol, widths)| {
        let at = widths.iter().position(|(_, k)| k.name() == kernel.name())?;
        let least = if at == 0 { 0 } else { widths[at - 1].0 + 1 };
        Some(NarrowWidth { symbol, least, most: widths[at].0 })
    })
}
