//! Thread code indexing a register fragment: a GEMM whose epilogue applies ReLU to each
//! thread's accumulators before the store, checked against an f64 reference at tail shapes
//! on the CPU simulation and, ignored without one, on a GPU.

mod common;

use common::{random_floats, POISON};
use tessera::prelude::*;
use tessera::Backend;

/// C = ReLU(A·B): the accumulators are the thread's `acc[[i, j]]`, i < TM, j < TN.
#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
fn gemm_relu(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    for i in 0..TM {
        for j in 0..TN {
            acc[[i, j]] = max(acc[[i, j]], 0.0);
        }
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

on_both_backends!(a_relu_epilogue_on_the_fragment_matches_relu_of_the_product);

#[test]
fn the_epilogue_renders_as_plain_indexing_of_the_register_tile() {
    let source = gemm_relu::KERNEL.cuda_source();
    assert!(source.contains("acc[i][j] = fmaxf(acc[i][j], 0.0f);"), "{source}");
}

fn a_relu_epilogue_on_the_fragment_matches_relu_of_the_product(backend: &Backend) {
    for (m, n, k) in [(32, 32, 8), (33, 47, 13), (70, 65, 40)] {
        let (host_a, host_b) = (random_floats(m * k, m as u64), random_floats(k * n, n as u64));
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let mut c = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        gemm_relu::launch(backend, &a, &b, &mut c).unwrap();
        let got = backend.download(&c).unwrap();
        let mut negatives = 0;
        for row in 0..m {
            for col in 0..n {
                let (mut sum, mut magnitude) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let term = f64::from(host_a[row * k + p]) * f64::from(host_b[p * n + col]);
                    sum += term;
                    magnitude += term.abs();
                }
                negatives += usize::from(sum < 0.0);
                let want = sum.max(0.0);
                let g = f64::from(got[row * n + col]);
                assert!(
                    (g - want).abs() <= 4.0 * f64::from(f32::EPSILON) * magnitude * k as f64 + 1e-30,
                    "{m}×{n}×{k}: c[{row}, {col}] = {g}, want {want}"
                );
            }
        }
        // The inputs are signed, so ReLU has something to clip.
        assert!(negatives > 0, "{m}×{n}×{k}: no negative sums");
    }
}
