//! `mma(..).overwrite()` replaces the accumulator's values with the product (acc = A·B) on
//! every instruction tessera multiplies with: FFMA thread tiles, mma.sync warp tiles and wgmma
//! warpgroup tiles (its scale-d operand). Each kernel fills `last` with 7 before the k loop and
//! overwrites it with each k-tile's product, beside `acc` that accumulates as usual, so `last`
//! must come out as the last k-tile's product alone: a 7 or an earlier tile left in it fails.
//! wgmma both with A from shared memory and with A from registers (attention's P·V form). On
//! the CPU simulation and, ignored without one, on a GPU (wgmma on Hopper).

mod common;

use tessera::prelude::*;
use tessera::Backend;

on_both_backends!(an_overwriting_product_keeps_only_the_last_k_tile);

/// FFMA outer products on 4 × 4 thread tiles, a 3-stage cp.async ring.
#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
fn overwrite_ffma(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    c: GlobalMut<f32, (M, N)>,
    d: GlobalMut<f32, (M, N)>,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    let mut last = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for i in 0..TM {
        for j in 0..TN {
            last[[i, j]] = 7.0;
        }
    }
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
        mma(&a_s.t(), &b_s, &mut last).overwrite();
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
    copy(&last, d.tile([by, bx], [BM, BN]));
}

/// mma.sync on 32 × 32 warp tiles of bf16, a 3-stage cp.async ring.
#[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 32, WM = 32, WN = 32))]
fn overwrite_mma_sync(
    a: Global<bf16, (M, K)>,
    b: Global<bf16, (K, N)>,
    c: GlobalMut<f32, (M, N)>,
    d: GlobalMut<f32, (M, N)>,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]);
    let b_s = shared::<bf16>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    let mut last = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for i in 0..WM / 8 {
        for j in 0..WN / 4 {
            last[[i, j]] = 7.0;
        }
    }
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
        mma(&a_s, &b_s, &mut last).overwrite();
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
    copy(&last, d.tile([by, bx], [BM, BN]));
}

/// wgmma on a 64 × 128 warpgroup tile of bf16, fed by TMA producers.
#[tile_kernel(threads = 128, vector = 8, target = sm_90a, consts(BM = 64, BN = 128, BK = 64, WN = 128))]
fn overwrite_wgmma(
    a: Global<bf16, (M, K)>,
    b: Global<bf16, (K, N)>,
    c: GlobalMut<f32, (M, N)>,
    d: GlobalMut<f32, (M, N)>,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    let mut last = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for i in 0..2 {
        for j in 0..WN / 4 {
            last[[i, j]] = 7.0;
        }
    }
    for k in pipeline(0..cdiv(K, BK), stages = 3, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
        mma(&a_s, &b_s, &mut last).overwrite();
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
    copy(&last, d.tile([by, bx], [BM, BN]));
}

/// wgmma whose A comes from registers (as attention's P does): a fragment computed in thread
/// code, the element at (row, col) of A being `a_value(row, col)`, zero past M and K.
#[tile_kernel(threads = 128, vector = 8, target = sm_90a, consts(BM = 64, BN = 128, BK = 64, WN = 128))]
fn overwrite_wgmma_register_a(b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>, d: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut p = fragment::<f32>([BM, BK]).warpgroup_tile([64, BK]);
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    let mut last = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for i in 0..2 {
        for j in 0..WN / 4 {
            last[[i, j]] = 7.0;
        }
    }
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        for i in 0..2 {
            for j in 0..BK / 4 {
                let row = by * BM + p.row(i);
                let col = k * BK + p.col(j);
                p[[i, j]] = 0.0;
                if row < M && col < K {
                    p[[i, j]] = ((row * 5 + col) % 7 - 3) as f32;
                }
            }
        }
        mma(&p, &b_s, &mut acc);
        mma(&p, &b_s, &mut last).overwrite();
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
    copy(&last, d.tile([by, bx], [BM, BN]));
}

/// A·B over k in `from .. k` alone.
fn partial_product(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize), from: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (from..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum();
        }
    }
    out
}

#[derive(Clone, Copy, Debug)]
enum Instruction {
    Ffma,
    MmaSync,
    Wgmma,
    WgmmaRegisterA,
}

fn an_overwriting_product_keeps_only_the_last_k_tile(backend: &Backend) {
    assert!(overwrite_wgmma::CUDA_SOURCE
        .contains("tessera_wgmma_overwrite<__nv_bfloat16, 0, 1>(last[0], a_descriptor, b_descriptor);"));
    assert!(overwrite_mma_sync::CUDA_SOURCE.contains("// `.overwrite()`: the product replaces what `last` held"));
    assert!(overwrite_wgmma_register_a::CUDA_SOURCE.contains("tessera_wgmma_register_a_overwrite<"));
    // (wgmma needs a Hopper GPU: on another the launch refuses it, and the test fails)
    let instructions = [Instruction::Ffma, Instruction::MmaSync, Instruction::Wgmma, Instruction::WgmmaRegisterA];
    // one k-tile, several with a partial last one, tails in M and N (K a multiple of 8 for TMA)
    for (m, n, k) in [(64, 128, 64), (130, 250, 200)] {
        let host_a: Vec<f32> = (0..m * k).map(|i| ((i * 5 + 1) % 7) as f32 - 3.0).collect();
        // the register-A kernel computes its A from (row, col)
        let register_a: Vec<f32> = (0..m * k).map(|i| ((i / k * 5 + i % k) % 7) as f32 - 3.0).collect();
        let host_b: Vec<f32> = (0..k * n).map(|i| ((i * 3 + 2) % 5) as f32 - 2.0).collect();
        let to_bf16 = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
        let (a16, b16) =
            (backend.upload(&to_bf16(&host_a), [m, k]).unwrap(), backend.upload(&to_bf16(&host_b), [k, n]).unwrap());
        let (a32, b32) = (backend.upload(&host_a, [m, k]).unwrap(), backend.upload(&host_b, [k, n]).unwrap());
        for &instruction in &instructions {
            let bk = match instruction {
                Instruction::Ffma => 8,
                Instruction::MmaSync => 32,
                Instruction::Wgmma | Instruction::WgmmaRegisterA => 64,
            };
            let a = match instruction {
                Instruction::WgmmaRegisterA => &register_a,
                _ => &host_a,
            };
            let whole = partial_product(a, &host_b, (m, n, k), 0);
            let last_tile = partial_product(a, &host_b, (m, n, k), (k - 1) / bk * bk);
            let mut c = backend.filled([m, n], f32::NAN).unwrap();
            let mut d = backend.filled([m, n], f32::NAN).unwrap();
            match instruction {
                Instruction::Ffma => overwrite_ffma::launch(backend, &a32, &b32, &mut c, &mut d),
                Instruction::MmaSync => overwrite_mma_sync::launch(backend, &a16, &b16, &mut c, &mut d),
                Instruction::Wgmma => overwrite_wgmma::launch(backend, &a16, &b16, &mut c, &mut d),
                Instruction::WgmmaRegisterA => overwrite_wgmma_register_a::launch(backend, &b16, &mut c, &mut d),
            }
            .unwrap();
            // small integers: every sum is exact in f32
            let (c, d) = (backend.download(&c).unwrap(), backend.download(&d).unwrap());
            for i in 0..m * n {
                let at = format!("{instruction:?} at {m} × {n} × {k}, [{}, {}]", i / n, i % n);
                assert_eq!(f64::from(c[i]), whole[i], "acc {at}");
                assert_eq!(f64::from(d[i]), last_tile[i], "last {at}");
            }
        }
    }
}
