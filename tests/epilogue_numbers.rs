//! Fused GEMM epilogues (`copy(&acc, c.tile(..)).map(|v, row, col| ..)`) against f64
//! references: bias + GELU on SGEMM V13 and on V12's stream-K (and through
//! `tessera::gemm_bias_gelu`, fused or as two kernels), bias + ReLU + residual with α and β on V11, bias +
//! SiLU rounded to bf16 on the tensor-core HGEMM V6, bias (+ GELU, or + a residual) on bf16 and f16
//! data on the wgmma HGEMM V11, and the unfused second kernels `bias_gelu_f32` / `_bf16` / `_f16` — tails in M, N and K, on the CPU simulation and, ignored without one, on
//! a GPU (`cargo test --release --test epilogue_numbers -- --include-ignored`).

mod common;

use common::{gemm_reference, random_floats, simulator_with_resident_blocks, transposed, POISON};
use tessera::catalog::epilogue::{
    bias_gelu_bf16, bias_gelu_f16, bias_gelu_f32, bias_residual_bf16, bias_residual_f16, gelu_bf16, gelu_f16,
    hgemm_bias_bf16, hgemm_bias_f16, hgemm_bias_gelu_bf16, hgemm_bias_gelu_f16, hgemm_bias_residual_bf16,
    hgemm_bias_residual_f16, hgemm_bias_silu_bf16, hgemm_bias_small_tiles_bf16, hgemm_bias_small_tiles_f16,
    sgemm_bias_gelu, sgemm_bias_gelu_stream_k, sgemm_bias_relu_residual, sgemm_bias_residual,
};
use tessera::gemm_dispatch::BiasGeluPlan;
use tessera::half::{bf16, f16};
use tessera::Backend;

on_both_backends!(
    bias_and_gelu_fused_into_sgemm_match_an_f64_reference,
    gemm_bias_gelu_runs_the_plan_it_chose_and_matches_the_reference,
    bias_relu_and_residual_fused_before_alpha_and_beta_match_an_f64_reference,
    a_residual_added_in_sgemm_matches_an_f64_reference_on_views,
    bias_and_silu_fused_into_the_bf16_tensor_core_gemm_match_an_f64_reference,
    the_separate_bias_gelu_kernel_matches_an_f64_reference,
    gelu_is_within_a_few_millionths_of_the_f64_gelu_over_its_whole_range,
    bias_and_gelu_fused_into_the_wgmma_gemm_match_an_f64_reference_on_bf16_and_f16,
    a_residual_added_in_the_wgmma_gemm_matches_an_f64_reference_on_bf16_and_f16,
    the_separate_bias_residual_kernels_match_an_f64_reference,
    gemm_bias_residual_runs_the_kernels_the_table_takes_and_matches_the_reference,
    the_separate_16_bit_bias_gelu_kernels_match_an_f64_reference,
    gemm_bias_gelu_on_16_bit_data_rounds_the_biased_product_then_takes_its_gelu,
    the_in_place_gelu_matches_an_f64_reference_on_rows_of_any_width,
    a_linear_layer_with_b_stored_n_by_k_adds_the_bias_and_rounds_once,
    a_linear_layer_with_b_stored_n_by_k_adds_the_residual_and_rounds_once,
    a_linear_layer_with_b_stored_n_by_k_rounds_then_takes_the_gelu,
);

/// `hgemm_bt_bias_*` (V11's and V20's tiles) and `tessera::gemm_bt_bias`: C = α·A·Bᵀ + bias
/// with B stored [N, K], bf16 and f16, against f64 from the rounded inputs — each element
/// within an ulp of the exact result plus the f32 accumulation's share — at tails (K % 8 ≠ 0
/// copies with cp.async) and, on the GPU, through the entry point's aligned copies.
fn a_linear_layer_with_b_stored_n_by_k_adds_the_bias_and_rounds_once(backend: &Backend) {
    linear_layer_cases(backend, LinearEpilogue::Bias);
}

/// `hgemm_bt_bias_residual_*` and `tessera::gemm_bt_bias_residual`: C = α·A·Bᵀ + bias + residual
/// (`x + F.linear(h, w, b)`), the sum in f32 and C rounded once, as
/// [`a_linear_layer_with_b_stored_n_by_k_adds_the_bias_and_rounds_once`] checks the bias alone.
fn a_linear_layer_with_b_stored_n_by_k_adds_the_residual_and_rounds_once(backend: &Backend) {
    linear_layer_cases(backend, LinearEpilogue::BiasResidual);
}

/// `tessera::gemm_bt_bias_gelu`: `F.gelu(F.linear(x, w, b))` — the biased product rounded to 16
/// bits by the GEMM, then its GELU rounded again — against GELU of the f64 result rounded as the
/// GEMM rounds it, within one 16-bit step of the product through GELU's slope of at most 1.13.
fn a_linear_layer_with_b_stored_n_by_k_rounds_then_takes_the_gelu(backend: &Backend) {
    linear_layer_cases(backend, LinearEpilogue::BiasGelu);
}

/// What a linear layer's GEMM adds to α·A·Bᵀ.
#[derive(Clone, Copy, Debug, PartialEq)]
enum LinearEpilogue {
    Bias,
    BiasResidual,
    BiasGelu,
}

/// `epilogue` on bf16 and f16 at the test's shapes (on the GPU also 1023 × 1025 × 1027, rows
/// not 16-byte aligned), by each B [N, K] kernel that fuses it and by its entry point; the entry
/// point must take both tile sizes over the shapes on the GPU (V20's at the small shapes).
fn linear_layer_cases(backend: &Backend, epilogue: LinearEpilogue) {
    use tessera::catalog::epilogue::{
        hgemm_bt_bias_bf16, hgemm_bt_bias_f16, hgemm_bt_bias_residual_bf16, hgemm_bt_bias_residual_f16,
        hgemm_bt_bias_residual_small_tiles_bf16, hgemm_bt_bias_residual_small_tiles_f16,
        hgemm_bt_bias_small_tiles_bf16, hgemm_bt_bias_small_tiles_f16,
    };
    type Kernels = [(&'static str, &'static tessera::KernelDefinition); 2];
    let (bf16_kernels, f16_kernels): (Kernels, Kernels) = match epilogue {
        LinearEpilogue::BiasResidual => (
            [
                ("hgemm_bt_bias_residual_bf16", &hgemm_bt_bias_residual_bf16::KERNEL),
                ("hgemm_bt_bias_residual_small_tiles_bf16", &hgemm_bt_bias_residual_small_tiles_bf16::KERNEL),
            ],
            [
                ("hgemm_bt_bias_residual_f16", &hgemm_bt_bias_residual_f16::KERNEL),
                ("hgemm_bt_bias_residual_small_tiles_f16", &hgemm_bt_bias_residual_small_tiles_f16::KERNEL),
            ],
        ),
        LinearEpilogue::Bias | LinearEpilogue::BiasGelu => (
            [
                ("hgemm_bt_bias_bf16", &hgemm_bt_bias_bf16::KERNEL),
                ("hgemm_bt_bias_small_tiles_bf16", &hgemm_bt_bias_small_tiles_bf16::KERNEL),
            ],
            [
                ("hgemm_bt_bias_f16", &hgemm_bt_bias_f16::KERNEL),
                ("hgemm_bt_bias_small_tiles_f16", &hgemm_bt_bias_small_tiles_f16::KERNEL),
            ],
        ),
    };
    let mut shapes = shapes(backend);
    if !backend.is_simulated() {
        shapes.push((1023, 1025, 1027));
    }
    let mut launched = Vec::new();
    for (m, n, k) in shapes {
        launched.push(linear_case(backend, (m, n, k), (bf16::from_f32, bf16::to_f32), 8, epilogue, &bf16_kernels));
        launched.push(linear_case(backend, (m, n, k), (f16::from_f32, f16::to_f32), 10, epilogue, &f16_kernels));
    }
    if !backend.is_simulated() {
        for (name, _) in bf16_kernels.iter().chain(&f16_kernels) {
            assert!(launched.contains(name), "{epilogue:?}: the entry point never took {name}: {launched:?}");
        }
    }
}

/// One shape of [`linear_layer_cases`] on `T`: each of `kernels` (where the epilogue is fused),
/// then the entry point, against f64; the kernel the entry point took.
fn linear_case<T: tessera::gemm_dispatch::LinearElement>(
    backend: &Backend,
    (m, n, k): (usize, usize, usize),
    (from_f32, to_f32): (fn(f32) -> T, fn(T) -> f32),
    bits: i32,
    epilogue: LinearEpilogue,
    kernels: &[(&'static str, &'static tessera::KernelDefinition)],
) -> &'static str {
    let rounded = |count, seed| random_floats(count, seed).into_iter().map(from_f32).collect::<Vec<T>>();
    let exact = |v: &[T]| v.iter().map(|&h| to_f32(h)).collect::<Vec<f32>>();
    let (host_a, host_b, host_bias) = (rounded(m * k, 61), rounded(n * k, 62), rounded(n, 63));
    let host_residual = rounded(m * n, 64);
    let b_kn = transposed(&exact(&host_b), n, k);
    let product = gemm_reference(&exact(&host_a), &b_kn, &vec![0.0; m * n], (m, n, k), 1.5, 0.0);
    let (bias, residual) = (exact(&host_bias), exact(&host_residual));
    let step = 2f64.powi(-bits);
    let accumulation = 1e-5 * (product.iter().map(|w| w * w).sum::<f64>() / product.len() as f64).sqrt();
    // (want, bound) of each element
    let expected: Vec<(f64, f64)> = product
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let biased = p + f64::from(bias[i % n]);
            match epilogue {
                LinearEpilogue::Bias => (biased, biased.abs() * step + accumulation),
                LinearEpilogue::BiasResidual => {
                    let w = biased + f64::from(residual[i]);
                    (w, w.abs() * step + accumulation)
                }
                LinearEpilogue::BiasGelu => {
                    // the GEMM's rounded result may be the neighbour of what the f64 one rounds to
                    let w = gelu(f64::from(to_f32(from_f32(biased as f32))));
                    (w, 1.13 * (biased.abs() * 2.0 * step + accumulation) + w.abs() * step)
                }
            }
        })
        .collect();
    let a = backend.upload(&host_a, [m, k]).unwrap();
    let b = backend.upload(&host_b, [n, k]).unwrap();
    let bias = backend.upload(&host_bias, [n]).unwrap();
    let residual = backend.upload(&host_residual, [m, n]).unwrap();
    let check = |name: &str, c: &tessera::DeviceTensor<T>| {
        for (i, (g, (w, bound))) in backend.download(c).unwrap().into_iter().zip(&expected).enumerate() {
            let got = f64::from(to_f32(g));
            assert!((got - w).abs() <= *bound, "{name} at {m}×{n}×{k}: C[{i}] = {got}, want {w}");
        }
    };
    if epilogue != LinearEpilogue::BiasGelu {
        for (name, kernel) in kernels {
            let mut c = backend.filled([m, n], from_f32(f32::NAN)).unwrap();
            let mut arguments = vec![
                tessera::Argument::input("a", &a),
                tessera::Argument::input("b", &b),
                tessera::Argument::input("bias", &bias),
            ];
            if epilogue == LinearEpilogue::BiasResidual {
                arguments.push(tessera::Argument::input("residual", &residual));
            }
            arguments.extend([tessera::Argument::output("c", &mut c), tessera::Argument::scalar("alpha", 1.5f32)]);
            kernel.launch(backend, &mut arguments).unwrap();
            drop(arguments);
            check(name, &c);
        }
    }
    let mut c = backend.filled([m, n], from_f32(f32::NAN)).unwrap();
    let launched = match epilogue {
        LinearEpilogue::Bias => tessera::gemm_bt_bias(backend, &a, &b, &bias, &mut c, 1.5),
        LinearEpilogue::BiasResidual => tessera::gemm_bt_bias_residual(backend, &a, &b, &bias, &residual, &mut c, 1.5),
        LinearEpilogue::BiasGelu => tessera::gemm_bt_bias_gelu(backend, &a, &b, &bias, &mut c, 1.5),
    }
    .unwrap();
    let taken = kernels.iter().map(|(name, _)| *name).find(|name| *name == launched.kernel);
    let taken = taken.unwrap_or_else(|| panic!("{epilogue:?} at {m}×{n}×{k} took {}", launched.kernel));
    check(&format!("{epilogue:?} entry point ({taken})"), &c);
    taken
}

/// Tails in every dimension; the simulation takes the small ones.
fn shapes(backend: &Backend) -> Vec<(usize, usize, usize)> {
    let mut shapes = vec![(1, 1, 1), (17, 33, 9), (129, 257, 40)];
    if !backend.is_simulated() {
        shapes.extend([(1000, 1000, 1000), (4097, 129, 17), (127, 4095, 513), (2048, 2048, 2048)]);
    }
    shapes
}

/// GELU in f64 through erfc, so that Φ(x) keeps its digits where it is small (x ≪ 0): 1 +
/// erf(x/√2) loses them below x ≈ −8 even in f64.
fn gelu(x: f64) -> f64 {
    let tail = 0.5 * libm_erfc(x.abs() / std::f64::consts::SQRT_2); // 1 − Φ(|x|)
    if x >= 0.0 {
        x * (1.0 - tail)
    } else {
        x * tail
    }
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// erf to double precision (Abramowitz–Stegun 7.1.26 is too coarse for a 1e-6 check).
fn libm_erf(x: f64) -> f64 {
    (1.0 - libm_erfc(x.abs())).copysign(x)
}

/// erfc(a) for a ≥ 0 to double precision, relative to erfc itself: 1 − the series of erf for a < 3,
/// the continued fraction beyond.
fn libm_erfc(a: f64) -> f64 {
    if a < 3.0 {
        // erf(a) = 2/√π · Σ (−1)^n a^(2n+1) / (n! (2n+1))
        let (mut term, mut sum, mut n) = (a, a, 0.0);
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -a * a / n;
            sum += term / (2.0 * n + 1.0);
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        // erfc(a) = e^(−a²)/√π · 1/(a + 1/2/(a + 1/(a + 3/2/(a + ...))))
        let mut fraction = a;
        for k in (1..60).rev() {
            fraction = a + f64::from(k) / 2.0 / fraction;
        }
        (-a * a).exp() / std::f64::consts::PI.sqrt() / fraction
    }
}

#[test]
fn the_reference_erf_is_the_error_function() {
    for (x, want) in [
        (0.0, 0.0),
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (2.0, 0.995_322_265_018_952_7),
        (3.5, 0.999_999_256_901_627_7),
    ] {
        assert!((libm_erf(x) - want).abs() < 1e-15, "erf({x}) = {}", libm_erf(x));
        assert!((libm_erf(-x) + want).abs() < 1e-15);
    }
    // erfc where 1 − erf has no digits left (values from the continued fraction in 50-digit arithmetic)
    for (a, want) in [(5.0, 1.537_459_794_428_034_8e-12), (8.0, 1.122_429_717_298_292_7e-29)] {
        assert!((libm_erfc(a) / want - 1.0).abs() < 1e-13, "erfc({a}) = {}", libm_erfc(a));
    }
}

/// |got − want| within `slack` of the largest |want| (f32 accumulation over K, erff's ulps).
fn assert_close(what: &str, got: &[f32], want: &[f64], relative: f64) {
    let scale = want.iter().fold(1e-30f64, |m, w| m.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((f64::from(*g) - w).abs() <= relative * scale, "{what}: element {i} is {g}, want {w} (scale {scale})");
    }
}

/// A, B, bias and the f64 GELU(α·A·B + bias) of an M×N×K problem.
struct BiasGelu {
    a: Vec<f32>,
    b: Vec<f32>,
    bias: Vec<f32>,
    want: Vec<f64>,
}

fn bias_gelu_problem((m, n, k): (usize, usize, usize), alpha: f32) -> BiasGelu {
    let (a, b, bias) = (random_floats(m * k, m as u64), random_floats(k * n, n as u64), random_floats(n, 7));
    let product = gemm_reference(&a, &b, &vec![0.0; m * n], (m, n, k), f64::from(alpha), 0.0);
    let want = product.iter().enumerate().map(|(i, p)| gelu(p + f64::from(bias[i % n]))).collect();
    BiasGelu { a, b, bias, want }
}

fn bias_and_gelu_fused_into_sgemm_match_an_f64_reference(backend: &Backend) {
    // 2 × 2 tiles of 12 k-tiles at 129 × 257 × 384: stream-K splits them between blocks, so the
    // GELU runs after the shares are added
    let mut shapes = shapes(backend);
    shapes.push((129, 257, 384));
    for (m, n, k) in shapes {
        let alpha = 1.25f32;
        let problem = bias_gelu_problem((m, n, k), alpha);
        let a = backend.upload(&problem.a, [m, k]).unwrap();
        let b = backend.upload(&problem.b, [k, n]).unwrap();
        let bias = backend.upload(&problem.bias, [n]).unwrap();
        let mut c = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        sgemm_bias_gelu::launch(backend, &a, &b, &bias, &mut c, alpha).unwrap();
        assert_close(&format!("sgemm_bias_gelu {m}×{n}×{k}"), &backend.download(&c).unwrap(), &problem.want, 1e-5);
        // stream-K's grid is the resident blocks: 3 on the simulation, so that 4 tiles are split
        let three_blocks;
        let stream_k_backend = if backend.is_simulated() {
            three_blocks = simulator_with_resident_blocks(3, 0x6e1);
            &three_blocks
        } else {
            backend
        };
        let (a, b, bias) = (
            stream_k_backend.upload(&problem.a, [m, k]).unwrap(),
            stream_k_backend.upload(&problem.b, [k, n]).unwrap(),
            stream_k_backend.upload(&problem.bias, [n]).unwrap(),
        );
        let mut c = stream_k_backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        let launched = sgemm_bias_gelu_stream_k::launch(stream_k_backend, &a, &b, &bias, &mut c, alpha).unwrap();
        let what = format!("sgemm_bias_gelu_stream_k {m}×{n}×{k}");
        assert_close(&what, &stream_k_backend.download(&c).unwrap(), &problem.want, 1e-5);
        if (m, n, k) == (129, 257, 384) {
            assert_ne!(4 % launched.grid[0], 0, "{what}: {} blocks share 4 tiles whole, none split", launched.grid[0]);
        }
    }
}

fn gemm_bias_gelu_runs_the_plan_it_chose_and_matches_the_reference(backend: &Backend) {
    // the H200 table's choices: V12 + bias_gelu_f32 at 1024³, fused into V13 at 4096³ (the
    // simulation takes the H200's), the small shapes whichever is nearest
    let mut shapes = vec![(64, 48, 32), (129, 257, 384), (1024, 1024, 64)];
    if !backend.is_simulated() {
        shapes.extend([(1024, 1024, 1024), (4096, 4096, 512), (4097, 4097, 4097)]);
    }
    let mut plans = Vec::new();
    for (m, n, k) in shapes {
        let problem = bias_gelu_problem((m, n, k), 0.5);
        let a = backend.upload(&problem.a, [m, k]).unwrap();
        let b = backend.upload(&problem.b, [k, n]).unwrap();
        let bias = backend.upload(&problem.bias, [n]).unwrap();
        let mut c = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        let launched = tessera::gemm_bias_gelu(backend, &a, &b, &bias, &mut c, 0.5).unwrap();
        let plan = tessera::gemm_dispatch::choose_bias_gelu(backend, &[m, k], &[k, n]).unwrap();
        let gemm = match plan {
            BiasGeluPlan::Fused(kernel) | BiasGeluPlan::Separate(kernel) => kernel.name(),
        };
        assert_eq!(launched.kernel, gemm, "{m}×{n}×{k}: the launch is the plan's GEMM");
        assert_close(&format!("{} {m}×{n}×{k}", plan.describe()), &backend.download(&c).unwrap(), &problem.want, 1e-5);
        plans.push(plan.describe());
    }
    assert!(plans.iter().any(|p| p.contains(" + bias_gelu_f32")), "both plans run: {plans:?}");
}

fn bias_relu_and_residual_fused_before_alpha_and_beta_match_an_f64_reference(backend: &Backend) {
    for (m, n, k) in shapes(backend) {
        let (host_a, host_b) = (random_floats(m * k, 3 + m as u64), random_floats(k * n, 5 + n as u64));
        let (host_bias, host_residual, host_c) =
            (random_floats(n, 11), random_floats(m * n, 13), random_floats(m * n, 17));
        let product = gemm_reference(&host_a, &host_b, &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
        for (alpha, beta) in [(1.0f32, 0.0f32), (0.5, -2.0)] {
            let want: Vec<f64> = product
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let mapped = (p + f64::from(host_bias[i % n])).max(0.0) + f64::from(host_residual[i]);
                    f64::from(alpha) * mapped + f64::from(beta) * f64::from(host_c[i])
                })
                .collect();
            let a = backend.upload(&host_a, [m, k]).unwrap();
            let b = backend.upload(&host_b, [k, n]).unwrap();
            let bias = backend.upload(&host_bias, [n]).unwrap();
            let residual = backend.upload(&host_residual, [m, n]).unwrap();
            // β = 0 must not read C: poison it
            let mut c = if beta == 0.0 {
                backend.filled([m, n], f32::from_bits(POISON)).unwrap()
            } else {
                backend.upload(&host_c, [m, n]).unwrap()
            };
            sgemm_bias_relu_residual::launch(backend, &a, &b, &bias, &residual, &mut c, alpha, beta).unwrap();
            assert_close(
                &format!("sgemm_bias_relu_residual {m}×{n}×{k} α={alpha} β={beta}"),
                &backend.download(&c).unwrap(),
                &want,
                1e-5,
            );
        }
    }
}

/// `sgemm_bias_residual` (V13) against α·A·B + bias + residual in f64, the residual a view
/// into a wider matrix with rows 16-byte aligned (ld a multiple of 4, with whole tiles of a C
/// whose rows are aligned too: 256 × 512, the float4 stores) and not (ld N + 1: the launch
/// narrows the vectors).
fn a_residual_added_in_sgemm_matches_an_f64_reference_on_views(backend: &Backend) {
    let alpha = 1.5f32;
    let mut shapes = shapes(backend);
    shapes.push((256, 512, 24));
    for (m, n, k) in shapes {
        let (host_a, host_b, host_bias) =
            (random_floats(m * k, 7 + m as u64), random_floats(k * n, 9), random_floats(n, 19));
        let product = gemm_reference(&host_a, &host_b, &vec![0.0; m * n], (m, n, k), f64::from(alpha), 0.0);
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let bias = backend.upload(&host_bias, [n]).unwrap();
        for ld in [n.next_multiple_of(4) + 4, n + 1] {
            let host_residual = random_floats(m * ld, 23 + ld as u64);
            let residual = backend.upload(&host_residual, [m, ld]).unwrap();
            let want: Vec<f64> = product
                .iter()
                .enumerate()
                .map(|(i, p)| p + f64::from(host_bias[i % n]) + f64::from(host_residual[i / n * ld + i % n]))
                .collect();
            let mut c = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
            sgemm_bias_residual::launch(
                backend,
                &a,
                &b,
                &bias,
                &residual.submatrix(0..m, 0..n).unwrap(),
                &mut c,
                alpha,
            )
            .unwrap();
            assert_close(
                &format!("sgemm_bias_residual {m}×{n}×{k}, residual ld {ld}"),
                &backend.download(&c).unwrap(),
                &want,
                1e-5,
            );
        }
    }
}

fn bias_and_silu_fused_into_the_bf16_tensor_core_gemm_match_an_f64_reference(backend: &Backend) {
    for (m, n, k) in shapes(backend) {
        let host_a: Vec<bf16> = random_floats(m * k, 21 + m as u64).into_iter().map(bf16::from_f32).collect();
        let host_b: Vec<bf16> = random_floats(k * n, 23 + n as u64).into_iter().map(bf16::from_f32).collect();
        let host_bias = random_floats(n, 29);
        let exact = |v: &[bf16]| v.iter().map(|h| h.to_f32()).collect::<Vec<_>>();
        let product = gemm_reference(&exact(&host_a), &exact(&host_b), &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
        let want: Vec<f64> = product.iter().enumerate().map(|(i, p)| silu(p + f64::from(host_bias[i % n]))).collect();
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let bias = backend.upload(&host_bias, [n]).unwrap();
        let mut c = backend.filled([m, n], bf16::NAN).unwrap();
        hgemm_bias_silu_bf16::launch(backend, &a, &b, &bias, &mut c).unwrap();
        let got: Vec<f32> = backend.download(&c).unwrap().into_iter().map(bf16::to_f32).collect();
        // one bf16 rounding of the result (2^-9 relative) on top of f32 accumulation
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let slack = w.abs() * 2f64.powi(-8) + 1e-5 * (k as f64).sqrt();
            assert!((f64::from(*g) - w).abs() <= slack, "{m}×{n}×{k}: element {i} is {g}, want {w}");
        }
    }
}

fn the_separate_bias_gelu_kernel_matches_an_f64_reference(backend: &Backend) {
    let mut shapes = vec![(1, 1), (3, 1023), (5, 1025), (2, 3000)];
    if !backend.is_simulated() {
        shapes.push((4096, 4096));
    }
    for (m, n) in shapes {
        let (host_c, host_bias) = (random_floats(m * n, 31), random_floats(n, 37));
        let want: Vec<f64> =
            host_c.iter().enumerate().map(|(i, v)| gelu(f64::from(*v) + f64::from(host_bias[i % n]))).collect();
        let bias = backend.upload(&host_bias, [n]).unwrap();
        let mut c = backend.upload(&host_c, [m, n]).unwrap();
        bias_gelu_f32::launch(backend, &bias, &mut c).unwrap();
        assert_close(&format!("bias_gelu_f32 {m}×{n}"), &backend.download(&c).unwrap(), &want, 1e-6);
    }
}

/// The `gelu` intrinsic (through `bias_gelu_f32` with a zero bias) on 65536 points of [−12, 12)
/// and the edge values, against GELU in f64: relative error under 4e-6 from x = −3 up (a few ulps:
/// the fitted Mills ratio, MUFU.RCP and MUFU.EX2), under 1.5e-5 down to −9.5, where GELU is below
/// 1e-19 in size (the exponent −x²/2 rounded to f32 costs digits there), and zero, ±∞ and NaN kept.
/// 0.5·x·(1 + erff(x/√2)) fails the tail: 4% off at x = −5, zero below x ≈ −5.5.
fn gelu_is_within_a_few_millionths_of_the_f64_gelu_over_its_whole_range(backend: &Backend) {
    let cols = 1024;
    let mut x: Vec<f32> = (0..65536).map(|i| -12.0 + 24.0 * i as f32 / 65536.0).collect();
    let edges = [0.0, -0.0, 1e-30, -1e-30, 1e-37, -1e-37, 9.5, -9.5, 20.0, -20.0, 1e30, -1e30, f32::INFINITY];
    x.extend(edges);
    x.resize(x.len().div_ceil(cols) * cols, f32::NAN);
    let rows = x.len() / cols;
    let bias = backend.upload(&vec![0.0f32; cols], [cols]).unwrap();
    let mut c = backend.upload(&x, [rows, cols]).unwrap();
    bias_gelu_f32::launch(backend, &bias, &mut c).unwrap();
    let got = backend.download(&c).unwrap();
    for (x, got) in x.iter().zip(&got) {
        let (x64, got64) = (f64::from(*x), f64::from(*got));
        if x.is_nan() {
            assert!(got.is_nan(), "gelu(NaN) is {got}");
            continue;
        }
        let want = gelu(x64);
        if want.is_infinite() {
            assert_eq!(got64, want, "gelu({x})");
            continue;
        }
        let bound = match x64 {
            x if x >= -3.0 => 4e-6 * want.abs(),
            x if x >= -9.5 => 1.5e-5 * want.abs(),
            _ => 1e-19,
        };
        assert!(
            (got64 - want).abs() <= bound,
            "gelu({x}) is {got}, want {want} (relative error {:e})",
            (got64 - want).abs() / want.abs()
        );
    }
}

/// `hgemm_bias_bf16` / `_f16` and `hgemm_bias_gelu_bf16` / `_f16` (V11: TMA, wgmma, 16-bit C)
/// against α·A·B + bias and its GELU in f64 from the rounded inputs: tails in M, N and K, a
/// whole-tile shape (256 × 256 × 72: the lanes' 16-byte stores after trading columns), and odd
/// N (rows TMA cannot read: the launch narrows the vector and copies with cp.async).
fn bias_and_gelu_fused_into_the_wgmma_gemm_match_an_f64_reference_on_bf16_and_f16(backend: &Backend) {
    type Kernel<T> = fn(
        &Backend,
        &tessera::DeviceTensor<T>,
        &tessera::DeviceTensor<T>,
        &tessera::DeviceTensor<T>,
        &mut tessera::DeviceTensor<T>,
        f32,
    ) -> Result<tessera::Launched, tessera::Error>;
    fn check<T: tessera::runtime::Element>(
        backend: &Backend,
        (to, back): (fn(f32) -> T, fn(T) -> f32),
        rounding: f64,
        kernels: &[(&str, Kernel<T>, fn(f64) -> f64)],
    ) {
        let alpha = 1.25f32;
        let mut shapes = shapes(backend);
        shapes.push((256, 256, 72));
        for (m, n, k) in shapes {
            let host_a: Vec<T> = random_floats(m * k, 41 + m as u64).into_iter().map(to).collect();
            let host_b: Vec<T> = random_floats(k * n, 43 + n as u64).into_iter().map(to).collect();
            let host_bias: Vec<T> = random_floats(n, 47).into_iter().map(to).collect();
            let exact = |v: &[T]| v.iter().map(|&h| back(h)).collect::<Vec<_>>();
            let product =
                gemm_reference(&exact(&host_a), &exact(&host_b), &vec![0.0; m * n], (m, n, k), f64::from(alpha), 0.0);
            let bias_exact = exact(&host_bias);
            let a = backend.upload(&host_a, [m, k]).unwrap();
            let b = backend.upload(&host_b, [k, n]).unwrap();
            let bias = backend.upload(&host_bias, [n]).unwrap();
            for &(name, launch, activation) in kernels {
                let mut c = backend.filled([m, n], to(f32::NAN)).unwrap();
                launch(backend, &a, &b, &bias, &mut c, alpha).unwrap();
                let got: Vec<f32> = backend.download(&c).unwrap().into_iter().map(back).collect();
                // one 16-bit rounding of the result on top of f32 accumulation
                for (i, (g, p)) in got.iter().zip(&product).enumerate() {
                    let w = activation(p + f64::from(bias_exact[i % n]));
                    let slack = w.abs() * rounding + 1e-5 * (k as f64).sqrt();
                    assert!((f64::from(*g) - w).abs() <= slack, "{name} {m}×{n}×{k}: element {i} is {g}, want {w}");
                }
            }
        }
    }
    let identity: fn(f64) -> f64 = |x| x;
    check(
        backend,
        (bf16::from_f32, bf16::to_f32),
        2f64.powi(-8),
        &[
            ("hgemm_bias_bf16", |d, a, b, bias, c, alpha| hgemm_bias_bf16::launch(d, a, b, bias, c, alpha), identity),
            (
                "hgemm_bias_small_tiles_bf16",
                |d, a, b, bias, c, alpha| hgemm_bias_small_tiles_bf16::launch(d, a, b, bias, c, alpha),
                identity,
            ),
            (
                "hgemm_bias_gelu_bf16",
                |d, a, b, bias, c, alpha| hgemm_bias_gelu_bf16::launch(d, a, b, bias, c, alpha),
                gelu,
            ),
        ],
    );
    check(
        backend,
        (f16::from_f32, f16::to_f32),
        2f64.powi(-11),
        &[
            ("hgemm_bias_f16", |d, a, b, bias, c, alpha| hgemm_bias_f16::launch(d, a, b, bias, c, alpha), identity),
            (
                "hgemm_bias_small_tiles_f16",
                |d, a, b, bias, c, alpha| hgemm_bias_small_tiles_f16::launch(d, a, b, bias, c, alpha),
                identity,
            ),
            (
                "hgemm_bias_gelu_f16",
                |d, a, b, bias, c, alpha| hgemm_bias_gelu_f16::launch(d, a, b, bias, c, alpha),
                gelu,
            ),
        ],
    );
}

/// `hgemm_bias_residual_bf16` / `_f16` (V11) against α·A·B + bias + residual in f64 from the
/// rounded inputs: tails in M, N and K, a whole-tile shape (the 16-byte stores), and the
/// residual as a view into a wider matrix — rows 16-byte aligned (ld a multiple of 8) and not
/// (ld N + 3, which narrows the launch's vectors) — so that a residual read at C's place, not
/// the residual's, fails.
fn a_residual_added_in_the_wgmma_gemm_matches_an_f64_reference_on_bf16_and_f16(backend: &Backend) {
    type Kernel<T> = fn(
        &Backend,
        &tessera::DeviceTensor<T>,
        &tessera::DeviceTensor<T>,
        &tessera::DeviceTensor<T>,
        &tessera::TensorView<'_, T>,
        &mut tessera::DeviceTensor<T>,
        f32,
    ) -> Result<tessera::Launched, tessera::Error>;
    fn check<T: tessera::runtime::Element>(
        backend: &Backend,
        (to, back): (fn(f32) -> T, fn(T) -> f32),
        rounding: f64,
        (name, launch): (&str, Kernel<T>),
    ) {
        let alpha = 0.75f32;
        let mut shapes = shapes(backend);
        shapes.push((256, 256, 72));
        for (m, n, k) in shapes {
            let host_a: Vec<T> = random_floats(m * k, 61 + m as u64).into_iter().map(to).collect();
            let host_b: Vec<T> = random_floats(k * n, 67 + n as u64).into_iter().map(to).collect();
            let host_bias: Vec<T> = random_floats(n, 71).into_iter().map(to).collect();
            let exact = |v: &[T]| v.iter().map(|&h| back(h)).collect::<Vec<_>>();
            let product =
                gemm_reference(&exact(&host_a), &exact(&host_b), &vec![0.0; m * n], (m, n, k), f64::from(alpha), 0.0);
            let bias_exact = exact(&host_bias);
            let a = backend.upload(&host_a, [m, k]).unwrap();
            let b = backend.upload(&host_b, [k, n]).unwrap();
            let bias = backend.upload(&host_bias, [n]).unwrap();
            for ld in [n.next_multiple_of(8) + 8, n + 3] {
                let host_residual: Vec<T> = random_floats(m * ld, 73 + ld as u64).into_iter().map(to).collect();
                let residual = backend.upload(&host_residual, [m, ld]).unwrap();
                let mut c = backend.filled([m, n], to(f32::NAN)).unwrap();
                launch(backend, &a, &b, &bias, &residual.submatrix(0..m, 0..n).unwrap(), &mut c, alpha).unwrap();
                let got: Vec<f32> = backend.download(&c).unwrap().into_iter().map(back).collect();
                // one 16-bit rounding of the result on top of f32 accumulation
                for (i, (g, p)) in got.iter().zip(&product).enumerate() {
                    let (row, col) = (i / n, i % n);
                    let w = p + f64::from(bias_exact[col]) + f64::from(back(host_residual[row * ld + col]));
                    let slack = w.abs() * rounding + 1e-5 * (k as f64).sqrt();
                    assert!(
                        (f64::from(*g) - w).abs() <= slack,
                        "{name} {m}×{n}×{k}, residual ld {ld}: [{row}][{col}] is {g}, want {w}"
                    );
                }
            }
        }
    }
    check(
        backend,
        (bf16::from_f32, bf16::to_f32),
        2f64.powi(-8),
        ("hgemm_bias_residual_bf16", |d, a, b, bias, residual, c, alpha| {
            hgemm_bias_residual_bf16::launch(d, a, b, bias, residual, c, alpha)
        }),
    );
    check(
        backend,
        (f16::from_f32, f16::to_f32),
        2f64.powi(-11),
        ("hgemm_bias_residual_f16", |d, a, b, bias, residual, c, alpha| {
            hgemm_bias_residual_f16::launch(d, a, b, bias, residual, c, alpha)
        }),
    );
}

/// `bias_residual_bf16` / `_f16`: C + bias + residual in place, summed in f32 and rounded once;
/// the residual a view with rows 16-byte aligned (ld a multiple of 8) and not (ld N + 3).
fn the_separate_bias_residual_kernels_match_an_f64_reference(backend: &Backend) {
    fn check<T: tessera::runtime::Element>(
        backend: &Backend,
        (to, back): (fn(f32) -> T, fn(T) -> f32),
        rounding: f64,
        (name, launch): (&str, BiasResidual<T>),
    ) {
        let mut shapes = vec![(1, 1), (3, 1023), (5, 1025), (2, 3000), (2, 4100)];
        if !backend.is_simulated() {
            shapes.push((4096, 4096));
        }
        for (m, n) in shapes {
            let host_c: Vec<T> = random_floats(m * n, 79).into_iter().map(to).collect();
            let host_bias: Vec<T> = random_floats(n, 83).into_iter().map(to).collect();
            let bias = backend.upload(&host_bias, [n]).unwrap();
            for ld in [n.next_multiple_of(8) + 8, n + 3] {
                let host_residual: Vec<T> = random_floats(m * ld, 89).into_iter().map(to).collect();
                let residual = backend.upload(&host_residual, [m, ld]).unwrap();
                let mut c = backend.upload(&host_c, [m, n]).unwrap();
                launch(backend, &bias, &residual.submatrix(0..m, 0..n).unwrap(), &mut c).unwrap();
                let got: Vec<f32> = backend.download(&c).unwrap().into_iter().map(back).collect();
                for (i, g) in got.iter().enumerate() {
                    let (row, col) = (i / n, i % n);
                    let w = f64::from(back(host_c[i]))
                        + f64::from(back(host_bias[col]))
                        + f64::from(back(host_residual[row * ld + col]));
                    assert!(
                        (f64::from(*g) - w).abs() <= w.abs() * rounding + 1e-7,
                        "{name} {m}×{n}, residual ld {ld}: [{row}][{col}] is {g}, want {w}"
                    );
                }
            }
        }
    }
    type BiasResidual<T> = fn(
        &Backend,
        &tessera::DeviceTensor<T>,
        &tessera::TensorView<'_, T>,
        &mut tessera::DeviceTensor<T>,
    ) -> Result<tessera::Launched, tessera::Error>;
    check(
        backend,
        (bf16::from_f32, bf16::to_f32),
        2f64.powi(-8),
        ("bias_residual_bf16", |d, bias, residual, c| bias_residual_bf16::launch(d, bias, residual, c)),
    );
    check(
        backend,
        (f16::from_f32, f16::to_f32),
        2f64.powi(-11),
        ("bias_residual_f16", |d, bias, residual, c| bias_residual_f16::launch(d, bias, residual, c)),
    );
}

/// `tessera::gemm_bias_residual` on f32, bf16 and f16 against α·A·B + bias + residual in f64
/// from the rounded inputs: at tails and, on the GPU, at 1024³ (V20's tiles for 16-bit data,
/// V12 and the separate add for f32 on an H200's table), 2048³, 4096 × 4096 × 512 and 4097³
/// (16-bit rows not 16-byte aligned: aligned copies of A and B first), each run by a kernel of
/// its type's set, and 16-bit data by both tile sizes over the shapes.
fn gemm_bias_residual_runs_the_kernels_the_table_takes_and_matches_the_reference(backend: &Backend) {
    fn check<T: tessera::gemm_dispatch::BiasResidualElement>(
        backend: &Backend,
        (to, back): (fn(f32) -> T, fn(T) -> f32),
        rounding: f64,
        gemms: &[&str],
    ) {
        let mut shapes = vec![(64, 48, 32), (129, 257, 72), (33, 17, 9)];
        if !backend.is_simulated() {
            shapes.extend([(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 512), (4097, 4097, 4097)]);
        }
        let mut launched_gemms = Vec::new();
        let alpha = 0.75f32;
        for (m, n, k) in shapes {
            let host_a: Vec<T> = random_floats(m * k, 97 + m as u64).into_iter().map(to).collect();
            let host_b: Vec<T> = random_floats(k * n, 101 + n as u64).into_iter().map(to).collect();
            let host_bias: Vec<T> = random_floats(n, 103).into_iter().map(to).collect();
            let host_residual: Vec<T> = random_floats(m * n, 107).into_iter().map(to).collect();
            let exact = |v: &[T]| v.iter().map(|&h| back(h)).collect::<Vec<_>>();
            let product =
                gemm_reference(&exact(&host_a), &exact(&host_b), &vec![0.0; m * n], (m, n, k), f64::from(alpha), 0.0);
            let (bias_exact, residual_exact) = (exact(&host_bias), exact(&host_residual));
            let a = backend.upload(&host_a, [m, k]).unwrap();
            let b = backend.upload(&host_b, [k, n]).unwrap();
            let bias = backend.upload(&host_bias, [n]).unwrap();
            let residual = backend.upload(&host_residual, [m, n]).unwrap();
            let mut c = backend.filled([m, n], to(f32::NAN)).unwrap();
            let launched = tessera::gemm_bias_residual(backend, &a, &b, &bias, &residual, &mut c, alpha).unwrap();
            assert!(gemms.iter().any(|g| launched.kernel.starts_with(g)), "{m}×{n}×{k}: {}", launched.kernel);
            let got: Vec<f32> = backend.download(&c).unwrap().into_iter().map(back).collect();
            for (i, (g, p)) in got.iter().zip(&product).enumerate() {
                let w = p + f64::from(bias_exact[i % n]) + f64::from(residual_exact[i]);
                let slack = w.abs() * rounding + 1e-5 * (k as f64).sqrt();
                assert!(
                    (f64::from(*g) - w).abs() <= slack,
                    "{} {m}×{n}×{k}: element {i} is {g}, want {w}",
                    launched.kernel
                );
            }
            launched_gemms.push(launched.kernel);
        }
        if T::TYPE.is_half() {
            // both tile sizes: V20's at 1024³ (and nearest it, the simulation's small shapes), V11's beyond
            assert!(launched_gemms.iter().any(|g| *g == gemms[1]), "{launched_gemms:?}");
            if !backend.is_simulated() {
                assert!(launched_gemms.iter().any(|g| *g == gemms[0]), "{launched_gemms:?}");
            }
        }
    }
    // f32: fused into V13, or a table GEMM (sgemm_v..) and bias_residual_f32
    check::<f32>(backend, (|v| v, |v| v), 1e-6, &["sgemm_bias_residual", "sgemm_v"]);
    check::<bf16>(
        backend,
        (bf16::from_f32, bf16::to_f32),
        2f64.powi(-8),
        &["hgemm_bias_residual_bf16", "hgemm_bias_residual_small_tiles_bf16"],
    );
    check::<f16>(
        backend,
        (f16::from_f32, f16::to_f32),
        2f64.powi(-11),
        &["hgemm_bias_residual_f16", "hgemm_bias_residual_small_tiles_f16"],
    );
}

/// `bias_gelu_bf16` / `_f16`: GELU(C + bias) in place, widened to f32 and rounded once.
fn the_separate_16_bit_bias_gelu_kernels_match_an_f64_reference(backend: &Backend) {
    let mut shapes = vec![(1, 1), (3, 1023), (5, 1025), (2, 3000)];
    if !backend.is_simulated() {
        shapes.push((4096, 4096));
    }
    for (m, n) in shapes {
        let (host_c, host_bias) = (random_floats(m * n, 53), random_floats(n, 59));
        let reference = |c: &[f32], bias: &[f32]| -> Vec<f64> {
            c.iter().enumerate().map(|(i, v)| gelu(f64::from(*v) + f64::from(bias[i % n]))).collect()
        };
        let close = |got: Vec<f32>, want: Vec<f64>, rounding: f64, what: &str| {
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() <= w.abs() * rounding + 1e-6,
                    "{what} {m}×{n}: element {i} is {g}, want {w}"
                );
            }
        };
        let c16: Vec<bf16> = host_c.iter().copied().map(bf16::from_f32).collect();
        let b16: Vec<bf16> = host_bias.iter().copied().map(bf16::from_f32).collect();
        let want = reference(
            &c16.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
            &b16.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
        );
        let bias = backend.upload(&b16, [n]).unwrap();
        let mut c = backend.upload(&c16, [m, n]).unwrap();
        bias_gelu_bf16::launch(backend, &bias, &mut c).unwrap();
        close(
            backend.download(&c).unwrap().into_iter().map(bf16::to_f32).collect(),
            want,
            2f64.powi(-8),
            "bias_gelu_bf16",
        );
        let c16: Vec<f16> = host_c.iter().copied().map(f16::from_f32).collect();
        let b16: Vec<f16> = host_bias.iter().copied().map(f16::from_f32).collect();
        let want = reference(
            &c16.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
            &b16.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
        );
        let bias = backend.upload(&b16, [n]).unwrap();
        let mut c = backend.upload(&c16, [m, n]).unwrap();
        bias_gelu_f16::launch(backend, &bias, &mut c).unwrap();
        close(
            backend.download(&c).unwrap().into_iter().map(f16::to_f32).collect(),
            want,
            2f64.powi(-11),
            "bias_gelu_f16",
        );
    }
}

/// `tessera::gemm_bias_gelu` on bf16 and f16: the wgmma GEMM with the bias fused, C rounded to
/// 16 bits, then GELU over C — the rounding between the two that `F.gelu(F.linear(..))` makes
/// in torch. Against GELU of the f64 product rounded as the GEMM rounds it (within one 16-bit
/// step of the product, through GELU's slope of at most 1.13), at tails and, on the GPU, rows
/// not 16-byte aligned (4097³: aligned copies of A and B first).
fn gemm_bias_gelu_on_16_bit_data_rounds_the_biased_product_then_takes_its_gelu(backend: &Backend) {
    fn check<T: tessera::gemm_dispatch::BiasGeluElement>(
        backend: &Backend,
        (to, back): (fn(f32) -> T, fn(T) -> f32),
        step: f64,
        gemms: [&str; 2],
    ) {
        let mut shapes = vec![(64, 48, 32), (129, 257, 72), (33, 17, 9)];
        if !backend.is_simulated() {
            shapes.extend([(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 512), (4097, 4097, 4097)]);
        }
        let mut launched_gemms = Vec::new();
        let alpha = 0.75f32;
        for (m, n, k) in shapes {
            let host_a: Vec<T> = random_floats(m * k, 61 + m as u64).into_iter().map(to).collect();
            let host_b: Vec<T> = random_floats(k * n, 67 + n as u64).into_iter().map(to).collect();
            let host_bias: Vec<T> = random_floats(n, 71).into_iter().map(to).collect();
            let exact = |v: &[T]| v.iter().map(|&h| back(h)).collect::<Vec<_>>();
            let product =
                gemm_reference(&exact(&host_a), &exact(&host_b), &vec![0.0; m * n], (m, n, k), f64::from(alpha), 0.0);
            let bias_exact = exact(&host_bias);
            let a = backend.upload(&host_a, [m, k]).unwrap();
            let b = backend.upload(&host_b, [k, n]).unwrap();
            let bias = backend.upload(&host_bias, [n]).unwrap();
            let mut c = backend.filled([m, n], to(f32::NAN)).unwrap();
            let launched = tessera::gemm_bias_gelu(backend, &a, &b, &bias, &mut c, alpha).unwrap();
            assert!(gemms.contains(&launched.kernel), "{m}×{n}×{k}: {}", launched.kernel);
            let gemm = launched.kernel;
            let got: Vec<f32> = backend.download(&c).unwrap().into_iter().map(back).collect();
            for (i, (g, p)) in got.iter().zip(&product).enumerate() {
                let x = p + f64::from(bias_exact[i % n]);
                // the GEMM's rounded product is within one 16-bit spacing (two steps) of x: its f32
                // sums may round to the neighbour of what x rounds to
                let rounded = f64::from(back(to(x as f32)));
                let w = gelu(rounded);
                let slack = 1.13 * (x.abs() * 2.0 * step + 1e-5 * (k as f64).sqrt()) + w.abs() * step;
                assert!((f64::from(*g) - w).abs() <= slack, "{gemm} {m}×{n}×{k}: element {i} is {g}, want {w}");
            }
            launched_gemms.push(gemm);
        }
        // the table's choices on an H200: V20's tiles at 1024³ (and nearest it, the simulation's
        // small shapes), V11's from 2048³
        assert!(launched_gemms.iter().any(|g| *g == gemms[1]), "{launched_gemms:?}");
        if !backend.is_simulated() {
            assert!(launched_gemms.iter().any(|g| *g == gemms[0]), "{launched_gemms:?}");
        }
    }
    check::<bf16>(
        backend,
        (bf16::from_f32, bf16::to_f32),
        2f64.powi(-8),
        ["hgemm_bias_bf16", "hgemm_bias_small_tiles_bf16"],
    );
    check::<f16>(
        backend,
        (f16::from_f32, f16::to_f32),
        2f64.powi(-11),
        ["hgemm_bias_f16", "hgemm_bias_small_tiles_f16"],
    );
}

/// `gelu_bf16` / `gelu_f16`: GELU(C) in place, widened to f32 and rounded once, on rows of 16-byte
/// vectors, rows that end inside a vector (the tail's columns one a thread), rows whose leading
/// dimension is odd (the launch narrows the vector) and more rows than a grid's y extent.
fn the_in_place_gelu_matches_an_f64_reference_on_rows_of_any_width(backend: &Backend) {
    // 65537 rows: more than a grid's y extent holds (the rows are on x); 8200 and 4097 columns:
    // rows over several blocks of 4096 columns, whole vectors and (ld 4099) narrowed ones
    let mut cases = vec![
        (1, 1, 1),
        (3, 1023, 1024),
        (5, 1025, 1025),
        (2, 3000, 3000),
        (4, 2049, 2056),
        (2, 8200, 8200),
        (2, 4097, 4099),
        (65537, 1, 1),
    ];
    if !backend.is_simulated() {
        cases.push((4096, 4096, 4096));
    }
    for (m, n, ld) in cases {
        let host: Vec<f32> = random_floats(m * ld, 73).into_iter().map(|v| 4.0 * v).collect();
        let check = |got: Vec<f32>, rounded: &dyn Fn(f32) -> f32, step: f64, what: &str| {
            for r in 0..m {
                for col in 0..ld {
                    let before = f64::from(rounded(host[r * ld + col]));
                    let want = if col < n { gelu(before) } else { before };
                    let g = f64::from(got[r * ld + col]);
                    assert!(
                        (g - want).abs() <= want.abs() * step + 1e-7,
                        "{what} {m}×{n} (ld {ld}): [{r}][{col}] is {g}, want {want}"
                    );
                }
            }
        };
        let mut parent = backend.upload(&host.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>(), [m, ld]).unwrap();
        gelu_bf16::launch(backend, &mut parent.submatrix_mut(0..m, 0..n).unwrap()).unwrap();
        let got = backend.download(&parent).unwrap().into_iter().map(bf16::to_f32).collect();
        check(got, &|v| bf16::from_f32(v).to_f32(), 2f64.powi(-8), "gelu_bf16");
        let mut parent = backend.upload(&host.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>(), [m, ld]).unwrap();
        gelu_f16::launch(backend, &mut parent.submatrix_mut(0..m, 0..n).unwrap()).unwrap();
        let got = backend.download(&parent).unwrap().into_iter().map(f16::to_f32).collect();
        check(got, &|v| f16::from_f32(v).to_f32(), 2f64.powi(-11), "gelu_f16");
    }
}
