//! A pipelined k loop whose body holds several `mma`s and thread code between them (what a
//! fused kernel such as FlashAttention runs per K/V tile): in a 3-stage cp.async ring and a
//! 2-stage register double buffer, each tile is computed in source order — mma, thread code,
//! mma, thread code — once it has landed, while the next tiles' copies are in flight. Checked
//! against an f64 reference of the same recurrence at tail shapes on the CPU simulation and,
//! ignored without one, on a GPU; and through NVRTC (cp.async in the PTX).

mod common;

use common::{random_floats, POISON};
use tessera::half::bf16;
use tessera::prelude::*;
use tessera::{nvrtc, Arch, Backend};

// The two kernels differ only in `stages`: one macro_rules! stamps both, as the catalog does.
macro_rules! two_mmas {
    ($(#[$doc:meta])* $name:ident, stages = $stages:literal) => {
        $(#[$doc])*
        #[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 32, WM = 16, WN = 64, TI = 2, TJ = 16))]
        fn $name(
            a: Global<bf16, (M, K)>,
            b: Global<bf16, (K, N)>,
            c: Global<bf16, (K, N)>,
            x_out: GlobalMut<f32, (M, N)>,
            y_out: GlobalMut<f32, (M, N)>,
        ) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(64);
            let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128);
            let c_s = shared::<bf16>([BK, BN]).swizzle_bytes(128);
            let mut x = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            let mut y = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = $stages) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                copy(c.tile([k, bx], [BK, BN]), &c_s);
                mma(&a_s, &b_s, &mut x);
                for i in 0..TI {
                    for j in 0..TJ {
                        x[[i, j]] = x[[i, j]] * 0.5;
                    }
                }
                mma(&a_s, &c_s, &mut y);
                for i in 0..TI {
                    for j in 0..TJ {
                        y[[i, j]] += x[[i, j]];
                    }
                }
            }
            copy(&x, x_out.tile([by, bx], [BM, BN]));
            copy(&y, y_out.tile([by, bx], [BM, BN]));
        }
    };
}

two_mmas!(
    /// Per k-tile: X = (X + A_k·B_k) / 2, then Y += A_k·C_k + X. The first statement of thread
    /// code halves the mma.sync accumulators in place (`x[[i, j]]`: this thread's WM / 8 × WN / 4
    /// values), the second reads X after that tile's update, so the result depends on the order.
    two_mmas_ring, stages = 3
);
two_mmas!(
    /// The same recurrence through a 2-stage pipeline (the next tiles fetched into registers
    /// while this one is computed from the other half of double-buffered shared memory).
    two_mmas_double, stages = 2
);

/// An FFMA (thread-tile) fragment in a 4-stage ring, a local declared before the loop counting
/// the tiles, and a register array holding each tile's scale: C = Σ_k (k + 1) · A_k·B_k.
#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
fn weighted_tiles_ring(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut part = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    let mut acc = [0.0f32; 16];
    let mut tiles = 0.0f32;
    for k in pipeline(0..cdiv(K, BK), stages = 4) {
        copy(a.tile([by, k], [BM, BK]).t(), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut part);
        tiles += 1.0;
        for i in 0..TM {
            for j in 0..TN {
                acc[i * TN + j] += tiles * part[[i, j]];
                part[[i, j]] = 0.0;
            }
        }
    }
    for i in 0..TM {
        for j in 0..TN {
            part[[i, j]] = acc[i * TN + j];
        }
    }
    copy(&part, c.tile([by, bx], [BM, BN]));
}

on_both_backends!(
    mma_and_thread_code_run_in_source_order_per_tile_in_a_cp_async_ring,
    mma_and_thread_code_run_in_source_order_per_tile_in_a_double_buffered_pipeline,
    thread_code_sees_locals_declared_before_the_ring_and_weights_each_tile
);

/// Rows 17 and 65, columns 40, and k extents that leave a partial last k-tile (K = 1, 40, 161),
/// so the ring wraps, its edge tiles are zero-filled, and several k-tiles run per block.
const SHAPES: [(usize, usize, usize); 5] = [(17, 40, 161), (65, 17, 40), (17, 64, 1), (64, 64, 96), (33, 9, 75)];

/// (X, Y) of the recurrence in f64 from the bf16 inputs, k-tiles of `bk`.
fn reference(a: &[f32], b: &[f32], c: &[f32], (m, n, k): (usize, usize, usize), bk: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut x, mut y) = (vec![0.0f64; m * n], vec![0.0f64; m * n]);
    for k0 in (0..k).step_by(bk) {
        for row in 0..m {
            for col in 0..n {
                let (mut ab, mut ac) = (0.0f64, 0.0f64);
                for p in k0..(k0 + bk).min(k) {
                    ab += f64::from(a[row * k + p]) * f64::from(b[p * n + col]);
                    ac += f64::from(a[row * k + p]) * f64::from(c[p * n + col]);
                }
                let i = row * n + col;
                x[i] = (x[i] + ab) * 0.5;
                y[i] += ac + x[i];
            }
        }
    }
    (x, y)
}

type TwoMmas = fn(
    &Backend,
    &tessera::DeviceTensor<bf16>,
    &tessera::DeviceTensor<bf16>,
    &tessera::DeviceTensor<bf16>,
    &mut tessera::DeviceTensor<f32>,
    &mut tessera::DeviceTensor<f32>,
) -> Result<tessera::Launched, tessera::Error>;

fn check_two_mmas(backend: &Backend, launch: TwoMmas) {
    for (index, &(m, n, k)) in SHAPES.iter().enumerate() {
        let round = |v: Vec<f32>| -> (Vec<bf16>, Vec<f32>) {
            let h: Vec<bf16> = v.iter().map(|&f| bf16::from_f32(f)).collect();
            let exact = h.iter().map(|v| v.to_f32()).collect();
            (h, exact)
        };
        let (host_a, exact_a) = round(random_floats(m * k, 3 + index as u64));
        let (host_b, exact_b) = round(random_floats(k * n, 30 + index as u64));
        let (host_c, exact_c) = round(random_floats(k * n, 300 + index as u64));
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let c = backend.upload(&host_c, [k, n]).unwrap();
        let mut x = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        let mut y = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        launch(backend, &a, &b, &c, &mut x, &mut y).unwrap();
        let (want_x, want_y) = reference(&exact_a, &exact_b, &exact_c, (m, n, k), 32);
        for (name, got, want) in
            [("x", backend.download(&x).unwrap(), want_x), ("y", backend.download(&y).unwrap(), want_y)]
        {
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                // f32 accumulation of at most a few hundred products of values under 1
                let tolerance = 1e-5 * (k as f64 + 1.0) * (w.abs() + 1.0);
                assert!(
                    (f64::from(*g) - w).abs() <= tolerance,
                    "{m}×{n}×{k}: {name}[{}, {}] = {g}, want {w}",
                    i / n,
                    i % n
                );
            }
        }
    }
}

fn mma_and_thread_code_run_in_source_order_per_tile_in_a_cp_async_ring(backend: &Backend) {
    check_two_mmas(backend, two_mmas_ring::launch);
}

fn mma_and_thread_code_run_in_source_order_per_tile_in_a_double_buffered_pipeline(backend: &Backend) {
    check_two_mmas(backend, two_mmas_double::launch);
}

fn thread_code_sees_locals_declared_before_the_ring_and_weights_each_tile(backend: &Backend) {
    for (m, n, k) in [(32, 32, 8), (33, 47, 13), (70, 65, 41)] {
        let (host_a, host_b) = (random_floats(m * k, m as u64), random_floats(k * n, n as u64));
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let mut c = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        weighted_tiles_ring::launch(backend, &a, &b, &mut c).unwrap();
        let got = backend.download(&c).unwrap();
        for row in 0..m {
            for col in 0..n {
                let (mut want, mut magnitude) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let term = (p / 8 + 1) as f64 * f64::from(host_a[row * k + p]) * f64::from(host_b[p * n + col]);
                    want += term;
                    magnitude += term.abs();
                }
                let g = f64::from(got[row * n + col]);
                assert!(
                    (g - want).abs() <= 4.0 * f64::from(f32::EPSILON) * magnitude * k as f64 + 1e-30,
                    "{m}×{n}×{k}: c[{row}, {col}] = {g}, want {want}"
                );
            }
        }
    }
}

#[test]
fn the_ring_waits_for_a_tile_then_runs_mma_thread_code_mma_thread_code_in_order() {
    let source = two_mmas_ring::KERNEL.cuda_source();
    let wait = source.find("tessera_async_wait<AHEAD - 1>();").expect("the ring's wait");
    let refill = source[wait..].find("refill that stage").map(|p| p + wait).expect("the refill");
    let first_mma = source[wait..].find("mma(&a_s, &b_s, &mut x)").map(|p| p + wait).expect("x's mma");
    let halve = source.find("x[i / 2][j / 2][i % 2 * 2 + j % 2] = x[i / 2][j / 2][i % 2 * 2 + j % 2] * 0.5f;");
    let halve = halve.expect("the halving, indexing the mma.sync accumulators");
    let second_mma = source.find("mma(&a_s, &c_s, &mut y)").expect("y's mma");
    let add =
        source.find("y[i / 2][j / 2][i % 2 * 2 + j % 2] += x[i / 2][j / 2][i % 2 * 2 + j % 2];").expect("the add");
    assert!(refill < first_mma && first_mma < halve && halve < second_mma && second_mma < add, "{source}");
    // the ring's own barriers only: the one after the wait, and the one after the loop
    assert_eq!(source.matches("__syncthreads();").count(), 2, "{source}");
}

#[test]
fn a_ring_of_two_mmas_and_thread_code_compiles_to_cp_async_and_mma_sync() {
    for (name, source) in [
        ("two_mmas_ring", two_mmas_ring::KERNEL.cuda_source()),
        ("weighted_tiles_ring", weighted_tiles_ring::KERNEL.cuda_source()),
    ] {
        let ptx = nvrtc::compile_ptx(source, name, Arch::SM_80).unwrap_or_else(|e| panic!("{name}: {e}\n{source}"));
        assert!(ptx.contains("cp.async"), "{name}: no cp.async in the PTX");
        assert!(ptx.contains("cp.async.wait_group"), "{name}: no wait for the stages in the PTX");
        if name == "two_mmas_ring" {
            assert!(ptx.contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), "{name}: no mma.sync");
            assert!(ptx.contains("ldmatrix"), "{name}: no ldmatrix");
        }
    }
}
