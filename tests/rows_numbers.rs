//! The row-wise kernels — softmax, LayerNorm, RMSNorm, GEMV and its transpose — against f64
//! references, at row lengths on both sides of each kernel's limits (1, 127, 128, 129, 1024,
//! 1025, 4097, 8193, …) and with unaligned leading dimensions; on the CPU simulation (three
//! thread orders) and, ignored without one, on a GPU at the benchmark's shapes.

mod common;

use common::{random_floats, POISON};
use tessera::catalog::{gemv, norm, softmax};
use tessera::Backend;

on_both_backends!(
    softmax_of_rows_with_masked_runs_matches_an_f64_reference,
    softmax_rows_sum_to_one_and_match_an_f64_reference,
    softmax_takes_the_kernel_for_the_row_length,
    f32_softmax_keeps_its_vectors_on_rows_that_start_anywhere,
    bf16_and_f16_softmax_match_an_f64_reference_from_the_rounded_inputs,
    sixteen_bit_softmax_keeps_its_vectors_on_rows_that_start_anywhere,
    norms_write_rows_that_start_elsewhere_than_x_and_weight,
    layer_norm_matches_an_f64_reference,
    norms_by_groups_of_lanes_keep_their_vectors_and_narrow_on_unaligned_rows,
    rms_norm_matches_an_f64_reference,
    bf16_and_f16_norms_match_an_f64_reference_from_the_rounded_inputs,
    layer_norm_keeps_its_accuracy_on_rows_far_from_zero,
    layer_norm_of_a_row_of_one_value_is_the_bias,
    gemv_matches_an_f64_reference,
    every_narrow_gemv_kernel_matches_an_f64_reference_at_the_edges_of_its_width,
    every_narrow_gemv_t_kernel_matches_an_f64_reference_at_the_edges_of_its_width,
    bf16_and_f16_gemv_match_an_f64_reference_from_the_rounded_inputs,
    gemv_t_matches_an_f64_reference,
    bf16_and_f16_gemv_t_match_an_f64_reference_from_the_rounded_inputs,
    gemv_t_in_one_launch_adds_the_slices_as_the_finishing_pass_does,
);

/// (rows, columns) for the softmax: every kernel, each side of its limit.
fn softmax_shapes(backend: &Backend) -> Vec<(usize, usize)> {
    let mut shapes = vec![
        (3, 1),
        (37, 64),
        (11, 65),
        (9, 127),
        (17, 128),
        (5, 129),
        (7, 256),
        (3, 257),
        (3, 512),
        (2, 513),
        (3, 1024),
        (2, 1025),
        (2, 2048),
        (2, 2049),
        (2, 3072),
        (2, 3073),
        (2, 4096),
        (2, 4097),
        (1, 8192),
        (1, 8193),
        (1, 16385),
    ];
    if backend.is_simulated() {
        shapes.extend([(1, 32769), (3, 40000), (2, 65536), (1, 65537)]);
    } else {
        shapes.extend([(4096, 4097), (32768, 128), (16, 65536), (8192, 8192), (2048, 16384), (64, 32768)]);
    }
    shapes
}

/// Inputs spread over [-8, 8): softmax must survive large exponents.
fn logits(len: usize, seed: u64) -> Vec<f32> {
    random_floats(len, seed).iter().map(|v| v * 8.0).collect()
}

fn softmax_rows_sum_to_one_and_match_an_f64_reference(backend: &Backend) {
    for (rows, cols) in softmax_shapes(backend) {
        let host = logits(rows * cols, (rows * 31 + cols) as u64);
        let x = backend.upload(&host, [rows, cols]).unwrap();
        let mut y = backend.filled([rows, cols], f32::from_bits(POISON)).unwrap();
        let launched = softmax::softmax(backend, &x, &mut y).unwrap();
        // the kernel the row length calls for (the long rows' second pass for the chunked ones)
        assert_eq!(launched.kernel, softmax::kernel_for::<f32>(backend, cols).name(), "{rows}×{cols}");
        let got = backend.download(&y).unwrap();
        assert_softmax_rows(
            &widened(&host),
            &widened(&got),
            F32,
            rows,
            cols,
            cols,
            0,
            cols,
            0,
            &format!("{rows}×{cols}"),
        );
    }
}

/// Rows with runs of −∞ (an attention mask, padding): a run as long as a block's or a chunk's
/// share of the row must add nothing, not make the row NaN (the long rows' chunks did).
fn softmax_of_rows_with_masked_runs_matches_an_f64_reference(backend: &Backend) {
    for (cols, masked) in [
        (65537, 65536..65537),
        (70000, 0..42000),
        (70000, 35000..70000),
        (24000, 0..23999),
        (4097, 0..4000),
        (128, 0..100),
    ] {
        let mut host = logits(cols, cols as u64);
        host[masked.clone()].iter_mut().for_each(|v| *v = f32::NEG_INFINITY);
        let x = backend.upload(&host, [1, cols]).unwrap();
        let mut y = backend.filled([1, cols], f32::from_bits(POISON)).unwrap();
        let launched = softmax::softmax(backend, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        let what = format!("1×{cols}, columns {masked:?} −∞, {}", launched.kernel);
        assert_softmax_rows(&widened(&host), &widened(&got), F32, 1, cols, cols, 0, cols, 0, &what);
    }
}

fn softmax_takes_the_kernel_for_the_row_length(backend: &Backend) {
    // clusters from sm_90 on; the simulation runs them as an H100 would
    let clusters = backend.as_gpu().is_none_or(|gpu| gpu.arch() >= tessera::Arch::SM_90);
    let long = if clusters { "softmax_cluster_f32" } else { "softmax_chunk_write_f32" };
    for (cols, kernel) in [
        (128, "softmax_warp_f32"),
        (1024, "softmax_warp_wide_f32"),
        (1025, "softmax_aligned_2048_f32"),
        (2048, "softmax_aligned_2048_f32"),
        (2049, "softmax_aligned_3072_f32"),
        (3072, "softmax_aligned_3072_f32"),
        (4097, "softmax_aligned_short_f32"),
        (5120, "softmax_aligned_short_f32"),
        (5121, "softmax_aligned_f32"),
        (8192, "softmax_aligned_f32"),
        (8193, "softmax_aligned_long_f32"),
        (16384, "softmax_aligned_long_f32"),
        (16385, "softmax_aligned_wide_f32"),
        (32768, "softmax_aligned_wide_f32"),
        (32769, long),
        (65536, long),
        (65537, "softmax_chunk_write_f32"),
    ] {
        assert_eq!(softmax::kernel_for::<f32>(backend, cols).name(), kernel, "{cols} columns");
        // the same steps for 16-bit rows
        let bf16 = kernel.replace("_f32", "_bf16");
        assert_eq!(softmax::kernel_for::<tessera::half::bf16>(backend, cols).name(), bf16, "{cols} columns");
        let f16 = kernel.replace("_f32", "_f16");
        assert_eq!(softmax::kernel_for::<tessera::half::f16>(backend, cols).name(), f16, "{cols} columns");
    }
    // rows of 3073 to 4096 columns: 128 × 32 blocks for 16-bit rows, the 5120-column tier for f32
    for cols in [3073, 4096] {
        assert_eq!(softmax::kernel_for::<f32>(backend, cols).name(), "softmax_aligned_short_f32", "{cols} columns");
        let bf16 = softmax::kernel_for::<tessera::half::bf16>(backend, cols);
        assert_eq!(bf16.name(), "softmax_aligned_4096_bf16", "{cols} columns");
        let f16 = softmax::kernel_for::<tessera::half::f16>(backend, cols);
        assert_eq!(f16.name(), "softmax_aligned_4096_f16", "{cols} columns");
    }
    // rows to 1024 columns in five widths, a group of 8 or 16 lanes per row to 256
    for (cols, kernel) in [
        (1, "softmax_warp_64"),
        (64, "softmax_warp_64"),
        (65, "softmax_warp"),
        (128, "softmax_warp"),
        (129, "softmax_warp_256"),
        (256, "softmax_warp_256"),
        (257, "softmax_warp_512"),
        (512, "softmax_warp_512"),
        (513, "softmax_warp_wide"),
        (1024, "softmax_warp_wide"),
    ] {
        assert_eq!(softmax::kernel_for::<f32>(backend, cols).name(), format!("{kernel}_f32"));
        assert_eq!(softmax::kernel_for::<tessera::half::bf16>(backend, cols).name(), format!("{kernel}_bf16"));
        assert_eq!(softmax::kernel_for::<tessera::half::f16>(backend, cols).name(), format!("{kernel}_f16"));
    }
    assert_eq!(softmax::kernel_for_columns::<f32>(40000, false).name(), "softmax_chunk_write_f32");
    // a row of a wider matrix: the leading dimension is not the column count
    let (rows, cols, ld) = (5, 100, 103);
    let host = logits(rows * ld, 7);
    let x = backend.upload(&host, [rows, ld]).unwrap();
    let view = x.submatrix(0..rows, 3..3 + cols).unwrap();
    let mut y = backend.zeros::<f32>([rows, cols]).unwrap();
    let launched = softmax::softmax(backend, &view, &mut y).unwrap();
    assert_eq!(launched.kernel, "softmax_warp_f32");
    let got = backend.download(&y).unwrap();
    for r in 0..rows {
        let total: f32 = got[r * cols..(r + 1) * cols].iter().sum();
        assert!((total - 1.0).abs() < 1e-5, "row {r} sums to {total}");
        let first = &host[r * ld + 3..r * ld + 3 + cols];
        let argmax = (0..cols).max_by(|&a, &b| first[a].total_cmp(&first[b])).unwrap();
        let got_argmax = (0..cols).max_by(|&a, &b| got[r * cols + a].total_cmp(&got[r * cols + b])).unwrap();
        assert_eq!(argmax, got_argmax, "row {r}");
    }
}

/// How a softmax's y is stored: f32, or rounded once to bf16 or f16.
#[derive(Clone, Copy)]
struct Storage {
    /// A bound on the relative error of the rounding to the stored type: one ulp, twice what
    /// rounding to nearest can make (0 for f32).
    rounding: f64,
    /// The absolute error near zero (f16's subnormals: half their spacing).
    floor: f64,
}

const F32: Storage = Storage { rounding: 0.0, floor: 0.0 };
const BF16: Storage = Storage { rounding: 1.0 / 256.0, floor: 0.0 };
const F16: Storage = Storage { rounding: 1.0 / 2048.0, floor: 1.0 / 33_554_432.0 };

/// The softmax of every row of `x` (`rows` × `cols` at leading dimension `ld`, from column
/// `x_first` of its rows) against f64, as `got` holds it (leading dimension `y_ld`, from
/// column `y_first`), both as the values the kernel read and wrote.
#[allow(clippy::too_many_arguments)]
fn assert_softmax_rows(
    host: &[f64],
    got: &[f64],
    storage: Storage,
    rows: usize,
    cols: usize,
    ld: usize,
    x_first: usize,
    y_ld: usize,
    y_first: usize,
    what: &str,
) {
    for r in 0..rows {
        let row = &host[r * ld + x_first..r * ld + x_first + cols];
        let max = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        let sum: f64 = row.iter().map(|&v| (v - max).exp()).sum();
        for c in 0..cols {
            let want = (row[c] - max).exp() / sum;
            let g = got[r * y_ld + y_first + c];
            // expf's few ulps and a sum of `cols` f32 terms, then one rounding to the stored type
            let slack =
                1e-6 * want + 4e-7 * want * (cols as f64).sqrt() + 1e-12 + storage.rounding * want + storage.floor;
            assert!((g - want).abs() <= slack, "{what}: y[{r}][{c}] = {g}, want {want}");
        }
    }
}

fn widened(values: &[f32]) -> Vec<f64> {
    values.iter().map(|&v| f64::from(v)).collect()
}

fn f32_softmax_keeps_its_vectors_on_rows_that_start_anywhere(backend: &Backend) {
    // the aligned kernels: (rows, columns, x's leading dimension, x's first column, y's leading
    // dimension, y's first column): rows whose first aligned column cycles 0..3 (4097), a view
    // starting one float in, rows shorter than a vector, and a y whose rows start elsewhere than
    // x's (its stores go element by element)
    let cases = [
        (6, 4097, 4097, 0, 4097, 0),
        (5, 5120, 5123, 1, 5123, 1),
        (4, 8, 9, 0, 9, 0),
        (4, 3, 7, 2, 7, 2),
        (5, 1030, 1031, 0, 1033, 2),
    ];
    let mut runs: Vec<(&tessera::KernelDefinition, Vec<(usize, usize, usize, usize, usize, usize, u32)>)> =
        <f32 as softmax::SoftmaxElement>::KERNELS
            .blocks
            .iter()
            .map(|&(most, kernel)| {
                // the cases that fit the kernel's rows, and a full row of 2048 from column 1
                let fitting = cases.iter().chain(&[(3, 2048, 2051, 1, 2051, 1)]).filter(|case| case.1 <= most);
                (kernel, fitting.map(|&(r, c, ld, xf, yld, yf)| (r, c, ld, xf, yld, yf, 4)).collect())
            })
            .collect();
    // the warps' kernels count vectors of 4 from each row's start: views of rows whose leading
    // dimension is a multiple of 4 and whose length is not (the columns after the last vector
    // one a lane), rows shorter than a vector, more rows than fill a block, and rows 8 bytes
    // apart, which the launch narrows to vectors of 2
    for &(most, kernel) in <f32 as softmax::SoftmaxElement>::KERNELS.warps {
        runs.push((
            kernel,
            vec![
                (37, most - 2, most, 0, most + 4, 4, 4),
                (3, 2, 4, 0, 4, 0, 4),
                (6, most - 3, most + 2, 0, most + 2, 0, 2),
            ],
        ));
    }
    for (kernel, cases) in runs {
        for (rows, cols, ld, x_first, y_ld, y_first, vector) in cases {
            let what =
                format!("{} on {rows}×{cols} (x ld {ld} from {x_first}, y ld {y_ld} from {y_first})", kernel.name());
            let host = logits(rows * ld, (rows * 17 + cols) as u64);
            let parent = backend.upload(&host, [rows, ld]).unwrap();
            let x = parent.submatrix(0..rows, x_first..x_first + cols).unwrap();
            let mut y_parent = backend.filled([rows, y_ld], f32::from_bits(POISON)).unwrap();
            let mut y = y_parent.submatrix_mut(0..rows, y_first..y_first + cols).unwrap();
            let launched = kernel
                .launch(backend, &mut [tessera::Argument::input("x", &x), tessera::Argument::output("y", &mut y)])
                .unwrap();
            // no row is read or written narrower than its rows allow
            assert_eq!(launched.vector.get(), vector, "{what}");
            let got = backend.download(&y_parent).unwrap();
            assert_softmax_rows(&widened(&host), &widened(&got), F32, rows, cols, ld, x_first, y_ld, y_first, &what);
            // the columns outside the view are untouched
            for r in 0..rows {
                for c in (0..y_first).chain(y_first + cols..y_ld) {
                    assert_eq!(got[r * y_ld + c].to_bits(), POISON, "{what}: y[{r}][{c}] written");
                }
            }
        }
    }
}

fn bf16_and_f16_softmax_match_an_f64_reference_from_the_rounded_inputs(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: softmax::SoftmaxElement>(
        backend: &Backend,
        to: impl Fn(f32) -> T,
        back: impl Fn(T) -> f64,
        storage: Storage,
        name: &str,
    ) {
        for (rows, cols) in softmax_shapes(backend) {
            let host: Vec<T> = logits(rows * cols, (rows * 31 + cols) as u64).into_iter().map(&to).collect();
            let x = backend.upload(&host, [rows, cols]).unwrap();
            // NaN where the kernel writes nothing: an element left unwritten fails the comparison
            let mut y = backend.filled([rows, cols], to(f32::NAN)).unwrap();
            let launched = softmax::softmax(backend, &x, &mut y).unwrap();
            assert_eq!(launched.kernel, softmax::kernel_for::<T>(backend, cols).name(), "{name} {rows}×{cols}");
            assert!(launched.kernel.ends_with(name), "{name} {rows}×{cols}: {}", launched.kernel);
            let got: Vec<f64> = backend.download(&y).unwrap().into_iter().map(&back).collect();
            let host: Vec<f64> = host.into_iter().map(&back).collect();
            let what = format!("{name} {rows}×{cols}");
            assert_softmax_rows(&host, &got, storage, rows, cols, cols, 0, cols, 0, &what);
        }
    }
    check(backend, bf16::from_f32, |v: bf16| f64::from(v.to_f32()), BF16, "bf16");
    check(backend, f16::from_f32, |v: f16| f64::from(v.to_f32()), F16, "f16");
}

fn sixteen_bit_softmax_keeps_its_vectors_on_rows_that_start_anywhere(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: softmax::SoftmaxElement>(
        backend: &Backend,
        to: impl Fn(f32) -> T,
        back: impl Fn(T) -> f64,
        storage: Storage,
    ) {
        // (rows, columns, x's leading dimension, x's first column, y's leading dimension, y's
        // first column): rows whose first aligned column cycles 0..7 (4097), views starting 1
        // and 5 elements in, rows shorter than a vector, a y whose rows start elsewhere than x's
        let cases = [
            (9, 4097, 4097, 0, 4097, 0),
            (5, 5120, 5125, 1, 5125, 1),
            (4, 16, 23, 5, 22, 5),
            (4, 3, 7, 2, 7, 2),
            (5, 1030, 1031, 0, 1033, 2),
        ];
        // the warps' kernels count vectors of 8 from each row's start: views of rows whose leading
        // dimension is a multiple of 8 and whose length is not (the columns after the last vector
        // one a lane), rows shorter than a vector, more rows than fill a block (and than a warp's
        // groups hold), and rows 8 bytes apart, which the launch narrows to vectors of 4
        let kernels = T::KERNELS;
        let mut runs: Vec<(&tessera::KernelDefinition, Vec<(usize, usize, usize, usize, usize, usize, u32)>)> = kernels
            .blocks
            .iter()
            .map(|&(most, kernel)| {
                // the cases that fit the kernel's rows, and full rows of 2048 and 4096 from
                // element 5 (the 4096-column tier's whole row, both its ends by element)
                let full = [(3, 2048, 2053, 5, 2053, 5), (3, 4096, 4101, 5, 4101, 5)];
                let fitting = cases.iter().chain(&full).filter(|case| case.1 <= most);
                (kernel, fitting.map(|&(r, c, ld, xf, yld, yf)| (r, c, ld, xf, yld, yf, 8)).collect())
            })
            .collect();
        for &(most, kernel) in kernels.warps {
            runs.push((
                kernel,
                vec![
                    (37, most - 2, most, 0, most + 8, 8, 8),
                    (3, 2, 8, 0, 8, 0, 8),
                    (6, most - 3, most + 4, 0, most + 4, 0, 4),
                ],
            ));
        }
        for (kernel, cases) in runs {
            for (rows, cols, ld, x_first, y_ld, y_first, vector) in cases {
                let what = format!(
                    "{} on {rows}×{cols} (x ld {ld} from {x_first}, y ld {y_ld} from {y_first})",
                    kernel.name()
                );
                let host: Vec<T> = logits(rows * ld, (rows * 17 + cols) as u64).into_iter().map(&to).collect();
                let parent = backend.upload(&host, [rows, ld]).unwrap();
                let x = parent.submatrix(0..rows, x_first..x_first + cols).unwrap();
                let mut y_parent = backend.filled([rows, y_ld], to(f32::NAN)).unwrap();
                let mut y = y_parent.submatrix_mut(0..rows, y_first..y_first + cols).unwrap();
                let launched = kernel
                    .launch(backend, &mut [tessera::Argument::input("x", &x), tessera::Argument::output("y", &mut y)])
                    .unwrap();
                // no row is read or written narrower than its rows allow
                assert_eq!(launched.vector.get(), vector, "{what}");
                let got: Vec<f64> = backend.download(&y_parent).unwrap().into_iter().map(&back).collect();
                let host: Vec<f64> = host.into_iter().map(&back).collect();
                assert_softmax_rows(&host, &got, storage, rows, cols, ld, x_first, y_ld, y_first, &what);
                // the columns outside the view are untouched
                for r in 0..rows {
                    for c in (0..y_first).chain(y_first + cols..y_ld) {
                        assert!(got[r * y_ld + c].is_nan(), "{what}: y[{r}][{c}] written");
                    }
                }
            }
        }
    }
    check(backend, bf16::from_f32, |v: bf16| f64::from(v.to_f32()), BF16);
    check(backend, f16::from_f32, |v: f16| f64::from(v.to_f32()), F16);
}

fn norm_shapes(backend: &Backend) -> Vec<(usize, usize)> {
    // each kernel's limit, both sides: 128, 256, 512, 1024 (lanes), 2048, 3072, 4096 (16-bit),
    // 5120 (short), 8192, MAX_COLUMNS (wide); 37 rows of 128, more than a block's 32
    let mut shapes = vec![
        (3, 1),
        (37, 128),
        (5, 129),
        (7, 256),
        (3, 257),
        (3, 512),
        (2, 513),
        (3, 1024),
        (2, 1025),
        (2, 2048),
        (2, 2049),
        (2, 3072),
        (2, 3073),
        (2, 4096),
        (2, 4097),
        (1, 5120),
        (2, 5121),
        (1, 8192),
        (1, 8193),
        (1, norm::MAX_COLUMNS),
    ];
    if !backend.is_simulated() {
        shapes.extend([
            (8192, 8192),
            (4096, 4097),
            (32768, 1024),
            (65536, 768),
            (131072, 128),
            (16384, 2048),
            (32768, 1536),
        ]);
    }
    shapes
}

/// LayerNorm of one row in f64 (eps 1e-5), with `weight` and `bias` from their first element.
fn layer_norm_reference(row: &[f32], weight: &[f32], bias: &[f32]) -> Vec<f64> {
    let row: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
    let mean = row.iter().sum::<f64>() / row.len() as f64;
    let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / row.len() as f64;
    let inv = 1.0 / (var + 1e-5).sqrt();
    row.iter().zip(weight).zip(bias).map(|((v, w), b)| (v - mean) * inv * f64::from(*w) + f64::from(*b)).collect()
}

/// RMSNorm of one row in f64, with `weight` from its first element.
fn rms_norm_reference(row: &[f32], weight: &[f32], eps: f64) -> Vec<f64> {
    let row: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
    let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / row.len() as f64 + eps).sqrt();
    row.iter().zip(weight).map(|(v, w)| v * inv * f64::from(*w)).collect()
}

fn assert_layer_norm_row(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (c, (g, want)) in got.iter().map(|&g| f64::from(g)).zip(want).enumerate() {
        assert!((g - want).abs() <= 2e-5 * (1.0 + want.abs()), "{what}: y[{c}] = {g}, want {want}");
    }
}

fn layer_norm_matches_an_f64_reference(backend: &Backend) {
    for (rows, cols) in norm_shapes(backend) {
        let host: Vec<f32> = random_floats(rows * cols, cols as u64).iter().map(|v| 3.0 + v * 2.0).collect();
        let (host_w, host_b) = (random_floats(cols, 11), random_floats(cols, 13));
        let x = backend.upload(&host, [rows, cols]).unwrap();
        let (w, b) = (backend.upload(&host_w, [cols]).unwrap(), backend.upload(&host_b, [cols]).unwrap());
        let mut y = backend.filled([rows, cols], f32::from_bits(POISON)).unwrap();
        let launched = norm::layer_norm(backend, &x, &w, &b, &mut y, 1e-5).unwrap();
        let kernel = norm::layer_norm_kernel_for::<f32>(cols).map(|kernel| kernel.name());
        assert_eq!(Some(launched.kernel), kernel, "{rows}×{cols}");
        let got = backend.download(&y).unwrap();
        for r in 0..rows {
            let want = layer_norm_reference(&host[r * cols..(r + 1) * cols], &host_w, &host_b);
            assert_layer_norm_row(&got[r * cols..(r + 1) * cols], &want, &format!("{rows}×{cols}: row {r}"));
        }
    }
    let too_long = backend.zeros::<f32>([1, norm::MAX_COLUMNS + 1]).unwrap();
    let w = backend.zeros::<f32>([norm::MAX_COLUMNS + 1]).unwrap();
    let mut y = backend.zeros::<f32>([1, norm::MAX_COLUMNS + 1]).unwrap();
    let error = norm::layer_norm(backend, &too_long, &w, &w, &mut y, 1e-5).unwrap_err();
    assert!(matches!(error, norm::NormError::RowTooLong { columns: 16385, max: 16384, .. }), "{error}");
    // a kernel launched directly on rows longer than it holds is refused, not run on part of each
    let (x, w) = (backend.zeros::<f32>([2, 5121]).unwrap(), backend.zeros::<f32>([5121]).unwrap());
    let mut y = backend.zeros::<f32>([2, 5121]).unwrap();
    let error = norm::layer_norm_short_f32::launch(backend, &x, &w, &w, &mut y, 1e-5).unwrap_err();
    assert!(
        matches!(&error, tessera::Error::Plan { source: tessera::dsl::LaunchPlanError::Requirement { requirement, values }, .. }
            if requirement == "C <= ITEMS * THREADS" && values.contains("C = 5121")),
        "{error}"
    );
}

fn norms_write_rows_that_start_elsewhere_than_x_and_weight(backend: &Backend) {
    use tessera::half::{bf16, f16};
    // x from column 1 of rows of cols + 6, weight and bias from element 2, y from column 1 or 3
    // of rows of cols + 4: every row takes another of the block kernels' store paths (vectors
    // where y's row, the weight and the bias start as x's row does; else the weights, then y,
    // element by element), LayerNorm and RMSNorm — f32 at 1025 columns (64 threads a row), 2049
    // (96) and 3073 (128 × 40); bf16 and f16 at 3073 and 4096 (128 × 32), 5121 (128 × 40, and
    // 128 × 48 for LayerNorm), 6144 and 7168 (128 × 56 for LayerNorm), within one rounding
    fn check<T: norm::NormElement + Copy>(
        backend: &Backend,
        columns: &[usize],
        to: impl Fn(f32) -> T,
        back: impl Fn(T) -> f32,
        (vector, relative, absolute): (u32, f64, f64),
        name: &str,
    ) {
        for &cols in columns {
            let (rows, ld, y_ld) = (8, cols + 6, cols + 4);
            let host: Vec<T> = random_floats(rows * ld, 21).iter().map(|v| to(3.0 + v * 2.0)).collect();
            let host_w: Vec<T> = random_floats(cols + 2, 23).into_iter().map(&to).collect();
            let host_b: Vec<T> = random_floats(cols + 2, 29).into_iter().map(&to).collect();
            let parent = backend.upload(&host, [rows, ld]).unwrap();
            let x = parent.submatrix(0..rows, 1..1 + cols).unwrap();
            let (w_all, b_all) =
                (backend.upload(&host_w, [1, cols + 2]).unwrap(), backend.upload(&host_b, [1, cols + 2]).unwrap());
            let (w, b) = (w_all.submatrix(0..1, 2..2 + cols).unwrap(), b_all.submatrix(0..1, 2..2 + cols).unwrap());
            let (w, b) = (w.reshape([cols]).unwrap(), b.reshape([cols]).unwrap());
            // the inputs as the kernels read them
            let widen = |values: &[T]| values.iter().map(|&v| back(v)).collect::<Vec<f32>>();
            let (host, host_w, host_b) = (widen(&host), widen(&host_w), widen(&host_b));
            for y_first in [1, 3] {
                for rms in [false, true] {
                    // NaN where the kernel writes nothing: an element left unwritten fails the comparison
                    let mut y_parent = backend.filled([rows, y_ld], to(f32::NAN)).unwrap();
                    let mut y = y_parent.submatrix_mut(0..rows, y_first..y_first + cols).unwrap();
                    let (launched, kernel) = if rms {
                        (norm::rms_norm(backend, &x, &w, &mut y, 1e-5), norm::rms_norm_kernel_for::<T>(cols))
                    } else {
                        (norm::layer_norm(backend, &x, &w, &b, &mut y, 1e-5), norm::layer_norm_kernel_for::<T>(cols))
                    };
                    let launched = launched.unwrap();
                    let what = format!("{} ({name}) on {cols} columns, y from {y_first}", launched.kernel);
                    assert_eq!(Some(launched.kernel), kernel.map(|kernel| kernel.name()), "{what}");
                    assert_eq!(launched.vector.get(), vector, "{what}");
                    let got = backend.download(&y_parent).unwrap();
                    for r in 0..rows {
                        let row = &host[r * ld + 1..r * ld + 1 + cols];
                        let want = if rms {
                            rms_norm_reference(row, &host_w[2..], 1e-5)
                        } else {
                            layer_norm_reference(row, &host_w[2..], &host_b[2..])
                        };
                        for (c, want) in want.iter().enumerate() {
                            let g = f64::from(back(got[r * y_ld + y_first + c]));
                            assert!(
                                (g - want).abs() <= relative * want.abs() + absolute,
                                "{what}: y[{r}][{c}] = {g}, want {want}"
                            );
                        }
                    }
                }
            }
        }
    }
    check(backend, &[1025, 2049, 3073], |v| v, |v| v, (4, 2e-5, 2e-5), "f32");
    // 16-bit LayerNorm's 6144- and 7168-column widths at their edges (5121, 6144; 7168)
    let sixteen_bit = [3073, 4096, 5121, 6144, 7168];
    check(backend, &sixteen_bit, bf16::from_f32, bf16::to_f32, (8, 2f64.powi(-8), 1e-4), "bf16");
    check(backend, &sixteen_bit, f16::from_f32, f16::to_f32, (8, 2f64.powi(-11), 1e-4), "f16");
}

fn norms_by_groups_of_lanes_keep_their_vectors_and_narrow_on_unaligned_rows(backend: &Backend) {
    // (rows, columns, x's leading dimension, weight's first element, y's leading dimension, y's
    // first column, the vector the launch keeps): the columns after the last vector one a lane,
    // rows shorter than a vector, views whose y starts 4 floats in, rows 8 bytes apart (vectors
    // of 2), a weight starting one element in (single floats); at each of the four widths by
    // lanes (the first four of each norm's kernels)
    let [layer_norms, rms_norms] = <f32 as norm::NormElement>::KERNELS;
    for (&(most, layer), &(_, rms)) in layer_norms.iter().zip(rms_norms).take(4) {
        for (rows, cols, ld, w_first, y_ld, y_first, vector) in [
            (37, most - 2, most, 0, most + 4, 4, 4),
            (3, 2, 4, 0, 4, 0, 4),
            (6, most - 3, most + 2, 0, most + 2, 0, 2),
            (5, most - 1, most, 1, most, 0, 1),
        ] {
            let what = format!("{rows}×{cols} (x ld {ld}, weight from {w_first}, y ld {y_ld} from {y_first})");
            let host: Vec<f32> = random_floats(rows * ld, 31 + cols as u64).iter().map(|v| 3.0 + v * 2.0).collect();
            let (host_w, host_b) = (random_floats(cols + w_first, 37), random_floats(cols + w_first, 41));
            let parent = backend.upload(&host, [rows, ld]).unwrap();
            let x = parent.submatrix(0..rows, 0..cols).unwrap();
            let (w_all, b_all) = (
                backend.upload(&host_w, [1, cols + w_first]).unwrap(),
                backend.upload(&host_b, [1, cols + w_first]).unwrap(),
            );
            let w = w_all.submatrix(0..1, w_first..w_first + cols).unwrap().reshape([cols]).unwrap();
            let b = b_all.submatrix(0..1, w_first..w_first + cols).unwrap().reshape([cols]).unwrap();
            for kernel in [layer, rms] {
                let mut y_parent = backend.filled([rows, y_ld], f32::from_bits(POISON)).unwrap();
                let mut y = y_parent.submatrix_mut(0..rows, y_first..y_first + cols).unwrap();
                let mut arguments = vec![tessera::Argument::input("x", &x), tessera::Argument::input("weight", &w)];
                if kernel.name() == layer.name() {
                    arguments.push(tessera::Argument::input("bias", &b));
                }
                arguments.push(tessera::Argument::output("y", &mut y));
                arguments.push(tessera::Argument::scalar("eps", 1e-5f32));
                let launched = kernel.launch(backend, &mut arguments).unwrap();
                let what = format!("{} on {what}", kernel.name());
                assert_eq!(launched.vector.get(), vector, "{what}");
                let got = backend.download(&y_parent).unwrap();
                for r in 0..rows {
                    let row = &host[r * ld..r * ld + cols];
                    let want = if kernel.name() == layer.name() {
                        layer_norm_reference(row, &host_w[w_first..], &host_b[w_first..])
                    } else {
                        rms_norm_reference(row, &host_w[w_first..], 1e-5)
                    };
                    assert_layer_norm_row(
                        &got[r * y_ld + y_first..r * y_ld + y_first + cols],
                        &want,
                        &format!("{what}: row {r}"),
                    );
                    // the columns outside the view are untouched
                    for c in (0..y_first).chain(y_first + cols..y_ld) {
                        assert_eq!(got[r * y_ld + c].to_bits(), POISON, "{what}: y[{r}][{c}] written");
                    }
                }
            }
        }
    }
}

fn rms_norm_matches_an_f64_reference(backend: &Backend) {
    for (rows, cols) in norm_shapes(backend) {
        let host = random_floats(rows * cols, 3 + cols as u64);
        let host_w = random_floats(cols, 17);
        let x = backend.upload(&host, [rows, cols]).unwrap();
        let w = backend.upload(&host_w, [cols]).unwrap();
        let mut y = backend.filled([rows, cols], f32::from_bits(POISON)).unwrap();
        norm::rms_norm(backend, &x, &w, &mut y, 1e-6).unwrap();
        let got = backend.download(&y).unwrap();
        for r in 0..rows {
            let want = rms_norm_reference(&host[r * cols..(r + 1) * cols], &host_w, 1e-6);
            for (c, &want) in want.iter().enumerate() {
                let g = f64::from(got[r * cols + c]);
                assert!((g - want).abs() <= 2e-5 * (1.0 + want.abs()), "{rows}×{cols}: y[{r}][{c}] = {g}, want {want}");
            }
        }
    }
}

fn gemv_shapes(backend: &Backend) -> Vec<(usize, usize)> {
    // 1300 × 1100 and 2049 × 600: gemv_t splits the rows of bands into slices (fewer column
    // bands than its band kernel runs alone on, wider than its narrow-row kernels); 1300 × 65
    // and 2049 × 31 take those
    let mut shapes = vec![
        (1, 1),
        (7, 33),
        (9, 255),
        (33, 257),
        (100, 1000),
        (257, 17),
        (1300, 65),
        (2049, 31),
        (1300, 1100),
        (2049, 600),
    ];
    if !backend.is_simulated() {
        shapes.extend([(8192, 8192), (4097, 4095)]);
    }
    shapes
}

/// Σ a·b in f64, and the bound on an f32 sum's error: `n` ulps of Σ |a·b|.
fn dot(a: impl Iterator<Item = f32>, b: impl Iterator<Item = f32>) -> (f64, f64) {
    let (mut sum, mut magnitude, mut n) = (0.0f64, 0.0f64, 0usize);
    for (x, y) in a.zip(b) {
        sum += f64::from(x) * f64::from(y);
        magnitude += (f64::from(x) * f64::from(y)).abs();
        n += 1;
    }
    (sum, magnitude * f64::from(f32::EPSILON) * (n as f64).sqrt().max(4.0))
}

/// Every y[j] of y = Aᵀ·x (A of m × n, row-major) within `dot`'s slack of the f64 sum.
fn assert_transposed_gemv(got: &[f32], host_a: &[f32], host_x: &[f32], (m, n): (usize, usize), what: &str) {
    for (j, g) in got.iter().enumerate() {
        let (want, slack) = dot((0..m).map(|r| host_a[r * n + j]), host_x.iter().copied());
        assert!((f64::from(*g) - want).abs() <= slack + 1e-30, "{what} {m}×{n}: y[{j}] = {g}, want {want}");
    }
}

fn gemv_matches_an_f64_reference(backend: &Backend) {
    for (m, k) in gemv_shapes(backend) {
        let (host_a, host_x) = (random_floats(m * k, (m + k) as u64), random_floats(k, 5));
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let x = backend.upload(&host_x, [k]).unwrap();
        let mut y = backend.filled([m], f32::from_bits(POISON)).unwrap();
        gemv::gemv(backend, &a, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for (i, g) in got.iter().enumerate() {
            let (want, slack) = dot(host_a[i * k..(i + 1) * k].iter().copied(), host_x.iter().copied());
            assert!((f64::from(*g) - want).abs() <= slack + 1e-30, "{m}×{k}: y[{i}] = {g}, want {want}");
        }
    }
    // (m, k, A's leading dimension, A's first column, x's first element): A from column 1 of
    // rows of 1003 floats and x from element 3, views whose rows start at every offset from a
    // 16-byte boundary; and rows of whole vectors but for the last 1 column (1001 of 1004),
    // which the lanes take one element each after the vectors
    for (m, k, ld, a_first, x_first) in [(9, 1000, 1003, 1, 3), (9, 1001, 1004, 0, 0)] {
        let (host_a, host_x) = (random_floats(m * ld, 31), random_floats(k + x_first, 37));
        let parent = backend.upload(&host_a, [m, ld]).unwrap();
        let a = parent.submatrix(0..m, a_first..a_first + k).unwrap();
        let x_parent = backend.upload(&host_x, [1, k + x_first]).unwrap();
        let x = x_parent.submatrix(0..1, x_first..x_first + k).unwrap().reshape([k]).unwrap();
        let mut y = backend.filled([m], f32::from_bits(POISON)).unwrap();
        gemv::gemv(backend, &a, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for (i, g) in got.iter().enumerate() {
            let row = host_a[i * ld + a_first..i * ld + a_first + k].iter().copied();
            let (want, slack) = dot(row, host_x[x_first..].iter().copied());
            assert!((f64::from(*g) - want).abs() <= slack + 1e-30, "views (ld {ld}): y[{i}] = {g}, want {want}");
        }
    }
}

/// The row lengths at the edges of a narrow-row width of `T` (rows of `previous + 1 ..= most`
/// columns), as (columns, leading dimension, first column): its most, one fewer (a tail inside
/// the last vector), the previous width's most + 1, a vector less one, one column, and a view
/// from column 1 of rows that are not a whole number of vectors.
fn width_edges<T>(previous: usize, most: usize) -> [(usize, usize, usize); 6] {
    let vector = 16 / std::mem::size_of::<T>();
    [
        (most, most, 0),
        (most - 1, most - 1, 0),
        (previous + 1, previous + 1, 0),
        (vector - 1, vector - 1, 0),
        (1, 1, 0),
        (most - 2, most + 1, 1),
    ]
}

/// The group-of-lanes kernels of y = A·x ([`gemv::narrow`]) for f32, bf16 and f16, each launched
/// directly at the row lengths at the edges of its width — its most columns, one fewer (a tail
/// inside the last vector), the previous width's most + 1, a vector less one, one column — with
/// row counts that leave groups past the last row; rows of a view whose leading dimension is
/// not a whole number of vectors (single elements); and `gemv` naming the kernel
/// `gemv_kernel_for` does. f64 sums of the (rounded) inputs, y rounded once.
fn every_narrow_gemv_kernel_matches_an_f64_reference_at_the_edges_of_its_width(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: gemv::GemvElement>(backend: &Backend, to: impl Fn(f32) -> T, back: impl Fn(T) -> f32, rounding: f64) {
        let rows = if backend.is_simulated() { 37 } else { 100_003 };
        let mut previous = 0;
        for &(most, kernel) in T::WIDTHS {
            for (k, ld, first) in width_edges::<T>(previous, most) {
                let host_a: Vec<T> = random_floats(rows * ld, (most + k) as u64).into_iter().map(&to).collect();
                let host_x: Vec<T> = random_floats(k, 11).into_iter().map(&to).collect();
                let parent = backend.upload(&host_a, [rows, ld]).unwrap();
                let a = parent.submatrix(0..rows, first..first + k).unwrap();
                let x = backend.upload(&host_x, [k]).unwrap();
                let mut y = backend.filled([rows], to(f32::NAN)).unwrap();
                kernel
                    .launch(
                        backend,
                        &mut [
                            tessera::Argument::input("a", &a),
                            tessera::Argument::input("x", &x),
                            tessera::Argument::output("y", &mut y),
                        ],
                    )
                    .unwrap();
                let got = backend.download(&y).unwrap();
                for (i, g) in got.into_iter().map(&back).enumerate() {
                    let row = host_a[i * ld + first..i * ld + first + k].iter().map(|&v| back(v));
                    let (want, slack) = dot(row, host_x.iter().map(|&v| back(v)));
                    let slack = slack + rounding * want.abs() + 1e-30;
                    let name = kernel.name();
                    assert!(
                        (f64::from(g) - want).abs() <= slack,
                        "{name} {rows}×{k} (ld {ld}): y[{i}] = {g}, want {want}"
                    );
                }
                if first == 0 {
                    let launched = gemv::gemv(backend, &a, &x, &mut y).unwrap();
                    assert_eq!(launched.kernel, gemv::gemv_kernel_for::<T>(k).name());
                }
            }
            previous = most;
        }
    }
    check(backend, |v| v, |v| v, 0.0);
    check(backend, bf16::from_f32, bf16::to_f32, 1.0 / 256.0);
    check(backend, f16::from_f32, f16::to_f32, 1.0 / 2048.0);
}

fn bf16_and_f16_gemv_match_an_f64_reference_from_the_rounded_inputs(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: gemv::GemvElement>(
        backend: &Backend,
        to: impl Fn(f32) -> T,
        back: impl Fn(T) -> f32,
        rounding: f64,
        name: &str,
    ) {
        // the shapes of the f32 test, A and x as views whose rows start at every offset from a
        // 16-byte boundary (columns 1.. of rows of 1003, x from element 3), and rows of whole
        // vectors of 8 but for the last 1 column (1001 of 1008)
        let mut cases: Vec<(usize, usize, usize, usize, usize)> =
            gemv_shapes(backend).into_iter().map(|(m, k)| (m, k, k, 0, 0)).collect();
        cases.extend([(9, 1000, 1003, 1, 3), (9, 1001, 1008, 0, 0)]);
        for (m, k, ld, a_first, x_first) in cases {
            let host_a: Vec<T> = random_floats(m * ld, (m + k) as u64).into_iter().map(&to).collect();
            let host_x: Vec<T> = random_floats(k + x_first, 5).into_iter().map(&to).collect();
            let parent = backend.upload(&host_a, [m, ld]).unwrap();
            let a = parent.submatrix(0..m, a_first..a_first + k).unwrap();
            let x_parent = backend.upload(&host_x, [1, k + x_first]).unwrap();
            let x = x_parent.submatrix(0..1, x_first..x_first + k).unwrap().reshape([k]).unwrap();
            let mut y = backend.filled([m], to(f32::NAN)).unwrap();
            let launched = gemv::gemv(backend, &a, &x, &mut y).unwrap();
            assert_eq!(launched.kernel, gemv::gemv_kernel_for::<T>(k).name());
            let got = backend.download(&y).unwrap();
            for (i, g) in got.into_iter().map(&back).enumerate() {
                let row = host_a[i * ld + a_first..i * ld + a_first + k].iter().map(|&v| back(v));
                let (want, slack) = dot(row, host_x[x_first..].iter().map(|&v| back(v)));
                // f32 sums of the rounded inputs, then one rounding of y
                let slack = slack + rounding * want.abs() + 1e-30;
                assert!((f64::from(g) - want).abs() <= slack, "{name} {m}×{k} (ld {ld}): y[{i}] = {g}, want {want}");
            }
        }
    }
    check(backend, bf16::from_f32, bf16::to_f32, 1.0 / 256.0, "bf16");
    check(backend, f16::from_f32, f16::to_f32, 1.0 / 2048.0, "f16");
}

fn gemv_t_matches_an_f64_reference(backend: &Backend) {
    for (m, n) in gemv_shapes(backend) {
        let (host_a, host_x) = (random_floats(m * n, (3 * m + n) as u64), random_floats(m, 9));
        let a = backend.upload(&host_a, [m, n]).unwrap();
        let x = backend.upload(&host_x, [m]).unwrap();
        let mut y = backend.filled([n], f32::from_bits(POISON)).unwrap();
        let launched = gemv::gemv_t(backend, &a, &x, &mut y).unwrap();
        let narrow = gemv::narrow_transposed_pass::<f32>(n).is_some();
        let split = gemv::row_slices::<f32>(m, n) > 1;
        let want_kernel = match (narrow, split, n.div_ceil(32) >= 192, n.div_ceil(64) <= 132) {
            (true, _, _, _) => "gemv_t_lanes_finish_f32",
            (false, true, _, _) => "gemv_t_finish_f32",
            (false, false, true, true) => "gemv_t_band_pairs_f32",
            (false, false, true, false) => "gemv_t_f32",
            (false, false, false, _) => "gemv_t_band_f32",
        };
        assert_eq!(launched.kernel, want_kernel, "{m}×{n}");
        if [(1300, 1100), (2049, 600)].contains(&(m, n)) {
            assert!(split && !narrow, "{m}×{n}: the shapes that exercise the row split must take it");
        }
        if [(1300, 65), (2049, 31), (257, 17)].contains(&(m, n)) {
            assert!(narrow, "{m}×{n}: narrow rows are read whole");
        }
        assert_transposed_gemv(&backend.download(&y).unwrap(), &host_a, &host_x, (m, n), "gemv_t");
        // the unsplit kernels, whichever gemv_t takes here
        for kernel in [&gemv::gemv_t_band_f32::KERNEL, &gemv::gemv_t_band_pairs_f32::KERNEL, &gemv::gemv_t_f32::KERNEL]
        {
            let mut y = backend.filled([n], f32::from_bits(POISON)).unwrap();
            kernel
                .launch(
                    backend,
                    &mut [
                        tessera::Argument::input("a", &a),
                        tessera::Argument::input("x", &x),
                        tessera::Argument::output("y", &mut y),
                    ],
                )
                .unwrap();
            assert_transposed_gemv(&backend.download(&y).unwrap(), &host_a, &host_x, (m, n), kernel.name());
        }
    }
}

/// The narrow-row y = Aᵀ·x passes ([`gemv::narrow_transposed`]) for f32, bf16 and f16: each
/// first pass at the row lengths at the edges of its width (as the A·x test) over 3 slices of
/// rows that do not divide evenly and one slice, then the finishing pass; and `gemv_t` taking
/// them (its slices) where `narrow_transposed_pass` names them. f64 sums of the (rounded)
/// inputs, y rounded once.
fn every_narrow_gemv_t_kernel_matches_an_f64_reference_at_the_edges_of_its_width(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: gemv::GemvElement>(backend: &Backend, to: impl Fn(f32) -> T, back: impl Fn(T) -> f32, rounding: f64) {
        let rows = if backend.is_simulated() { 301 } else { 200_003 };
        let mut previous = 0;
        for &(most, first_pass) in T::NARROW_TRANSPOSED.widths {
            for (n, ld, first) in width_edges::<T>(previous, most) {
                let host_a: Vec<T> = random_floats(rows * ld, (most + n) as u64).into_iter().map(&to).collect();
                let host_x: Vec<T> = random_floats(rows, 13).into_iter().map(&to).collect();
                let parent = backend.upload(&host_a, [rows, ld]).unwrap();
                let a = parent.submatrix(0..rows, first..first + n).unwrap();
                let x = backend.upload(&host_x, [rows]).unwrap();
                let check_y = |y: &tessera::DeviceTensor<T>, what: &str| {
                    let got = backend.download(y).unwrap();
                    for (j, g) in got.into_iter().map(&back).enumerate() {
                        let column = (0..rows).map(|r| back(host_a[r * ld + first + j]));
                        let (want, slack) = dot(column, host_x.iter().map(|&v| back(v)));
                        let slack = slack + rounding * want.abs() + 1e-30;
                        assert!(
                            (f64::from(g) - want).abs() <= slack,
                            "{what} {rows}×{n} (ld {ld}): y[{j}] = {g}, want {want}"
                        );
                    }
                };
                for slices in [3, 1] {
                    let mut partials = backend.filled([slices, n], f32::NAN).unwrap();
                    first_pass
                        .launch(
                            backend,
                            &mut [
                                tessera::Argument::input("a", &a),
                                tessera::Argument::input("x", &x),
                                tessera::Argument::output("partials", &mut partials),
                            ],
                        )
                        .unwrap();
                    let mut y = backend.filled([n], to(f32::NAN)).unwrap();
                    T::NARROW_TRANSPOSED
                        .finish
                        .launch(
                            backend,
                            &mut [
                                tessera::Argument::input("partials", &partials),
                                tessera::Argument::output("y", &mut y),
                            ],
                        )
                        .unwrap();
                    check_y(&y, &format!("{} over {slices} slices", first_pass.name()));
                }
                if first == 0 {
                    let mut y = backend.filled([n], to(f32::NAN)).unwrap();
                    let launched = gemv::gemv_t(backend, &a, &x, &mut y).unwrap();
                    assert_eq!(launched.kernel, gemv::gemv_t_kernel_for::<T>(backend, rows, n).name());
                    let taken = gemv::narrow_transposed_pass::<T>(n).map(|k| k.name());
                    assert!(taken.is_some(), "{n} columns are narrow rows");
                    if n > previous {
                        assert_eq!(taken, Some(first_pass.name()), "the narrowest width that holds {n} columns");
                    }
                    check_y(&y, "gemv_t");
                }
            }
            previous = most;
        }
    }
    check(backend, |v| v, |v| v, 0.0);
    check(backend, bf16::from_f32, bf16::to_f32, 1.0 / 256.0);
    check(backend, f16::from_f32, f16::to_f32, 1.0 / 2048.0);
}

/// y = Aᵀ·x on 16-bit data: every kernel of `T`'s [`gemv::TransposedKernels`] (and the one
/// `gemv_t` takes, which must be the one `gemv_t_kernel_for` names) against the f64 sums of the
/// rounded inputs — on dense rows (odd widths narrow the vectors to single elements), on views
/// whose rows start 4 or 12 bytes past a 16-byte boundary (the vectors of 4 narrowed to 2) or
/// at an odd element (narrowed to 1), and on rows that end inside a vector (1001 of 1004
/// columns: the kernels' element-by-element path).
fn bf16_and_f16_gemv_t_match_an_f64_reference_from_the_rounded_inputs(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: gemv::GemvElement>(
        backend: &Backend,
        to: impl Fn(f32) -> T,
        back: impl Fn(T) -> f32,
        rounding: f64,
        name: &str,
    ) {
        let mut cases: Vec<(usize, usize, usize, usize)> =
            gemv_shapes(backend).into_iter().map(|(m, n)| (m, n, n, 0)).collect();
        cases.extend([(300, 1000, 1004, 2), (300, 1000, 1004, 1), (300, 1001, 1004, 0), (1300, 130, 132, 0)]);
        if !backend.is_simulated() {
            // the double-width bands, and the 512-thread kernel beyond them
            cases.extend([(4096, 16384, 16384, 0), (1024, 20000, 20000, 0)]);
        }
        for (m, n, ld, first) in cases {
            let host_a: Vec<T> = random_floats(m * ld, (7 * m + n) as u64).into_iter().map(&to).collect();
            let host_x: Vec<T> = random_floats(m, 13).into_iter().map(&to).collect();
            let parent = backend.upload(&host_a, [m, ld]).unwrap();
            let a = parent.submatrix(0..m, first..first + n).unwrap();
            let x = backend.upload(&host_x, [m]).unwrap();
            let kernels = T::TRANSPOSED;
            let slices = gemv::row_slices::<T>(m, n).max(3);
            let mut outputs = Vec::new();
            let mut y = backend.filled([n], to(f32::NAN)).unwrap();
            let launched = gemv::gemv_t(backend, &a, &x, &mut y).unwrap();
            assert_eq!(launched.kernel, gemv::gemv_t_kernel_for::<T>(backend, m, n).name(), "{m}×{n}");
            outputs.push(("gemv_t".to_string(), y));
            for kernel in [kernels.rows, kernels.band, kernels.band_pairs] {
                let mut y = backend.filled([n], to(f32::NAN)).unwrap();
                let arguments = &mut [
                    tessera::Argument::input("a", &a),
                    tessera::Argument::input("x", &x),
                    tessera::Argument::output("y", &mut y),
                ];
                kernel.launch(backend, arguments).unwrap();
                outputs.push((kernel.name().to_string(), y));
            }
            let mut partials = backend.filled([slices, n], f32::NAN).unwrap();
            let mut y = backend.filled([n], to(f32::NAN)).unwrap();
            let arguments = &mut [
                tessera::Argument::input("a", &a),
                tessera::Argument::input("x", &x),
                tessera::Argument::output("partials", &mut partials),
            ];
            kernels.partials.launch(backend, arguments).unwrap();
            let arguments =
                &mut [tessera::Argument::input("partials", &partials), tessera::Argument::output("y", &mut y)];
            kernels.finish.launch(backend, arguments).unwrap();
            outputs.push((format!("{} in {slices} slices", kernels.partials.name()), y));
            for (what, y) in outputs {
                for (j, g) in backend.download(&y).unwrap().into_iter().map(&back).enumerate() {
                    let column = (0..m).map(|r| back(host_a[r * ld + first + j]));
                    let (want, slack) = dot(column, host_x.iter().map(|&v| back(v)));
                    // f32 sums of the rounded inputs, then one rounding of y
                    let slack = slack + rounding * want.abs() + 1e-30;
                    assert!(
                        (f64::from(g) - want).abs() <= slack,
                        "{name} {what} {m}×{n} (ld {ld}): y[{j}] = {g}, want {want}"
                    );
                }
            }
        }
    }
    check(backend, bf16::from_f32, bf16::to_f32, 1.0 / 256.0, "bf16");
    check(backend, f16::from_f32, f16::to_f32, 1.0 / 2048.0, "f16");
}

/// `gemv_t_split_f32`: the last block of each column band (`last_block_of`) adds the band's
/// slices in slice order — the same bits as `gemv_t_partials_f32` then `gemv_t_finish_f32`, in
/// every block order the simulation runs and in a second launch (the counters left zero) —
/// with 1 to 32 slices.
fn gemv_t_in_one_launch_adds_the_slices_as_the_finishing_pass_does(backend: &Backend) {
    let mut cases = vec![(1300, 65, 3), (2049, 31, 5), (257, 129, 1), (64, 100, 32), (1000, 200, 7)];
    if !backend.is_simulated() {
        cases.extend([(4097, 4095, 8), (8192, 8192, 4)]);
    }
    for (m, n, slices) in cases {
        let (host_a, host_x) = (random_floats(m * n, (5 * m + n) as u64), random_floats(m, 11));
        let a = backend.upload(&host_a, [m, n]).unwrap();
        let x = backend.upload(&host_x, [m]).unwrap();
        let mut partials = backend.filled([slices, n], f32::from_bits(POISON)).unwrap();
        let mut two_passes = backend.filled([n], f32::from_bits(POISON)).unwrap();
        gemv::gemv_t_partials_f32::launch(backend, &a, &x, &mut partials).unwrap();
        gemv::gemv_t_finish_f32::launch(backend, &partials, &mut two_passes).unwrap();
        let want_bits = backend.download(&two_passes).unwrap();
        for launch in 0..2 {
            let mut partials = backend.filled([slices, n], f32::from_bits(POISON)).unwrap();
            let mut y = backend.filled([n], f32::from_bits(POISON)).unwrap();
            gemv::gemv_t_split_f32::launch(backend, &a, &x, &mut partials, &mut y).unwrap();
            let got = backend.download(&y).unwrap();
            assert_eq!(got, want_bits, "{m}×{n}, {slices} slices, launch {launch}: not the two passes' sums");
            assert_transposed_gemv(&got, &host_a, &host_x, (m, n), "gemv_t_split_f32");
        }
    }
}

/// The 16-bit norms: x, weight and bias rounded to bf16 or f16 on the host, an f64 reference
/// from those rounded values, and y within one rounding of it (the statistics are f32).
fn bf16_and_f16_norms_match_an_f64_reference_from_the_rounded_inputs(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: norm::NormElement + Copy>(
        backend: &Backend,
        to: impl Fn(f32) -> T,
        back: impl Fn(T) -> f64,
        ulp: f64,
        name: &str,
    ) {
        for (rows, cols) in norm_shapes(backend) {
            let host: Vec<T> = random_floats(rows * cols, 7 + cols as u64).iter().map(|v| to(1.0 + v * 2.0)).collect();
            let host_w: Vec<T> = random_floats(cols, 19).into_iter().map(&to).collect();
            let host_b: Vec<T> = random_floats(cols, 23).into_iter().map(&to).collect();
            let x = backend.upload(&host, [rows, cols]).unwrap();
            let (w, b) = (backend.upload(&host_w, [cols]).unwrap(), backend.upload(&host_b, [cols]).unwrap());
            // NaN where the kernel writes nothing: an element left unwritten fails the comparison
            let mut y = backend.filled([rows, cols], to(f32::NAN)).unwrap();
            let mut z = backend.filled([rows, cols], to(f32::NAN)).unwrap();
            norm::layer_norm(backend, &x, &w, &b, &mut y, 1e-5).unwrap();
            norm::rms_norm(backend, &x, &w, &mut z, 1e-5).unwrap();
            let (y, z) = (backend.download(&y).unwrap(), backend.download(&z).unwrap());
            for r in 0..rows {
                let row: Vec<f64> = host[r * cols..(r + 1) * cols].iter().map(|&v| back(v)).collect();
                let mean = row.iter().sum::<f64>() / cols as f64;
                let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / cols as f64;
                let (inv, inv_rms) = (
                    1.0 / (var + 1e-5).sqrt(),
                    1.0 / (row.iter().map(|v| v * v).sum::<f64>() / cols as f64 + 1e-5).sqrt(),
                );
                for c in 0..cols {
                    let (wc, bc) = (back(host_w[c]), back(host_b[c]));
                    let want = (row[c] - mean) * inv * wc + bc;
                    let g = back(y[r * cols + c]);
                    // one rounding of the result, and f32 statistics
                    assert!(
                        (g - want).abs() <= ulp * want.abs() + 1e-4,
                        "{name} layer_norm {rows}×{cols}: y[{r}][{c}] = {g}, want {want}"
                    );
                    let want = row[c] * inv_rms * wc;
                    let g = back(z[r * cols + c]);
                    assert!(
                        (g - want).abs() <= ulp * want.abs() + 1e-4,
                        "{name} rms_norm {rows}×{cols}: y[{r}][{c}] = {g}, want {want}"
                    );
                }
            }
        }
    }
    check(backend, bf16::from_f32, |v: bf16| f64::from(v.to_f32()), 2f64.powi(-8), "bf16");
    check(backend, f16::from_f32, |v: f16| f64::from(v.to_f32()), 2f64.powi(-11), "f16");
}

/// The 16-bit block LayerNorms take Σx and Σx² in one pass, where Σx²/C − mean² cancels on
/// rows whose mean is large beside their spread: rows of 4096 ± 64 (bf16) or 1000 ± 4 (f16),
/// where that difference is off by a tenth of the variance and more, must take the exact pass
/// and match an f64 reference as the rows near zero do. f32 rows (two passes) of 1000 ± 4 and
/// 0.57 ± 1 keep the f32 tolerance. Rows that far from zero beside their spread take their
/// statistics on x − x[row, 0]: the rounding of the mean's share, magnified by 1 / σ, no
/// longer reaches y.
fn layer_norm_keeps_its_accuracy_on_rows_far_from_zero(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: norm::NormElement + Copy>(
        backend: &Backend,
        (offset, spread): (f32, f32),
        to: impl Fn(f32) -> T,
        back: impl Fn(T) -> f64,
        ulp: f64,
        name: &str,
    ) {
        for (rows, cols) in norm_shapes(backend) {
            let host: Vec<T> =
                random_floats(rows * cols, 11 + cols as u64).iter().map(|v| to(offset + v * spread)).collect();
            let host_w: Vec<T> = random_floats(cols, 29).into_iter().map(&to).collect();
            let host_b: Vec<T> = random_floats(cols, 31).into_iter().map(&to).collect();
            let x = backend.upload(&host, [rows, cols]).unwrap();
            let (w, b) = (backend.upload(&host_w, [cols]).unwrap(), backend.upload(&host_b, [cols]).unwrap());
            let mut y = backend.filled([rows, cols], to(f32::NAN)).unwrap();
            norm::layer_norm(backend, &x, &w, &b, &mut y, 1e-5).unwrap();
            let y = backend.download(&y).unwrap();
            for r in 0..rows {
                let row: Vec<f64> = host[r * cols..(r + 1) * cols].iter().map(|&v| back(v)).collect();
                let mean = row.iter().sum::<f64>() / cols as f64;
                let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / cols as f64;
                let inv = 1.0 / (var + 1e-5).sqrt();
                for c in 0..cols {
                    let want = (row[c] - mean) * inv * back(host_w[c]) + back(host_b[c]);
                    let g = back(y[r * cols + c]);
                    // one rounding of y
                    assert!(
                        (g - want).abs() <= ulp * want.abs() + 1e-3,
                        "{name} layer_norm {rows}×{cols} of rows {offset} ± {spread}: y[{r}][{c}] = {g}, want {want}"
                    );
                }
            }
        }
    }
    check(backend, (4096.0, 64.0), bf16::from_f32, |v: bf16| f64::from(v.to_f32()), 2f64.powi(-8), "bf16");
    check(backend, (1000.0, 4.0), f16::from_f32, |v: f16| f64::from(v.to_f32()), 2f64.powi(-11), "f16");
    for (offset, spread) in [(1000.0, 4.0), (0.57, 1.0)] {
        for (rows, cols) in norm_shapes(backend) {
            let host: Vec<f32> =
                random_floats(rows * cols, 13 + cols as u64).iter().map(|v| offset + v * spread).collect();
            let (host_w, host_b) = (random_floats(cols, 37), random_floats(cols, 41));
            let x = backend.upload(&host, [rows, cols]).unwrap();
            let (w, b) = (backend.upload(&host_w, [cols]).unwrap(), backend.upload(&host_b, [cols]).unwrap());
            let mut y = backend.filled([rows, cols], f32::NAN).unwrap();
            norm::layer_norm(backend, &x, &w, &b, &mut y, 1e-5).unwrap();
            let got = backend.download(&y).unwrap();
            for r in 0..rows {
                let row = &host[r * cols..(r + 1) * cols];
                let want = layer_norm_reference(row, &host_w, &host_b);
                for (c, (&g, want)) in got[r * cols..(r + 1) * cols].iter().zip(want).enumerate() {
                    assert!(
                        (f64::from(g) - want).abs() <= 2e-5 * (1.0 + want.abs()),
                        "f32 layer_norm {rows}×{cols} of rows {offset} ± {spread}: y[{r}][{c}] = {g}, want {want}"
                    );
                }
            }
        }
    }
}

/// A y of the wrong length is refused before any pass, naming the user's A and y — not the
/// partial sums a split's last pass reads.
#[test]
fn gemv_t_names_a_and_y_when_their_lengths_differ() {
    let backend = common::simulator();
    for (rows, cols) in [(3, 5), (4097, 40)] {
        let a = backend.upload(&vec![1.0f32; rows * cols], [rows, cols]).unwrap();
        let x = backend.upload(&vec![1.0f32; rows], [rows]).unwrap();
        let mut y = backend.zeros::<f32>([3]).unwrap();
        let error = gemv::gemv_t(&backend, &a, &x, &mut y).unwrap_err().to_string();
        assert!(
            error.contains(&format!("shape symbol `N` is {cols} from `a` (dimension 1) but 3 from `y` (dimension 0)")),
            "{rows}×{cols}: {error}"
        );
    }
}

/// A row of one value far from zero has no deviation: y is the bias exactly, as torch gives
/// it (σ is √eps there, so any rounding of the mean's share of y was magnified 316 times: a
/// row of 10000.3 gave −0.11 where the bias was 0). Every LayerNorm kernel (the lengths of
/// `norm_shapes`), f32, bf16 and f16. The rows of one value lie between rows near zero in the
/// same warp or launch, and those come out bit for bit as they do beside other rows near zero:
/// a warp that takes the pass for one of its rows leaves the others' statistics as they were. (Nearer zero
/// than 64·√eps, 0.2, the kernels keep the fma form: within 64·2⁻²⁴ of the weight.)
fn layer_norm_of_a_row_of_one_value_is_the_bias(backend: &Backend) {
    use tessera::half::{bf16, f16};
    fn check<T: norm::NormElement + Copy + PartialEq + std::fmt::Debug>(
        backend: &Backend,
        value: f32,
        to: impl Fn(f32) -> T,
    ) {
        for (rows, cols) in norm_shapes(backend) {
            // even rows of one value, odd rows near zero
            let varied = random_floats(rows * cols, 43 + cols as u64);
            let host: Vec<T> =
                (0..rows * cols).map(|i| if (i / cols) % 2 == 0 { to(value) } else { to(0.5 + varied[i]) }).collect();
            let host_w: Vec<T> = random_floats(cols, 47).into_iter().map(&to).collect();
            let host_b: Vec<T> = random_floats(cols, 53).into_iter().map(&to).collect();
            let (w, b) = (backend.upload(&host_w, [cols]).unwrap(), backend.upload(&host_b, [cols]).unwrap());
            let normalised = |host: &[T]| {
                let x = backend.upload(host, [rows, cols]).unwrap();
                let mut y = backend.filled([rows, cols], to(f32::NAN)).unwrap();
                let launched = norm::layer_norm(backend, &x, &w, &b, &mut y, 1e-5).unwrap();
                (backend.download(&y).unwrap(), launched.kernel)
            };
            let (y, kernel) = normalised(&host);
            for r in (0..rows).step_by(2) {
                assert_eq!(&y[r * cols..(r + 1) * cols], &host_b[..], "{kernel} on {rows}×{cols} of {value}: row {r}");
            }
            // the same rows near zero, in the same places (so with the same alignment), beside
            // rows near zero
            let near_zero: Vec<T> =
                (0..rows * cols).map(|i| if (i / cols) % 2 == 0 { to(0.5 - varied[i]) } else { host[i] }).collect();
            let (beside_near_zero, _) = normalised(&near_zero);
            for r in (1..rows).step_by(2) {
                let differing = (r * cols..(r + 1) * cols).filter(|&i| y[i] != beside_near_zero[i]).count();
                assert_eq!(
                    differing, 0,
                    "{kernel} on {rows}×{cols}: row {r}, near zero, differs beside rows of {value}"
                );
            }
        }
    }
    for value in [10000.3, -3.0e6, 0.25] {
        check(backend, value, |v| v);
    }
    check(backend, 10000.0, bf16::from_f32);
    check(backend, 1000.0, f16::from_f32);
}
