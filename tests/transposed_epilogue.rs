//! `copy(&acc_t.t(), c.tile(..))`: a fragment that holds Cᵀ (a TF32 wgmma on a B stored
//! [K, N], Cᵀ = Bᵀ·Aᵀ with B's tile in wgmma's A registers) stored transposed — through
//! `.map(|v, row, col| ..)`, whose row and column are C's, and rounded to bf16 — checked against
//! an f64 reference from the TF32-truncated inputs at tail shapes on the CPU simulation and,
//! ignored without one, on a GPU.

mod common;

use common::{random_floats, tf32_truncated};
use tessera::half::bf16;
use tessera::prelude::*;
use tessera::Backend;

/// C = bf16(A·B + bias[col] + row / 64), Cᵀ's fragment stored transposed.
#[tile_kernel(threads = 128, vector = 4, target = sm_90a, precision = tf32, consts(BM = 128, BN = 64, BK = 32, WM = 128))]
fn gemm_tf32_transposed_bias(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    bias: Global<f32, (N,)>,
    c: GlobalMut<bf16, (M, N)>,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc_t = fragment::<f32>([BN, BM]).warpgroup_tile([64, WM]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&b_s.t(), &a_s.t(), &mut acc_t);
    }
    copy(&acc_t.t(), c.tile([by, bx], [BM, BN])).map(|v, row, col| v + bias[col] + (row as f32) / 64.0);
}

on_both_backends!(a_transposed_store_maps_each_value_at_its_place_in_c);

#[test]
fn the_store_writes_the_fragment_row_as_the_tile_column() {
    let source = gemm_tf32_transposed_bias::KERNEL.cuda_source();
    // the fragment's row (lane / 4 of its 16 × 8 tile) is C's column, its column C's row
    assert!(source.contains("const int col = warp_row0 + mi * 16 + v / 2 * 8 + lane / 4;"), "{source}");
    assert!(source.contains("const int row = warp_col0 + ni * 8 + lane % 4 * 2 + v % 2;"), "{source}");
    assert!(source.contains("tessera_wgmma_register_a<float, 0>"), "{source}");
}

fn a_transposed_store_maps_each_value_at_its_place_in_c(backend: &Backend) {
    for (m, n, k) in [(128, 64, 32), (130, 72, 40), (65, 40, 328), (257, 131, 36)] {
        let (host_a, host_b) = (random_floats(m * k, m as u64), random_floats(k * n, n as u64 + 7));
        let host_bias = random_floats(n, 3);
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let bias = backend.upload(&host_bias, [n]).unwrap();
        let mut c = backend.upload(&vec![bf16::from_f32(f32::NAN); m * n], [m, n]).unwrap();
        gemm_tf32_transposed_bias::launch(backend, &a, &b, &bias, &mut c).unwrap();
        let got = backend.download(&c).unwrap();
        for row in 0..m {
            for col in 0..n {
                let sum: f64 = (0..k)
                    .map(|p| {
                        f64::from(tf32_truncated(host_a[row * k + p])) * f64::from(tf32_truncated(host_b[p * n + col]))
                    })
                    .sum();
                let want = sum + f64::from(host_bias[col]) + row as f64 / 64.0;
                let g = f64::from(got[row * n + col].to_f32());
                // bf16 keeps 8 bits: half an ulp of the value, plus f32 accumulation
                assert!(
                    (g - want).abs() <= want.abs() / 256.0 + 1e-4 * k as f64,
                    "C[{row}][{col}] at M={m} N={n} K={k}: {g}, want {want}"
                );
            }
        }
    }
}
