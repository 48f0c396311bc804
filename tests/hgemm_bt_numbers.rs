//! `catalog::hgemm_bt`: C = α·A·Bᵀ + β·C with B stored [N, K] — every kernel against an f64
//! product of the same 16-bit-rounded inputs, on whole tiles and tails (K not a multiple of 8
//! takes cp.async instead of TMA), on the CPU simulation and, ignored without one, on a GPU.

mod common;

use common::{gemm_reference, random_floats, relative_error, transposed};
use tessera::catalog::{gemm_input_type, gemm_output_type, hgemm_bt};
use tessera::dsl::ElementType;
use tessera::half::{bf16, f16};
use tessera::runtime::Element;
use tessera::Backend;

on_both_backends!(every_kernel_multiplies_by_b_transposed);

fn every_kernel_multiplies_by_b_transposed(backend: &Backend) {
    let shapes: &[(usize, usize, usize)] = if backend.is_simulated() {
        &[(65, 40, 72), (33, 17, 9), (130, 136, 64)]
    } else {
        &[(65, 40, 72), (33, 17, 9), (130, 136, 64), (1000, 4097, 136), (2048, 2048, 2048)]
    };
    for &(m, n, k) in shapes {
        for kernel in hgemm_bt::ALL {
            match gemm_input_type(kernel) {
                ElementType::F16 => check(backend, kernel, (m, n, k), f16::from_f32, f16::to_f32, 10),
                _ => check(backend, kernel, (m, n, k), bf16::from_f32, bf16::to_f32, 8),
            }
        }
    }
}

fn check<T: Element>(
    backend: &Backend,
    kernel: &'static tessera::KernelDefinition,
    (m, n, k): (usize, usize, usize),
    from_f32: fn(f32) -> T,
    to_f32: fn(T) -> f32,
    bits: i32,
) {
    let rounded = |count, seed| random_floats(count, seed).into_iter().map(from_f32).collect::<Vec<T>>();
    let exact = |v: &[T]| v.iter().map(|&h| to_f32(h)).collect::<Vec<f32>>();
    let (host_a, host_b) = (rounded(m * k, 41), rounded(n * k, 42));
    let (alpha, beta) = (1.5f32, -0.5f32);
    let a = backend.upload(&host_a, [m, k]).unwrap();
    let b = backend.upload(&host_b, [n, k]).unwrap();
    let b_kn = transposed(&exact(&host_b), n, k);
    let name = kernel.name();
    if gemm_output_type(kernel) == ElementType::F32 {
        let host_c = random_floats(m * n, 43);
        let want = gemm_reference(&exact(&host_a), &b_kn, &host_c, (m, n, k), 1.5, -0.5);
        let mut c = backend.upload(&host_c, [m, n]).unwrap();
        let launched = hgemm_bt::launch(kernel, backend, &a, &b, &mut c, alpha, beta).unwrap();
        assert_eq!(launched.tma, k % 8 == 0, "{name} at {m}×{n}×{k}: A and B copied by TMA");
        let error = relative_error(&backend.download(&c).unwrap(), &want);
        assert!(error < 1e-5, "{name} at {m}×{n}×{k}: relative error {error:e}");
    } else {
        let host_c = rounded(m * n, 43);
        let want = gemm_reference(&exact(&host_a), &b_kn, &exact(&host_c), (m, n, k), 1.5, -0.5);
        let mut c = backend.upload(&host_c, [m, n]).unwrap();
        hgemm_bt::launch(kernel, backend, &a, &b, &mut c, alpha, beta).unwrap();
        // rounded once at the store: within an ulp of the exact result, plus the f32
        // accumulation's share (1e-5 of the rms, what the f32 tests allow in norm)
        let accumulation = 1e-5 * (want.iter().map(|w| w * w).sum::<f64>() / want.len() as f64).sqrt();
        for (i, (g, w)) in backend.download(&c).unwrap().into_iter().zip(&want).enumerate() {
            let got = f64::from(to_f32(g));
            let bound = w.abs() * 2f64.powi(-bits) + accumulation;
            assert!((got - w).abs() <= bound, "{name} at {m}×{n}×{k}: C[{i}] = {got}, want {w}");
        }
    }
}
