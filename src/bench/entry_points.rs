//! The entry points `tessera bench` times as a whole, every launch they make inside the timed
//! region: `tessera::gemm`, the fused GEMMs (`gemm_bias_gelu`, `gemm_bt_bias_residual`, ..),
//! `gemv::gemv_t`, `attention::backward`,
//! `stencil::sweep_colour`.

use super::*;
use crate::gemm_dispatch::GemmTypes;

/// An entry point's timing: (its baseline's, its own, its last launch).
pub(super) type Timed = (crate::runtime::Timing, crate::runtime::Timing, crate::Launched);

/// The types whose `tessera::gemm` (and, B stored [N, K], `tessera::gemm_bt`) the hgemm family
/// times beside the kernels: bf16 and f16 into f32, and each into its own type.
pub(super) const ENTRY_POINT_TYPES: [GemmTypes; 8] = {
    use crate::dsl::ElementType::{BF16, F16, F32};
    let plain =
        [GemmTypes::new(BF16, F32), GemmTypes::new(F16, F32), GemmTypes::new(BF16, BF16), GemmTypes::new(F16, F16)];
    [
        plain[0],
        plain[1],
        plain[2],
        plain[3],
        plain[0].with_b_transposed(),
        plain[1].with_b_transposed(),
        plain[2].with_b_transposed(),
        plain[3].with_b_transposed(),
    ]
};

/// The sgemm family's entry point: `tessera::gemm_bt` on f32 (the direct `sgemm_bt` kernel, or
/// a transposed copy of B and a B [K, N] SGEMM, as the table decides), beside cuBLAS (Bᵀ).
pub(super) const SGEMM_ENTRY_POINT_TYPES: [GemmTypes; 1] = {
    use crate::dsl::ElementType::F32;
    [GemmTypes::new(F32, F32).with_b_transposed()]
};

/// The row an entry point's timing takes: `tessera::gemm (bf16)` (f32 C, the name of before
/// 16-bit outputs), `tessera::gemm (bf16 → bf16)`, `tessera::gemm_bt (..)` with B stored [N, K].
pub(super) fn entry_point_name(types: GemmTypes) -> String {
    let function = if types.b_transposed { "tessera::gemm_bt" } else { "tessera::gemm" };
    match types.output {
        crate::dsl::ElementType::F32 => format!("{function} ({})", types.input),
        output => format!("{function} ({} → {output})", types.input),
    }
}

/// [`time_gemm_entry_point`] on the inputs `types` names (f32, F16 or BF16); C of its output
/// type (f32, or the inputs' own).
pub(super) fn time_gemm(
    types: GemmTypes,
    kernel: Option<&'static KernelDefinition>,
    gpu: &Gpu,
    options: &BenchOptions,
    dims: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<Timed, Error> {
    use crate::dsl::ElementType::{F16, F32};
    let (f16, bf16) = (half::f16::from_f64, half::bf16::from_f64);
    let layout = types.b_transposed;
    match (types.input, types.output) {
        (F32, _) => {
            time_gemm_entry_point::<f32, f32>(kernel, layout, gpu, |v| v as f32, options, dims, flush, baseline)
        }
        (F16, F32) => time_gemm_entry_point::<_, f32>(kernel, layout, gpu, f16, options, dims, flush, baseline),
        (F16, _) => time_gemm_entry_point::<_, half::f16>(kernel, layout, gpu, f16, options, dims, flush, baseline),
        (_, F32) => time_gemm_entry_point::<_, f32>(kernel, layout, gpu, bf16, options, dims, flush, baseline),
        _ => time_gemm_entry_point::<_, half::bf16>(kernel, layout, gpu, bf16, options, dims, flush, baseline),
    }
}

/// Times [`crate::gemm`] (or [`crate::gemm_bt`] where `b_transposed`: B stored [N, K]) — the
/// kernel it picks and, for rows that are not 16-byte aligned, its copies into aligned buffers
/// and back, all inside the timed region — in alternation with `baseline`: (baseline, gemm,
/// the GEMM's launch). With `kernel`, that kernel through
/// [`crate::gemm_dispatch::gemm_through_aligned_copies_with`] instead.
#[allow(clippy::too_many_arguments)] // the GEMM, then the timing's own arguments
pub(super) fn time_gemm_entry_point<
    T: crate::gemm_dispatch::TransposedBInput,
    C: crate::gemm_dispatch::GemmOutput<T>,
>(
    kernel: Option<&'static KernelDefinition>,
    b_transposed: bool,
    gpu: &Gpu,
    convert: fn(f64) -> T,
    options: &BenchOptions,
    [m, n, k]: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<Timed, Error> {
    let a = measurement_tensor_as(gpu, &[m, k], convert)?;
    let b = measurement_tensor_as(gpu, &if b_transposed { [n, k] } else { [k, n] }, convert)?;
    let mut c = gpu.zeros::<C>([m, n])?;
    time_entry_point(gpu, options, flush, baseline, || {
        let launched = match (kernel, b_transposed) {
            (Some(kernel), _) => {
                crate::gemm_dispatch::gemm_through_aligned_copies_with(kernel, gpu, &a, &b, &mut c, 1.0, options.beta)
            }
            (None, false) => crate::gemm(gpu, &a, &b, &mut c, 1.0, options.beta),
            (None, true) => crate::gemm_bt(gpu, &a, &b, &mut c, 1.0, options.beta),
        };
        launched.map_err(Error::from)
    })
}

/// Whether `kernel` is one of the TF32 wgmma kernels (on Bᵀ or on B as stored), beside which the
/// hgemm bench times [`hgemm::gemm_tf32_wgmma`].
pub(super) fn is_tf32_wgmma(kernel: &KernelDefinition) -> bool {
    hgemm::ALL_TF32_TRANSPOSED_B.iter().chain(&hgemm::ALL_TF32_WGMMA_KN).any(|k| k.name() == kernel.name())
}

/// Times [`hgemm::gemm_tf32_wgmma`] on B stored [K, N] (multiplied as it is, or transposed into a
/// scratch copy first, the copy inside the timed region), in alternation with `baseline`.
pub(super) fn time_tf32_entry_point(
    gpu: &Gpu,
    options: &BenchOptions,
    [m, n, k]: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<Timed, Error> {
    let a = measurement_tensor(gpu, &[m, k])?;
    let b = measurement_tensor(gpu, &[k, n])?;
    let mut c = gpu.zeros::<f32>([m, n])?;
    time_entry_point(gpu, options, flush, baseline, || hgemm::gemm_tf32_wgmma(gpu, &a, &b, &mut c, 1.0, options.beta))
}

/// A memory-bound entry point the bench times as a whole beside the device copy: its row's
/// name, the kernel whose traffic it moves, the two dims of the shape it runs at, and its timer.
pub(super) struct BandwidthEntryPoint {
    pub name: &'static str,
    pub work_of: &'static str,
    pub dims: [usize; 2],
    pub time: fn(
        &Gpu,
        &BenchOptions,
        [usize; 2],
        &mut dyn FnMut() -> Result<(), Error>,
        &mut Baseline<'_>,
    ) -> Result<Timed, Error>,
}

/// The memory-bound entry points `family` times at `shape`: `gemv::gemv_t` on f32 and bf16 at
/// an Aᵀ·x shape (M and N, no slices given), `stencil::sweep_colour` at a sweep's (R and H
/// alone; the split also names C, the residual P).
pub(super) fn bandwidth_entry_points(family: Family, shape: &[(String, i64)]) -> Vec<BandwidthEntryPoint> {
    let mut names: Vec<&str> = shape.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
    match (family, names.as_slice()) {
        // what a user's Aᵀ·x runs: the row-split passes where gemv_t takes them, timed together
        (Family::Gemv, ["M", "N"]) => vec![
            BandwidthEntryPoint {
                name: "gemv::gemv_t (every pass)",
                work_of: "gemv_t_f32",
                dims: [value("M"), value("N")],
                time: |gpu, options, dims, flush, baseline| {
                    time_gemv_t_entry_point(gpu, |v| v as f32, options, dims, flush, baseline)
                },
            },
            BandwidthEntryPoint {
                name: "gemv::gemv_t bf16 (every pass)",
                work_of: "gemv_t_bf16",
                dims: [value("M"), value("N")],
                time: |gpu, options, dims, flush, baseline| {
                    time_gemv_t_entry_point(gpu, half::bf16::from_f64, options, dims, flush, baseline)
                },
            },
        ],
        (Family::Stencil, ["H", "R"]) => vec![BandwidthEntryPoint {
            // what solve_poisson sweeps: a colour of a RedBlack grid, its rows padded to 16 bytes
            name: "stencil::sweep_colour (RedBlack, padded rows)",
            work_of: "gauss_seidel_colour",
            dims: [value("R"), value("H")],
            time: time_sweep_colour_entry_point,
        }],
        _ => Vec::new(),
    }
}

/// `gemv::gemv_t` on `T` (both passes where it splits the rows) timed beside `baseline`.
fn time_gemv_t_entry_point<T: gemv::GemvElement>(
    gpu: &Gpu,
    convert: fn(f64) -> T,
    options: &BenchOptions,
    [m, n]: [usize; 2],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<Timed, Error> {
    let a = measurement_tensor_as(gpu, &[m, n], convert)?;
    let x = measurement_tensor_as(gpu, &[m], convert)?;
    let mut y = gpu.zeros::<T>([n])?;
    time_entry_point(gpu, options, flush, baseline, || gemv::gemv_t(gpu, &a, &x, &mut y))
}

/// `stencil::sweep_colour` (the red points) on a [`RedBlack`](stencil::RedBlack) grid of
/// `rows × 2·colour_columns` points — its rows padded to 16 bytes, as `solve_poisson` sweeps
/// them — timed beside `baseline`.
fn time_sweep_colour_entry_point(
    gpu: &Gpu,
    options: &BenchOptions,
    [rows, colour_columns]: [usize; 2],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<Timed, Error> {
    let grid = measurement_tensor(gpu, &[rows, 2 * colour_columns])?;
    let f = stencil::RedBlack::split(gpu, &grid)?;
    let mut u = stencil::RedBlack::split(gpu, &grid)?;
    time_entry_point(gpu, options, flush, baseline, || {
        stencil::sweep_colour(gpu, &f, &mut u, 1e-8, stencil::Colour::Red)
    })
}

/// A GEMM entry point with a fused epilogue that the epilogue family times, beside cuBLAS on
/// the same types and B layout followed by the separate epilogue kernel.
pub(super) struct EpilogueEntryPoint {
    pub function: &'static str,
    pub input: crate::dsl::ElementType,
    /// B stored [N, K] (a linear layer's weight)
    pub b_transposed: bool,
    /// adds a residual (its baseline's second kernel `bias_residual_*`), else the GELU
    pub residual: bool,
    /// the kernel whose work (FLOPs and compulsory bytes) the row counts
    pub work_of: &'static str,
}

/// What a user's fused GEMMs run: C = GELU(α·A·B + bias) on f32 (fused into V13, or a GEMM and
/// `bias_gelu_f32`) and on bf16 (the GEMM with the bias fused, then `gelu_bf16`), with B stored
/// [K, N] and [N, K] (a transformer MLP's first layer); C = α·A·B + bias + residual on bf16 both
/// ways (the projection back into the residual stream).
pub(super) const EPILOGUE_ENTRY_POINTS: [EpilogueEntryPoint; 5] = {
    use crate::dsl::ElementType::{BF16, F32};
    const fn entry(
        function: &'static str,
        input: crate::dsl::ElementType,
        b_transposed: bool,
        residual: bool,
        work_of: &'static str,
    ) -> EpilogueEntryPoint {
        EpilogueEntryPoint { function, input, b_transposed, residual, work_of }
    }
    [
        entry("tessera::gemm_bias_gelu", F32, false, false, "sgemm_bias_gelu"),
        entry("tessera::gemm_bias_gelu", BF16, false, false, "hgemm_bias_gelu_bf16"),
        entry("tessera::gemm_bt_bias_gelu", BF16, true, false, "hgemm_bias_gelu_bf16"),
        entry("tessera::gemm_bias_residual", BF16, false, true, "hgemm_bias_residual_bf16"),
        entry("tessera::gemm_bt_bias_residual", BF16, true, true, "hgemm_bt_bias_residual_bf16"),
    ]
};

/// `entry` at M×N×K timed beside `baseline`: its row's name (with the kernels it ran) and
/// (baseline, the entry point, its GEMM's launch).
pub(super) fn time_epilogue_entry_point(
    entry: &EpilogueEntryPoint,
    gpu: &Gpu,
    options: &BenchOptions,
    dims: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<(String, Timed), Error> {
    let function = entry.function;
    if entry.input == crate::dsl::ElementType::F32 {
        let plan = crate::gemm_dispatch::choose_bias_gelu(gpu, &[dims[0], dims[2]], &[dims[2], dims[1]])
            .map_err(Error::from)?;
        let run: FusedGemmCall<'_, f32> = &|a, b, bias, _, c| crate::gemm_bias_gelu(gpu, a, b, bias, c, 1.0);
        let timed = time_fused_gemm(gpu, |v| v as f32, entry, run, options, dims, flush, baseline)?;
        return Ok((format!("{function} ({})", plan.describe()), timed));
    }
    let run: FusedGemmCall<'_, half::bf16> = &|a, b, bias, residual, c| match (entry.b_transposed, residual) {
        (false, None) => crate::gemm_bias_gelu(gpu, a, b, bias, c, 1.0),
        (true, None) => crate::gemm_bt_bias_gelu(gpu, a, b, bias, c, 1.0),
        (false, Some(residual)) => crate::gemm_bias_residual(gpu, a, b, bias, residual, c, 1.0),
        (true, Some(residual)) => crate::gemm_bt_bias_residual(gpu, a, b, bias, residual, c, 1.0),
    };
    let timed = time_fused_gemm(gpu, half::bf16::from_f64, entry, run, options, dims, flush, baseline)?;
    // the GEMM with the epilogue fused that the table picks for the shape (then the GELU pass)
    let gelu = if entry.residual { "" } else { " + gelu_bf16" };
    Ok((format!("{function} bf16 ({}{gelu})", timed.2.kernel), timed))
}

/// A fused GEMM entry point called on (a, b, bias, the residual where it adds one, c).
type FusedGemmCall<'a, T> = &'a dyn Fn(
    &DeviceTensor<T>,
    &DeviceTensor<T>,
    &DeviceTensor<T>,
    Option<&DeviceTensor<T>>,
    &mut DeviceTensor<T>,
) -> Result<crate::Launched, crate::gemm_dispatch::GemmError>;

/// Times `run` on (a, b as `entry` stores it, bias, the residual where it adds one, c) of `T`
/// beside `baseline`.
#[allow(clippy::too_many_arguments)] // the entry point, then the timing's own arguments
fn time_fused_gemm<T: crate::runtime::Element>(
    gpu: &Gpu,
    convert: fn(f64) -> T,
    entry: &EpilogueEntryPoint,
    run: FusedGemmCall<'_, T>,
    options: &BenchOptions,
    [m, n, k]: [usize; 3],
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<Timed, Error> {
    let a = measurement_tensor_as(gpu, &[m, k], convert)?;
    let b = measurement_tensor_as(gpu, &if entry.b_transposed { [n, k] } else { [k, n] }, convert)?;
    let bias = measurement_tensor_as(gpu, &[n], convert)?;
    let residual = if entry.residual { Some(measurement_tensor_as(gpu, &[m, n], convert)?) } else { None };
    let mut c = gpu.zeros::<T>([m, n])?;
    time_entry_point(gpu, options, flush, baseline, || {
        run(&a, &b, &bias, residual.as_ref(), &mut c).map_err(Error::from)
    })
}

/// Times `entry_point` (all of its launches inside the timed region) in alternation with
/// `baseline`: (baseline, entry point, its last launch).
pub(super) fn time_entry_point(
    gpu: &Gpu,
    options: &BenchOptions,
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
    mut entry_point: impl FnMut() -> Result<crate::Launched, Error>,
) -> Result<Timed, Error> {
    let mut last = None;
    let (base, timing) = gpu.time_paired(
        options.warmup,
        options.repetitions,
        flush,
        || baseline.run(options.beta),
        || {
            last = Some(entry_point()?);
            Ok(())
        },
    )?;
    let launched = last.ok_or(Error::NoRepetitions)?;
    Ok((base, timing, launched))
}

/// The row of an entry point timed as a whole (`tessera::gemm`, `attention::backward`,
/// `gemv::gemv_t`): `work` is its (flops, bytes), `baseline` the name and value of what it was
/// timed beside — TFLOP/s, or GB/s for a memory-bound one (no flops counted).
pub(super) fn entry_point_row(
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
        host_ms: timing.host_ms.unwrap_or(0.0),
    }
}

/// The tensor cores `attention::backward` rows are timed on at an attention shape: what
/// `attention::backward` runs on `gpu`, and on Hopper mma.sync's beside it, each where its
/// backward has kernels for the shape's head dim (the forward goes further).
pub(super) fn backward_tensor_cores(gpu: &Gpu, shape: &[(String, i64)]) -> Vec<attention::TensorCores> {
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
pub(super) fn time_attention_backward(
    gpu: &Gpu,
    options: &BenchOptions,
    [batch, heads, kv_heads, seq_q, seq_kv, head_dim]: [usize; 6],
    causal: bool,
    cores: attention::TensorCores,
    flush: &mut dyn FnMut() -> Result<(), Error>,
    baseline: &mut Baseline<'_>,
) -> Result<Timed, Error> {
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
    time_entry_point(gpu, options, flush, baseline, || {
        Ok(attention::backward_on(gpu, cores, &q, &k, &v, &o, &lse, &dout, &mut dq, &mut dk, &mut dv, causal)?)
    })
}
