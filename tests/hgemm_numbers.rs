//! The HGEMM family's numbers (BF16 and F16 inputs, f32 accumulation on tensor cores) against
//! an f64 reference computed from the same rounded 16-bit inputs: every kernel, tails in M, N
//! and K, α and β, β = 0 never reading C — on the CPU simulation of the emitted CUDA C in CI
//! (small shapes, where `mma.sync` and `ldmatrix` follow the PTX ISA's lane layouts) and on a
//! GPU with `cargo test --release --test hgemm_numbers -- --include-ignored`.

mod common;

use common::{gemm_reference, random_floats, relative_error, tf32_truncated};
use tessera::catalog::hgemm;
use tessera::half::{bf16, f16};
use tessera::Backend;

on_both_backends!(
    every_bf16_kernel_matches_an_f64_reference_on_tail_shapes,
    every_f16_kernel_matches_an_f64_reference_on_tail_shapes,
    the_tf32_kernel_matches_an_f64_reference_from_tf32_rounded_inputs,
    the_wgmma_tf32_kernel_matches_an_f64_reference_from_tf32_truncated_inputs,
    beta_zero_never_reads_c,
    strided_operands_multiply_like_dense_ones,
    sixteen_bit_outputs_are_the_f32_result_rounded_once
);

/// Shapes from {1, 17, 127, 129, 1000, 4097}, mixed and non-square; the simulation takes the
/// small ones. 17 × 17 × 1000 runs 16 k-tiles of 64 through the pipelines: a stage refilled
/// while a multiply still reads it (wgmma runs until its wait on the simulation) fails there.
/// The last two have rows 16-byte aligned (K and N multiples of 8) with tails in every
/// dimension, so the TMA kernels copy by TMA on the simulation too: 65 × 40 × 328 wraps the
/// ring of stages in one tile, 520 × 8 × 264 gives a block two or more tiles (4 resident blocks,
/// 5 to 9 tiles) of 5 k-tiles each, so a second consumer group's tile comes between a group's two.
const SHAPES: [(usize, usize, usize); 16] = [
    (1, 1, 1),
    // whole tiles of every kernel in rows 16-byte aligned: the wgmma epilogues' 16-byte path
    (128, 256, 16),
    (17, 17, 1000),
    (17, 17, 17),
    (33, 17, 9),
    (17, 65, 33),
    (127, 129, 17),
    (129, 127, 64),
    (129, 127, 1000),
    (1000, 17, 129),
    (1000, 1000, 1000),
    (4097, 129, 17),
    (127, 17, 4097),
    (1000, 4097, 129),
    (65, 40, 328),
    (520, 8, 264),
];

/// The largest m·n·k the simulation runs (a tensor-core warp op is many fiber switches).
const SIMULATED_WORK: usize = 1_100_000;

fn rounded<T: Copy>(values: &[f32], to: impl Fn(f32) -> T, back: impl Fn(T) -> f32) -> (Vec<T>, Vec<f32>) {
    let halves: Vec<T> = values.iter().map(|&v| to(v)).collect();
    let exact = halves.iter().map(|&h| back(h)).collect();
    (halves, exact)
}

fn check_family<T: tessera::runtime::Element>(
    gpu: &Backend,
    kernels: &[&'static tessera::KernelDefinition],
    to: impl Fn(f32) -> T + Copy,
    back: impl Fn(T) -> f32 + Copy,
    launch: impl Fn(
        &tessera::KernelDefinition,
        &Backend,
        &tessera::DeviceTensor<T>,
        &tessera::DeviceTensor<T>,
        &mut tessera::DeviceTensor<f32>,
        f32,
        f32,
    ) -> Result<tessera::Launched, tessera::Error>,
) {
    for (index, &(m, n, k)) in SHAPES.iter().enumerate() {
        if gpu.is_simulated() && m * n * k > SIMULATED_WORK {
            continue;
        }
        let (host_a, exact_a) = rounded(&random_floats(m * k, 1 + index as u64), to, back);
        let (host_b, exact_b) = rounded(&random_floats(k * n, 100 + index as u64), to, back);
        let host_c = random_floats(m * n, 200);
        let (alpha, beta) = (1.5f32, -0.5f32);
        let want = gemm_reference(&exact_a, &exact_b, &host_c, (m, n, k), f64::from(alpha), f64::from(beta));
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [k, n]).unwrap();
        for kernel in kernels {
            let mut c = gpu.upload(&host_c, [m, n]).unwrap();
            let launched = launch(kernel, gpu, &a, &b, &mut c, alpha, beta).unwrap();
            // TMA reads A and B wherever their rows are 16-byte aligned (K and N multiples of 8)
            let tma = kernel.ir().unwrap().copies_by_tma() && k % 8 == 0 && n % 8 == 0;
            assert_eq!(launched.tma, tma, "{} at M={m} N={n} K={k}: copied by TMA", kernel.name());
            let error = relative_error(&gpu.download(&c).unwrap(), &want);
            assert!(error < 1e-5, "{} at M={m} N={n} K={k}: relative error {error:e}", kernel.name());
        }
    }
}

fn every_bf16_kernel_matches_an_f64_reference_on_tail_shapes(gpu: &Backend) {
    check_family(gpu, &hgemm::ALL_BF16, bf16::from_f32, bf16::to_f32, |kernel, gpu, a, b, c, alpha, beta| {
        hgemm::launch_bf16(kernel, gpu, a, b, c, alpha, beta)
    });
}

fn every_f16_kernel_matches_an_f64_reference_on_tail_shapes(gpu: &Backend) {
    check_family(gpu, &hgemm::ALL_F16, f16::from_f32, f16::to_f32, |kernel, gpu, a, b, c, alpha, beta| {
        hgemm::launch_f16(kernel, gpu, a, b, c, alpha, beta)
    });
}

/// `cvt.rna.tf32.f32`: the 10-bit mantissa, to nearest, ties away from zero.
fn tf32_rounded(value: f32) -> f32 {
    let bits = value.to_bits();
    if bits & 0x7f80_0000 == 0x7f80_0000 {
        return value;
    }
    f32::from_bits(bits.wrapping_add(0x1000) & 0xffff_e000)
}

/// f32 data in, the kernel rounds it to TF32: the reference multiplies the TF32-rounded values.
fn the_tf32_kernel_matches_an_f64_reference_from_tf32_rounded_inputs(gpu: &Backend) {
    check_family(gpu, &[&hgemm::gemm_tf32::KERNEL], |v| v, tf32_rounded, hgemm::launch_tf32);
}

/// The TF32 wgmma kernels on Bᵀ stored [N, K] and on B stored [K, N] (Cᵀ = Bᵀ·Aᵀ), launched
/// directly and through `gemm_tf32_wgmma` (B as stored, or its transposed copy), against f64
/// from the truncated inputs: a reference from rounded ones misses by ~3e-4, so the test tells
/// the two apart.
fn the_wgmma_tf32_kernel_matches_an_f64_reference_from_tf32_truncated_inputs(gpu: &Backend) {
    for (index, &(m, n, k)) in SHAPES.iter().enumerate() {
        if gpu.is_simulated() && m * n * k > SIMULATED_WORK {
            continue;
        }
        let host_a = random_floats(m * k, 31 + index as u64);
        let host_b = random_floats(k * n, 131 + index as u64);
        let host_bt: Vec<f32> = (0..n * k).map(|i| host_b[i % k * n + i / k]).collect();
        let host_c = random_floats(m * n, 231);
        let truncated = |values: &[f32]| values.iter().map(|&v| tf32_truncated(v)).collect::<Vec<f32>>();
        let (alpha, beta) = (1.5f32, -0.5f32);
        let want = gemm_reference(
            &truncated(&host_a),
            &truncated(&host_b),
            &host_c,
            (m, n, k),
            f64::from(alpha),
            f64::from(beta),
        );
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [k, n]).unwrap();
        let bt = gpu.upload(&host_bt, [n, k]).unwrap();
        for kernel in hgemm::ALL_TF32_TRANSPOSED_B {
            let mut c = gpu.upload(&host_c, [m, n]).unwrap();
            let launched = hgemm::launch_tf32(kernel, gpu, &a, &bt, &mut c, alpha, beta).unwrap();
            // TMA reads A and Bᵀ wherever their rows (K floats) are 16-byte aligned
            assert_eq!(launched.tma, k % 4 == 0, "{} at M={m} N={n} K={k}: copied by TMA", kernel.name());
            let error = relative_error(&gpu.download(&c).unwrap(), &want);
            assert!(error < 1e-5, "{} at M={m} N={n} K={k}: relative error {error:e}", kernel.name());
        }
        // Cᵀ = Bᵀ·Aᵀ on B as stored, its MN-major tile loaded into wgmma's A registers by the lanes
        for kernel in hgemm::ALL_TF32_WGMMA_KN {
            let mut c = gpu.upload(&host_c, [m, n]).unwrap();
            let launched = hgemm::launch_tf32(kernel, gpu, &a, &b, &mut c, alpha, beta).unwrap();
            assert_eq!(launched.tma, k % 4 == 0 && n % 4 == 0, "{} at M={m} N={n} K={k}: copied by TMA", kernel.name());
            let error = relative_error(&gpu.download(&c).unwrap(), &want);
            assert!(error < 1e-5, "{} at M={m} N={n} K={k}: relative error {error:e}", kernel.name());
        }
        let mut c = gpu.upload(&host_c, [m, n]).unwrap();
        let launched = hgemm::gemm_tf32_wgmma(gpu, &a, &b, &mut c, alpha, beta).unwrap();
        // B as stored where TMA reads A's and B's rows (K and N multiples of 4), else transposed
        let chosen = match (k % 4 == 0 && n % 4 == 0, m.div_ceil(256) * n.div_ceil(128) < 64) {
            (true, true) => "gemm_tf32_wgmma_kn_64x128",
            (true, false) => "gemm_tf32_wgmma_kn",
            (false, _) if m.div_ceil(128) * n.div_ceil(256) < 64 => "gemm_tf32_wgmma_bt_64x128",
            (false, _) => "gemm_tf32_wgmma_bt",
        };
        assert_eq!(launched.kernel, chosen, "gemm_tf32_wgmma at M={m} N={n} K={k}");
        assert!(launched.tma, "gemm_tf32_wgmma at M={m} N={n} K={k}: A and Bᵀ in aligned rows, copied by TMA");
        let error = relative_error(&gpu.download(&c).unwrap(), &want);
        assert!(error < 1e-5, "gemm_tf32_wgmma at M={m} N={n} K={k}: relative error {error:e}");
    }
}

#[test]
fn tf32_truncation_clears_the_low_13_mantissa_bits() {
    assert_eq!(tf32_truncated(1.0 + 2f32.powi(-10) + 2f32.powi(-11)), 1.0 + 2f32.powi(-10));
    assert_eq!(tf32_truncated(-(1.0 + 2f32.powi(-11))), -1.0);
    assert_eq!(tf32_truncated(f32::INFINITY), f32::INFINITY);
}

#[test]
fn tf32_rounding_is_to_nearest_with_ties_away_from_zero() {
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: away from zero
    assert_eq!(tf32_rounded(1.0 + 2f32.powi(-11)), 1.0 + 2f32.powi(-10));
    assert_eq!(tf32_rounded(-(1.0 + 2f32.powi(-11))), -(1.0 + 2f32.powi(-10)));
    assert_eq!(tf32_rounded(1.0 + 2f32.powi(-12)), 1.0);
    assert_eq!(tf32_rounded(f32::INFINITY), f32::INFINITY);
    assert!(tf32_rounded(f32::NAN).is_nan());
}

fn beta_zero_never_reads_c(gpu: &Backend) {
    let (m, n, k) = (129, 131, 48);
    let (host_a, exact_a) = rounded(&random_floats(m * k, 5), bf16::from_f32, bf16::to_f32);
    let (host_b, exact_b) = rounded(&random_floats(k * n, 6), bf16::from_f32, bf16::to_f32);
    let want = gemm_reference(&exact_a, &exact_b, &vec![0.0; m * n], (m, n, k), 2.0, 0.0);
    let a = gpu.upload(&host_a, [m, k]).unwrap();
    let b = gpu.upload(&host_b, [k, n]).unwrap();
    for kernel in hgemm::ALL_BF16 {
        let mut c = gpu.filled([m, n], f32::NAN).unwrap();
        hgemm::launch_bf16(kernel, gpu, &a, &b, &mut c, 2.0, 0.0).unwrap();
        let got = gpu.download(&c).unwrap();
        assert!(got.iter().all(|v| v.is_finite()), "{}: NaN from C leaked through beta = 0", kernel.name());
        assert!(relative_error(&got, &want) < 1e-5, "{}", kernel.name());
    }
    // a 16-bit C in whole tiles of rows 16-byte aligned, where the 16-byte path loads β · C ahead
    // of the stores: with β = 0 a NaN in C must not reach the result
    let (m, n, k) = (256, 256, 72);
    let (host_a, exact_a) = rounded(&random_floats(m * k, 7), bf16::from_f32, bf16::to_f32);
    let (host_b, exact_b) = rounded(&random_floats(k * n, 8), bf16::from_f32, bf16::to_f32);
    let want = gemm_reference(&exact_a, &exact_b, &vec![0.0; m * n], (m, n, k), 2.0, 0.0);
    let a = gpu.upload(&host_a, [m, k]).unwrap();
    let b = gpu.upload(&host_b, [k, n]).unwrap();
    for kernel in hgemm::ALL_16_BIT_OUTPUT.iter().filter(|k| k.name().ends_with("bf16_to_bf16")) {
        let mut c = gpu.filled([m, n], bf16::NAN).unwrap();
        hgemm::launch_gemm_16_bit(kernel, gpu, &a, &b, &mut c, 2.0, 0.0).unwrap();
        let got: Vec<f32> = gpu.download(&c).unwrap().into_iter().map(bf16::to_f32).collect();
        assert!(got.iter().all(|v| v.is_finite()), "{}: NaN from C leaked through beta = 0", kernel.name());
        assert!(relative_error(&got, &want) < 1e-2, "{}", kernel.name());
    }
}

/// Sub-matrices of larger matrices (leading dimensions larger than the column count, odd ones
/// among them, which take narrower accesses) give the dense result.
fn strided_operands_multiply_like_dense_ones(gpu: &Backend) {
    // odd leading dimensions (narrowed accesses, cp.async instead of TMA), then 16-byte aligned
    // rows and starts (TMA boxes whose rows are the leading dimension apart)
    strided_multiply(gpu, (75, 47, 97), (3, 5), (2, 4));
    strided_multiply(gpu, (75, 56, 104), (3, 8), (2, 8));
}

fn strided_multiply(
    gpu: &Backend,
    (parent_m, parent_k, parent_n): (usize, usize, usize),
    (a_row, a_col): (usize, usize),
    (b_row, b_col): (usize, usize),
) {
    let (m, n, k) = (70, 90, 40);
    let (host_a, _) = rounded(&random_floats(parent_m * parent_k, 11), bf16::from_f32, bf16::to_f32);
    let (host_b, _) = rounded(&random_floats(parent_k * parent_n, 12), bf16::from_f32, bf16::to_f32);
    let a_parent = gpu.upload(&host_a, [parent_m, parent_k]).unwrap();
    let b_parent = gpu.upload(&host_b, [parent_k, parent_n]).unwrap();
    let a = a_parent.submatrix(a_row..a_row + m, a_col..a_col + k).unwrap();
    let b = b_parent.submatrix(b_row..b_row + k, b_col..b_col + n).unwrap();
    let pick = |host: &[bf16], cols: usize, rows: std::ops::Range<usize>, range: std::ops::Range<usize>| -> Vec<f32> {
        rows.flat_map(|r| range.clone().map(move |c| (r, c))).map(|(r, c)| host[r * cols + c].to_f32()).collect()
    };
    let exact_a = pick(&host_a, parent_k, a_row..a_row + m, a_col..a_col + k);
    let exact_b = pick(&host_b, parent_n, b_row..b_row + k, b_col..b_col + n);
    let want = gemm_reference(&exact_a, &exact_b, &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
    for kernel in hgemm::ALL_BF16 {
        let mut c = gpu.zeros::<f32>([m, n]).unwrap();
        let launched = hgemm::launch_bf16(kernel, gpu, &a, &b, &mut c, 1.0, 0.0).unwrap();
        // aligned operands are read by TMA even where C's rows (90 floats) narrow the stores —
        // unless C is stored by TMA too (`.by_tma()`), whose rows must then be aligned as well
        let aligned = parent_k % 8 == 0 && parent_n % 8 == 0 && a_col % 8 == 0 && b_col % 8 == 0;
        let ir = kernel.ir().unwrap();
        let stores_by_tma = ir.tma_store_copy().is_some();
        let c_aligned = n % 4 == 0;
        assert_eq!(launched.tma, aligned && ir.copies_by_tma() && (c_aligned || !stores_by_tma), "{}", kernel.name());
        let error = relative_error(&gpu.download(&c).unwrap(), &want);
        assert!(
            error < 1e-5,
            "{} on sub-matrices of {parent_m} × {parent_k} and {parent_k} × {parent_n}: relative error {error:e}",
            kernel.name()
        );
    }
}

/// The kernels whose C is 16-bit: C read as 16 bits and widened for β, the f32 result rounded
/// once to nearest even at the store — each element within a unit in the last place of the exact
/// result plus the f32 accumulation's error (the f32-output tests' 1e-5 of the result's size),
/// every element written, at tails that take TMA and ones that do not.
fn sixteen_bit_outputs_are_the_f32_result_rounded_once(gpu: &Backend) {
    // 256 × 256 × 72: whole 128 × 256 tiles in rows 16-byte aligned, stored 16 bytes a lane
    // after each row's four lanes trade their pairs; the others take the pair and edge paths
    let shapes: &[(usize, usize, usize)] = if gpu.is_simulated() {
        &[(65, 40, 328), (33, 17, 9), (256, 256, 72)]
    } else {
        &[(65, 40, 328), (33, 17, 9), (256, 256, 72), (1000, 4097, 129), (2048, 2048, 2048)]
    };
    for &(m, n, k) in shapes {
        let (host_a, exact_a) = rounded(&random_floats(m * k, 21), bf16::from_f32, bf16::to_f32);
        let (host_b, exact_b) = rounded(&random_floats(k * n, 22), bf16::from_f32, bf16::to_f32);
        let (host_c, exact_c) = rounded(&random_floats(m * n, 23), bf16::from_f32, bf16::to_f32);
        let (alpha, beta) = (1.5f32, -0.5f32);
        let want = gemm_reference(&exact_a, &exact_b, &exact_c, (m, n, k), f64::from(alpha), f64::from(beta));
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [k, n]).unwrap();
        // the accumulation's share: what the f32-output tests allow in norm, 1e-5 of the rms
        let accumulation = 1e-5 * (want.iter().map(|w| w * w).sum::<f64>() / want.len() as f64).sqrt();
        for kernel in hgemm::ALL_16_BIT_OUTPUT.iter().filter(|k| k.name().ends_with("bf16_to_bf16")) {
            let mut c = gpu.upload(&host_c, [m, n]).unwrap();
            let launched = hgemm::launch_gemm_16_bit(kernel, gpu, &a, &b, &mut c, alpha, beta).unwrap();
            assert_eq!(launched.tma, k % 8 == 0 && n % 8 == 0, "{}, {m}×{n}×{k}: copied by TMA", kernel.name());
            let got = gpu.download(&c).unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                // bf16 keeps 8 significant bits: half an ulp is 2^-9 of the value
                let bound = w.abs() * 2f64.powi(-8) + accumulation;
                assert!(
                    (f64::from(g.to_f32()) - w).abs() <= bound,
                    "{}, {m}×{n}×{k}: C[{i}] = {g}, want {w}",
                    kernel.name()
                );
            }
        }
        // and F16, whose 11 bits the same check holds to 2^-11
        let (host_a, exact_a) = rounded(&random_floats(m * k, 24), f16::from_f32, f16::to_f32);
        let (host_b, exact_b) = rounded(&random_floats(k * n, 25), f16::from_f32, f16::to_f32);
        let want = gemm_reference(&exact_a, &exact_b, &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [k, n]).unwrap();
        let accumulation = 1e-5 * (want.iter().map(|w| w * w).sum::<f64>() / want.len() as f64).sqrt();
        for kernel in hgemm::ALL_16_BIT_OUTPUT.iter().filter(|k| k.name().ends_with("f16_to_f16")) {
            let mut c = gpu.filled([m, n], f16::NAN).unwrap();
            hgemm::launch_gemm_16_bit(kernel, gpu, &a, &b, &mut c, 1.0, 0.0).unwrap();
            for (i, (g, w)) in gpu.download(&c).unwrap().iter().zip(&want).enumerate() {
                let bound = w.abs() * 2f64.powi(-10) + accumulation;
                assert!(
                    (f64::from(g.to_f32()) - w).abs() <= bound,
                    "{}, {m}×{n}×{k}: F16 C[{i}] = {g}, want {w}",
                    kernel.name()
                );
            }
        }
    }
}
