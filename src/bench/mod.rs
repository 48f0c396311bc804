//! `tessera bench`: every catalog kernel beside its baseline in one run — cuBLAS SGEMM for
//! GEMM, the device-to-device copy of the same bytes for the memory-bound families — with
//! CUDA events, warm-up, the L2 cache flushed before every repetition (a copy of twice its size,
//! then a read of as much again, so it is left holding clean lines: the timed kernel does not
//! write back the flush's dirty ones), each kernel timed in
//! alternation with its baseline on the same inputs, medians and spread;
//! as a table, JSON or CSV, and SVG charts (a roofline, and % of baseline by size).

use std::fmt::Write as _;

mod baseline;
mod charts;
mod entry_points;
mod family;
mod output;
use baseline::*;
pub use charts::{baseline_svg, roofline_svg, ChartError};
use entry_points::*;
pub use family::Family;
pub use output::{csv, csv_field, json, table};

use crate::catalog::{
    attention, copy, epilogue, gemm_b_transposed, gemm_input_type, gemm_output_type, gemv, hgemm, hgemm_bt, map, norm,
    reduce, sgemm, sgemm_bt, softmax, stencil, transpose,
};
use crate::runtime::tune::{measurement_value, GpuMeasure};
use crate::{DeviceTensor, Error, Gpu, KernelDefinition};

/// A tensor of `dims` filled with the values every kernel is measured on ([`measurement_value`]).
fn measurement_tensor(gpu: &Gpu, dims: &[usize]) -> Result<DeviceTensor<f32>, Error> {
    measurement_tensor_as(gpu, dims, |v| v as f32)
}

/// [`measurement_tensor`] of another element type, each value through `convert`
/// (`half::bf16::from_f64`, ..).
fn measurement_tensor_as<T: crate::runtime::Element>(
    gpu: &Gpu,
    dims: &[usize],
    convert: fn(f64) -> T,
) -> Result<DeviceTensor<T>, Error> {
    gpu.upload(&(0..dims.iter().product::<usize>()).map(|i| convert(measurement_value(i))).collect::<Vec<_>>(), dims)
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
    /// β of the GEMMs' C = α·A·B + β·C (the kernels, `tessera::gemm` and cuBLAS alike; the
    /// fused epilogues take none): 0 never reads C.
    pub beta: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Table,
    Json,
    Csv,
}

impl Default for BenchOptions {
    /// Every family at its default sizes, 20 repetitions after 3 warm-ups, L2 flushed, a table,
    /// β = 0.
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
            beta: 0.0,
        }
    }
}

/// One kernel at one shape, beside its baseline.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
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
    /// An estimate of the host time inside the timing: the median host side of the timed
    /// launch ([`crate::runtime::Timing::host_ms`]) less the GPU time of the L2 flush queued
    /// before it, which hides that much (0 where the flush hid it all, or nothing was
    /// measured). An entry point of several launches overlaps some of its host time with its
    /// own earlier kernels, so for it this is an upper bound.
    pub host_ms: f64,
}

impl BenchRow {
    /// Whether the GPU waited for the host for half the timed median or more: the figure is
    /// then the launch path's, not the kernel's (a LayerNorm launch that took 0.9 ms of host
    /// time was benched at 10% of the device copy).
    ///
    /// ```
    /// # let row = |median_ms, host_ms| tessera::bench::BenchRow { median_ms, host_ms, ..Default::default() };
    /// assert!(row(1.2, 0.9).waited_for_host());
    /// assert!(!row(0.130, 0.0).waited_for_host());
    /// ```
    pub fn waited_for_host(&self) -> bool {
        self.host_ms >= 0.5 * self.median_ms
    }
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
    // The GPU time of one flush: the host side of a timed launch hides behind the flush queued
    // before it, and only what it takes beyond that is inside the timing (`BenchRow::host_ms`).
    let flush_ms = if options.flush_l2 { gpu.time(1, 5, &mut flush)?.median_ms } else { 0.0 };
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
        Family::Hgemm => ENTRY_POINT_TYPES.len(),
        Family::Sgemm => SGEMM_ENTRY_POINT_TYPES.len(),
        // attention::backward, non-causal and causal, and on Hopper mma.sync's beside it
        Family::Attention => 2 * backward_tensor_cores(gpu, shape).len(),
        // gemv::gemv_t on f32 and bf16, every pass it takes, at an Aᵀ·x shape; stencil::sweep_colour on
        // RedBlack's padded rows at a colour shape
        Family::Gemv | Family::Stencil => bandwidth_entry_points(family, shape).len(),
        // the fused GEMMs' entry points: gemm_bias_gelu on f32 and bf16, the rest on bf16
        Family::Epilogue => EPILOGUE_ENTRY_POINTS.len(),
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
        let mut baseline = Baseline::new(gpu, family, &shape, None, crate::dsl::ElementType::F32, false)?;
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
            // an SGEMM of B stored [N, K] beside cuBLAS on that layout, the others on B [K, N]
            let sgemm_layout_changes = family == Family::Sgemm && baseline.b_transposed() != gemm_b_transposed(kernel);
            if family == Family::Hgemm || family == Family::Epilogue || sgemm_layout_changes {
                // cuBLAS on the kernel's own input type (BF16 or F16; and its epilogue kernel)
                baseline = Baseline::new(
                    gpu,
                    family,
                    &shape,
                    Some(gemm_input_type(kernel)),
                    gemm_output_type(kernel),
                    reads_residual(kernel),
                )?;
                if gemm_b_transposed(kernel) {
                    baseline = baseline.with_b_transposed()?;
                }
            }
            if family == Family::Hgemm && through_aligned_copies(kernel, &shape) {
                // a TMA kernel on rows TMA cannot read copies element by element: what runs it
                // at full width is the aligned copies of `tessera::gemm`, timed with them
                let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
                let dims = [value("M"), value("N"), value("K")];
                let types = crate::gemm_dispatch::GemmTypes::of(kernel);
                let (base, timing, launched) =
                    time_gemm(types, Some(kernel), gpu, options, dims, &mut flush, &mut baseline)?;
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
                    ("beta".into(), f64::from(options.beta)),
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
            let (base, timing, launched) = measure.time_launch_beside(&mut flush, || baseline.run(options.beta))?;
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
                host_ms: timing.host_ms.unwrap_or(0.0),
            });
        }
        if tf32_entry_point {
            // what a B stored [K, N] runs: B as it is where TMA reads its rows, else a
            // transposed copy first, timed with it
            let name = "hgemm::gemm_tf32_wgmma (B [K, N])";
            progress(Progress { done, of, step: &format!("{name} at {label}") });
            done += 1;
            baseline = Baseline::new(
                gpu,
                family,
                &shape,
                Some(crate::dsl::ElementType::F32),
                crate::dsl::ElementType::F32,
                false,
            )?;
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
        for entry in bandwidth_entry_points(family, &shape) {
            progress(Progress { done, of, step: &format!("{} at {label}", entry.name) });
            done += 1;
            let (base, timing, launched) = (entry.time)(gpu, options, entry.dims, &mut flush, &mut baseline)?;
            let copy_gb_per_s = baseline_bytes / 1e9 / (base.median_ms * 1e-3);
            rows.push(entry_point_row(
                family,
                entry.name.into(),
                &label,
                family.work(entry.work_of, &shape),
                &timing,
                (baseline.name(), copy_gb_per_s),
                &launched,
            ));
        }
        if family == Family::Epilogue {
            let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
            let dims = [value("M"), value("N"), value("K")];
            for entry in &EPILOGUE_ENTRY_POINTS {
                progress(Progress { done, of, step: &format!("{} ({}) at {label}", entry.function, entry.input) });
                done += 1;
                let sixteen_bit = entry.input != crate::dsl::ElementType::F32;
                baseline = Baseline::new(
                    gpu,
                    family,
                    &shape,
                    sixteen_bit.then_some(entry.input),
                    entry.input,
                    entry.residual,
                )?;
                if entry.b_transposed {
                    baseline = baseline.with_b_transposed()?;
                }
                let (name, (base, timing, launched)) =
                    time_epilogue_entry_point(entry, gpu, options, dims, &mut flush, &mut baseline)?;
                let baseline_tflops = baseline_flops / 1e12 / (base.median_ms * 1e-3);
                rows.push(entry_point_row(
                    family,
                    name,
                    &label,
                    family.work(entry.work_of, &shape),
                    &timing,
                    (baseline.name(), baseline_tflops),
                    &launched,
                ));
            }
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
        let gemm_types: &[crate::gemm_dispatch::GemmTypes] = match family {
            Family::Hgemm => &ENTRY_POINT_TYPES,
            Family::Sgemm => &SGEMM_ENTRY_POINT_TYPES,
            _ => &[],
        };
        for &types in gemm_types {
            let name = entry_point_name(types);
            progress(Progress { done, of, step: &format!("{name} at {label}") });
            done += 1;
            baseline = Baseline::new(gpu, family, &shape, Some(types.input), types.output, false)?;
            if types.b_transposed {
                baseline = baseline.with_b_transposed()?;
            }
            let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(1, |(_, v)| (*v).max(1) as usize);
            let (m, n, k) = (value("M"), value("N"), value("K"));
            let (flops, bytes) = family.work("", &shape);
            let (base, timing, launched) = time_gemm(types, None, gpu, options, [m, n, k], &mut flush, &mut baseline)?;
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
        // the launch's whole host time until here; what the flush did not hide from here on
        row.host_ms = (row.host_ms - flush_ms).max(0.0);
    }
    Ok(rows)
}

/// Whether the hgemm bench times `kernel` at `shape` through aligned copies of A and B: a TMA
/// kernel with 16-bit inputs, at a shape whose rows of A (K) or B (N) are not a multiple of 16
/// bytes.
fn through_aligned_copies(kernel: &KernelDefinition, shape: &[(String, i64)]) -> bool {
    let unaligned = |name: &str| shape.iter().any(|(n, v)| n == name && v % 8 != 0);
    let tma = kernel.ir().is_ok_and(|ir| ir.copies_by_tma());
    tma && gemm_input_type(kernel).is_half() && (unaligned("K") || unaligned("N"))
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

    #[test]
    fn a_narrow_gemv_kernel_runs_where_gemv_takes_it_and_when_named_only_on_rows_it_holds() {
        let shape = |k: i64| vec![("M".to_string(), 1024), ("K".to_string(), k)];
        let lanes_64 = &gemv::gemv_lanes_64_f32::KERNEL;
        assert!(Family::Gemv.measures(lanes_64, &shape(64)));
        assert!(!Family::Gemv.measures(lanes_64, &shape(32)));
        assert!(!Family::Gemv.measures(lanes_64, &shape(65)));
        assert!(Family::Gemv.computes(lanes_64, &shape(32)));
        assert!(!Family::Gemv.computes(lanes_64, &shape(65)));
        // the warp per row is measured at every row length, beside them
        assert!(Family::Gemv.measures(&gemv::gemv_f32::KERNEL, &shape(64)));
        assert!(Family::Gemv.computes(&gemv::gemv_f32::KERNEL, &shape(8192)));
        assert!(Family::Gemv.measures(&gemv::gemv_lanes_1024_bf16::KERNEL, &shape(1000)));
        // Aᵀ·x's narrow first passes alike, on N
        let transposed = |n: i64| vec![("M".to_string(), 1024), ("N".to_string(), n), ("S".to_string(), 4)];
        let t_64 = &gemv::gemv_t_lanes_64_f32::KERNEL;
        assert!(Family::Gemv.measures(t_64, &transposed(64)));
        assert!(!Family::Gemv.measures(t_64, &transposed(65)));
        assert!(!Family::Gemv.computes(t_64, &transposed(65)));
        assert!(Family::Gemv.computes(t_64, &transposed(33)));
    }

    #[test]
    fn a_softmax_or_norm_kernel_is_measured_where_its_element_type_takes_it() {
        // rows of 3073 to 4096 columns: 128 × 32 blocks for 16-bit rows, the 5120-column tier
        // for f32 rows
        let shape = |columns: i64| vec![("R".to_string(), 8192), ("C".to_string(), columns)];
        assert!(Family::Norm.measures(&norm::layer_norm_block_4096_bf16::KERNEL, &shape(4096)));
        assert!(!Family::Norm.measures(&norm::layer_norm_block_4096_bf16::KERNEL, &shape(4097)));
        // .. and computed by a kernel named with --kernels only on rows it holds
        assert!(Family::Norm.computes(&norm::layer_norm_block_6144_bf16::KERNEL, &shape(6144)));
        assert!(!Family::Norm.computes(&norm::layer_norm_block_6144_bf16::KERNEL, &shape(6145)));
        assert!(Family::Softmax.computes(&softmax::softmax_aligned_4096_f16::KERNEL, &shape(100)));
        assert!(!Family::Softmax.computes(&softmax::softmax_aligned_4096_f16::KERNEL, &shape(4097)));
        // 16-bit LayerNorm on rows of 5121 to 7168 columns: blocks of 128 × 48 and 128 × 56
        assert!(Family::Norm.measures(&norm::layer_norm_block_6144_f16::KERNEL, &shape(6144)));
        assert!(Family::Norm.measures(&norm::layer_norm_block_7168_bf16::KERNEL, &shape(7000)));
        assert!(!Family::Norm.measures(&norm::layer_norm_bf16::KERNEL, &shape(7168)));
        assert!(Family::Norm.measures(&norm::rms_norm_short_f32::KERNEL, &shape(3073)));
        assert!(!Family::Norm.measures(&norm::rms_norm_short_f16::KERNEL, &shape(3073)));
        assert!(Family::Softmax.measures(&softmax::softmax_aligned_4096_f16::KERNEL, &shape(3073)));
        assert!(Family::Softmax.measures(&softmax::softmax_aligned_short_f32::KERNEL, &shape(4096)));
        assert!(!Family::Softmax.measures(&softmax::softmax_aligned_short_bf16::KERNEL, &shape(4096)));
    }
}
