//! The SGEMM family's numbers against an f64 CPU reference: every kernel, tails in M, N and
//! K, α and β, and β = 0 never reading C — on the CPU simulation of the emitted CUDA C in CI
//! (small shapes) and on a GPU with `cargo test --release --test sgemm_numbers -- --include-ignored`.

mod common;

use common::{gemm_reference, random_floats, relative_error, transposed};
use tessera::catalog::{sgemm, sgemm_bt};
use tessera::Backend;

on_both_backends!(
    every_sgemm_kernel_matches_an_f64_reference_on_tail_shapes,
    beta_zero_never_reads_c,
    every_sgemm_bt_kernel_multiplies_by_b_stored_n_by_k
);

/// Shapes from {1, 17, 127, 129, 1000, 4097}, mixed and non-square, and two small non-square
/// tails; the simulation takes the small ones (M, N and K all different among them).
const SHAPES: [(usize, usize, usize); 14] = [
    (1, 1, 1),
    (17, 17, 17),
    (33, 17, 9),
    (17, 65, 33),
    (127, 129, 17),
    (129, 127, 1000),
    (1000, 17, 129),
    (17, 1000, 127),
    (1000, 1000, 1000),
    (4097, 129, 17),
    (129, 4097, 127),
    (127, 17, 4097),
    (1000, 4097, 129),
    (4097, 1000, 129),
];

fn every_sgemm_kernel_matches_an_f64_reference_on_tail_shapes(gpu: &Backend) {
    for (index, &(m, n, k)) in SHAPES.iter().enumerate() {
        if gpu.is_simulated() && m * n * k > 200_000 {
            continue;
        }
        let (host_a, host_b, host_c) = (
            random_floats(m * k, 1 + index as u64),
            random_floats(k * n, 100 + index as u64),
            random_floats(m * n, 200),
        );
        let (alpha, beta) = (1.5f32, -0.5f32);
        let want = gemm_reference(&host_a, &host_b, &host_c, (m, n, k), f64::from(alpha), f64::from(beta));
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [k, n]).unwrap();
        for kernel in sgemm::ALL {
            let mut c = gpu.upload(&host_c, [m, n]).unwrap();
            sgemm::launch(kernel, gpu, &a, &b, &mut c, alpha, beta).unwrap();
            let error = relative_error(&gpu.download(&c).unwrap(), &want);
            assert!(error < 1e-5, "{} at M={m} N={n} K={k}: relative error {error:e}", kernel.name());
        }
    }
}

/// `catalog::sgemm_bt`: C = α·A·Bᵀ + β·C with B stored [N, K], against the f64 product with B
/// turned, at the tail shapes (the simulation the small ones) — B's tile is turned into shared
/// memory element by element, so every edge of B's rows and columns is a tail.
fn every_sgemm_bt_kernel_multiplies_by_b_stored_n_by_k(gpu: &Backend) {
    for (index, &(m, n, k)) in SHAPES.iter().enumerate() {
        if gpu.is_simulated() && m * n * k > 200_000 {
            continue;
        }
        let (host_a, host_b, host_c) = (
            random_floats(m * k, 11 + index as u64),
            random_floats(n * k, 300 + index as u64),
            random_floats(m * n, 400),
        );
        let want = gemm_reference(&host_a, &transposed(&host_b, n, k), &host_c, (m, n, k), 1.5, -0.5);
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [n, k]).unwrap();
        for kernel in sgemm_bt::ALL {
            let mut c = gpu.upload(&host_c, [m, n]).unwrap();
            sgemm_bt::launch(kernel, gpu, &a, &b, &mut c, 1.5, -0.5).unwrap();
            let error = relative_error(&gpu.download(&c).unwrap(), &want);
            assert!(error < 1e-5, "{} at M={m} N={n} K={k}: relative error {error:e}", kernel.name());
        }
    }
}

fn beta_zero_never_reads_c(gpu: &Backend) {
    let (m, n, k) = (129, 131, 67);
    let (host_a, host_b) = (random_floats(m * k, 5), random_floats(k * n, 6));
    let want = gemm_reference(&host_a, &host_b, &vec![0.0; m * n], (m, n, k), 2.0, 0.0);
    let a = gpu.upload(&host_a, [m, k]).unwrap();
    let b = gpu.upload(&host_b, [k, n]).unwrap();
    for kernel in sgemm::ALL {
        let mut c = gpu.filled([m, n], f32::NAN).unwrap();
        sgemm::launch(kernel, gpu, &a, &b, &mut c, 2.0, 0.0).unwrap();
        let got = gpu.download(&c).unwrap();
        assert!(got.iter().all(|v| v.is_finite()), "{}: NaN from C leaked through beta = 0", kernel.name());
        assert!(relative_error(&got, &want) < 1e-5, "{}", kernel.name());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cublas_and_the_typed_launch_agree() {
    let gpu = tessera::Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    let (m, n, k) = (300, 200, 100);
    let a = gpu.upload(&random_floats(m * k, 7), [m, k]).unwrap();
    let b = gpu.upload(&random_floats(k * n, 8), [k, n]).unwrap();
    let mut ours = gpu.zeros::<f32>([m, n]).unwrap();
    let mut theirs = gpu.zeros::<f32>([m, n]).unwrap();
    let launched = sgemm::sgemm_v3::launch(&gpu, &a, &b, &mut ours, 1.0, 0.0).unwrap();
    assert_eq!(launched.grid, [2, 3, 1]); // cdiv(200, 128) × cdiv(300, 128)
    gpu.cublas().unwrap().sgemm(1.0, &a, &b, 0.0, &mut theirs).unwrap();
    let want: Vec<f64> = gpu.download(&theirs).unwrap().into_iter().map(f64::from).collect();
    assert!(relative_error(&gpu.download(&ours).unwrap(), &want) < 1e-5);
}
