//! `mma(..).deferred()` keeps the order the kernel is written in: the product is issued in the
//! next k-tile, behind its first `mma`, yet thread code that touches its accumulator sees every
//! earlier tile's product added and none of the later ones. Each kernel doubles the deferred
//! accumulator every k-tile before adding the tile's product, so `twice` must come out as
//! Σ_k 2^(tiles − 1 − k)·A_k·B_k — a wait placed after the doubling, or a product issued a
//! tile late, changes it. On the CPU simulation (whose wgmma runs at the wait under two of its
//! orders) and, ignored without one, on a GPU; by TMA and by cp.async producers.

mod common;

use tessera::prelude::*;
use tessera::Backend;

on_both_backends!(a_deferred_product_lands_before_its_accumulator_is_next_touched);

macro_rules! doubling_gemm {
    ($name:ident, $($copies:tt)*) => {
        /// acc = A·B; twice doubled before each k-tile's product is added (deferred).
        #[tile_kernel(threads = 128, vector = 8, target = sm_90a, consts(BM = 64, BN = 128, BK = 64, WN = 128))]
        fn $name(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>, d: GlobalMut<f32, (M, N)>) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            let mut twice = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 3, producers = 128 $($copies)*) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
                for i in 0..2 {
                    for col in 0..WN / 4 {
                        twice[[i, col]] = twice[[i, col]] * 2.0;
                    }
                }
                mma(&a_s, &b_s, &mut twice).deferred();
            }
            copy(&acc, c.tile([by, bx], [BM, BN]));
            copy(&twice, d.tile([by, bx], [BM, BN]));
        }
    };
}

doubling_gemm!(doubling_by_tma, , copies = tma);
doubling_gemm!(doubling_by_cp_async,);

/// Σ_k 2^(tiles − 1 − k)·A_k·B_k over the k-tiles of 64 (the last one partial).
fn doubled_reference(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let tiles = k.div_ceil(64);
    let mut out = vec![0.0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut sum = 0.0f64;
            for tile in 0..tiles {
                let part: f64 = (tile * 64..(tile * 64 + 64).min(k))
                    .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                    .sum();
                sum = 2.0 * sum + part;
            }
            out[i * n + j] = sum;
        }
    }
    out
}

fn a_deferred_product_lands_before_its_accumulator_is_next_touched(backend: &Backend) {
    assert!(doubling_by_tma::CUDA_SOURCE
        .contains("tessera_wgmma_wait<1>();  // this product is done; the deferred one runs on"));
    // one k-tile, several, and a partial last one; tails in M and N; K a multiple of 8 for TMA
    for (m, n, k) in [(64, 128, 64), (130, 250, 200), (64, 128, 256)] {
        let host_a: Vec<f32> = (0..m * k).map(|i| ((i * 5 + 1) % 7) as f32 - 3.0).collect();
        let host_b: Vec<f32> = (0..k * n).map(|i| ((i * 3 + 2) % 5) as f32 - 2.0).collect();
        let plain = common::gemm_reference(&host_a, &host_b, &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
        let doubled = doubled_reference(&host_a, &host_b, (m, n, k));
        let to_bf16 = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
        let a = backend.upload(&to_bf16(&host_a), [m, k]).unwrap();
        let b = backend.upload(&to_bf16(&host_b), [k, n]).unwrap();
        for by_tma in [true, false] {
            let mut c = backend.filled([m, n], f32::NAN).unwrap();
            let mut d = backend.filled([m, n], f32::NAN).unwrap();
            if by_tma {
                doubling_by_tma::launch(backend, &a, &b, &mut c, &mut d).unwrap();
            } else {
                doubling_by_cp_async::launch(backend, &a, &b, &mut c, &mut d).unwrap();
            }
            // small integers times powers of two: every sum is exact in f32
            let (c, d) = (backend.download(&c).unwrap(), backend.download(&d).unwrap());
            for i in 0..m * n {
                let at = format!("{m} × {n} × {k} (TMA: {by_tma}) at [{}, {}]", i / n, i % n);
                assert_eq!(f64::from(c[i]), plain[i], "acc {at}");
                assert_eq!(f64::from(d[i]), doubled[i], "twice {at}");
            }
        }
    }
}
