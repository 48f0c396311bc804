//! Element-wise math and row reductions on tensor-core fragments in thread code: S = A·B on
//! `mma.sync` (bf16, f32 accumulators), then a causal row softmax of S in the registers —
//! `s.row(i)` / `s.col(j)` to mask, `s.row_max(i)`, `exp2`, `s.row_sum(i)` — as FlashAttention
//! does between its two products. Checked against an f64 softmax of the same bf16-rounded
//! inputs on the CPU simulation and, ignored without one, on a GPU.

mod common;

use common::{random_floats, POISON};
use tessera::half::bf16;
use tessera::prelude::*;
use tessera::{nvrtc, Arch, Backend};

/// Y = the causal row softmax (column c of row r kept where c ≤ r and c < N) of S = A·B, per
/// 64-column tile, each warp holding 16 full rows of it.
#[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 32, WM = 16, WN = 64))]
fn causal_softmax_of_product(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, y: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]);
    let b_s = shared::<bf16>([BK, BN]);
    let mut s = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut s);
    }
    for i in 0..WM / 8 {
        for j in 0..WN / 4 {
            let col = bx * BN + s.col(j);
            if col >= N || col > by * BM + s.row(i) {
                s[[i, j]] = -f32::INFINITY;
            }
        }
        let peak = s.row_max(i);
        for j in 0..WN / 4 {
            s[[i, j]] = exp2((s[[i, j]] - peak) * 1.4426950408889634);
        }
        let total = s.row_sum(i);
        for j in 0..WN / 4 {
            s[[i, j]] = s[[i, j]] / total;
        }
    }
    copy(&s, y.tile([by, bx], [BM, BN]));
}

/// The same softmax written inside a single-stage pipeline's body, on its last k-tile, with a
/// local declared before the loop.
#[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 32, WM = 16, WN = 64))]
fn causal_softmax_in_the_pipeline(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, y: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]);
    let b_s = shared::<bf16>([BK, BN]);
    let mut s = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    let log2e = 1.4426950408889634f32;
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut s);
        if k == (K + BK - 1) / BK - 1 {
            for i in 0..WM / 8 {
                for j in 0..WN / 4 {
                    let col = bx * BN + s.col(j);
                    if col >= N || col > by * BM + s.row(i) {
                        s[[i, j]] = -f32::INFINITY;
                    }
                }
                let peak = s.row_max(i);
                for j in 0..WN / 4 {
                    s[[i, j]] = exp2((s[[i, j]] - peak) * log2e);
                }
                let total = s.row_sum(i);
                for j in 0..WN / 4 {
                    s[[i, j]] = s[[i, j]] / total;
                }
            }
        }
    }
    copy(&s, y.tile([by, bx], [BM, BN]));
}

/// S = A·B stored by thread code, each lane writing its own values where `s.row(i)` and
/// `s.col(j)` say they lie: checks those positions against the product directly.
#[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 32, WM = 16, WN = 64))]
fn product_stored_by_slots(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, y: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]);
    let b_s = shared::<bf16>([BK, BN]);
    let mut s = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut s);
    }
    for i in 0..WM / 8 {
        for j in 0..WN / 4 {
            let r = by * BM + s.row(i);
            let c = bx * BN + s.col(j);
            if r < M && c < N {
                y[[r, c]] = s[[i, j]];
            }
        }
    }
}

/// [`product_stored_by_slots`] on wgmma with a warpgroup of two m64 tiles
/// (`.warpgroup_tile([128, BN])`): a lane's slots 0 and 1 lie in the first tile's rows, 2 and 3
/// in the second's, 64 rows below.
#[tile_kernel(threads = 128, vector = 8, target = sm_90a, consts(BM = 128, BN = 64, BK = 64))]
fn product_of_two_m64_tiles_stored_by_slots(
    a: Global<bf16, (M, K)>,
    b: Global<bf16, (K, N)>,
    y: GlobalMut<f32, (M, N)>,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut s = fragment::<f32>([BM, BN]).warpgroup_tile([128, BN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut s);
    }
    for i in 0..4 {
        for j in 0..BN / 4 {
            let r = by * BM + s.row(i);
            let c = bx * BN + s.col(j);
            if r < M && c < N {
                y[[r, c]] = s[[i, j]];
            }
        }
    }
}

on_both_backends!(
    the_softmax_after_the_loop_matches_an_f64_softmax_of_the_product,
    the_softmax_inside_the_pipeline_matches_an_f64_softmax_of_the_product,
    each_lane_stores_its_slots_where_row_and_col_say,
    each_lane_of_a_two_m64_tile_warpgroup_stores_its_slots_where_row_and_col_say,
);

fn each_lane_of_a_two_m64_tile_warpgroup_stores_its_slots_where_row_and_col_say(backend: &Backend) {
    check_slots(backend, |a, b, y| product_of_two_m64_tiles_stored_by_slots::launch(backend, a, b, y).map(|_| ()));
}

fn each_lane_stores_its_slots_where_row_and_col_say(backend: &Backend) {
    check_slots(backend, |a, b, y| product_stored_by_slots::launch(backend, a, b, y).map(|_| ()));
}

/// Runs `store` (y = A·B, each lane writing its slots) on whole tiles and on tails, and checks
/// every element of y against the product: a slot stored in the wrong place leaves the poison.
fn check_slots(
    backend: &Backend,
    store: impl Fn(
        &tessera::DeviceTensor<bf16>,
        &tessera::DeviceTensor<bf16>,
        &mut tessera::DeviceTensor<f32>,
    ) -> Result<(), tessera::Error>,
) {
    for (m, n, k) in [(64, 64, 32), (70, 100, 48), (256, 64, 64), (200, 70, 72)] {
        let to_bf16 = |v: Vec<f32>| v.into_iter().map(bf16::from_f32).collect::<Vec<_>>();
        let (host_a, host_b) = (to_bf16(random_floats(m * k, 3)), to_bf16(random_floats(k * n, 4)));
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let mut y = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        store(&a, &b, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for row in 0..m {
            for col in 0..n {
                let (mut want, mut magnitude) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let term = f64::from(host_a[row * k + p].to_f32()) * f64::from(host_b[p * n + col].to_f32());
                    want += term;
                    magnitude += term.abs();
                }
                let g = f64::from(got[row * n + col]);
                assert!(
                    (g - want).abs() <= 1e-6 * magnitude + 1e-30,
                    "{m}×{n}×{k}: y[{row}, {col}] = {g}, want {want}"
                );
            }
        }
    }
}

/// The analyzer follows `s.row(i)` and `s.col(j)` lane by lane: each store of one slot writes
/// 8 rows × 4 columns two apart, one 32-byte sector per row: 8 sectors for 128 bytes, twice
/// the ideal 4 (the copy epilogue stores the column pairs together instead).
#[test]
fn the_analysis_places_slot_stores_by_the_lanes_rows_and_columns() {
    let report = tessera::dsl::analyze(product_stored_by_slots::KERNEL.ir().unwrap()).unwrap();
    let store = report.accesses.iter().find(|a| a.operand == "y").unwrap_or_else(|| panic!("{report}"));
    assert_eq!(store.sectors, Some((8.0, 4.0)), "{report}");
    assert_eq!(store.instructions, 2 * 16, "{report}");
}

#[test]
fn fragment_slots_render_as_the_lanes_own_accumulators() {
    let source = causal_softmax_of_product::KERNEL.cuda_source();
    for line in [
        "s[i / 2][j / 2][i % 2 * 2 + j % 2] = -__int_as_float(0x7f800000);",
        "const int col = bx * BN + (warp_col0 + j / 2 * 8 + tid % 32 % 4 * 2 + j % 2);",
        "by * BM + (warp_row0 + i / 2 * 16 + i % 2 * 8 + tid % 32 / 4)",
        "const float peak = tessera_row_max(s, i);",
        "exp2f((s[i / 2][j / 2][i % 2 * 2 + j % 2] - peak) * 1.4426950408889634f)",
        "const float total = tessera_row_sum(s, i);",
        "__device__ __forceinline__ float tessera_row_sum(const float (&acc)[M_TILES][N_TILES][4], int i)",
    ] {
        assert!(source.contains(line), "missing `{line}` in\n{source}");
    }
    // the slot loops have constant bounds, so they unroll and the fragment stays in registers
    let lines: Vec<&str> = source.lines().map(str::trim).collect();
    for slot_loop in ["for (int i = 0; i < WM / 8; ++i) {", "for (int j = 0; j < WN / 4; ++j) {"] {
        let at = lines.iter().position(|l| *l == slot_loop).unwrap_or_else(|| panic!("no `{slot_loop}`"));
        assert_eq!(lines[at - 1], "#pragma unroll", "{source}");
    }
}

fn the_softmax_after_the_loop_matches_an_f64_softmax_of_the_product(backend: &Backend) {
    run(backend, |a, b, y| {
        causal_softmax_of_product::launch(backend, a, b, y).unwrap();
    });
}

fn the_softmax_inside_the_pipeline_matches_an_f64_softmax_of_the_product(backend: &Backend) {
    run(backend, |a, b, y| {
        causal_softmax_in_the_pipeline::launch(backend, a, b, y).unwrap();
    });
}

/// Launches at tail shapes (rows past M, columns past N, k past K) with bf16 inputs, and
/// compares with the f64 reference: per row and 64-column tile, the softmax over the kept
/// columns (c ≤ r, c < N) of the products of the same bf16 values.
fn run(backend: &Backend, launch: impl Fn(&DeviceTensor<bf16>, &DeviceTensor<bf16>, &mut DeviceTensor<f32>)) {
    for (m, n, k) in [(64, 64, 32), (100, 50, 40), (33, 64, 96), (130, 17, 16)] {
        let to_bf16 = |v: Vec<f32>| v.into_iter().map(bf16::from_f32).collect::<Vec<_>>();
        let (host_a, host_b) =
            (to_bf16(random_floats(m * k, 31 + m as u64)), to_bf16(random_floats(k * n, 37 + n as u64)));
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let mut y = backend.filled([m, n], f32::from_bits(POISON)).unwrap();
        launch(&a, &b, &mut y);
        let got = backend.download(&y).unwrap();
        for row in 0..m {
            for tile in (0..n).step_by(64) {
                let kept: Vec<usize> = (tile..n.min(tile + 64)).filter(|&c| c <= row).collect();
                let product = |col: usize| -> f64 {
                    (0..k)
                        .map(|p| f64::from(host_a[row * k + p].to_f32()) * f64::from(host_b[p * n + col].to_f32()))
                        .sum()
                };
                let scores: Vec<f64> = kept.iter().map(|&c| product(c)).collect();
                let peak = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let total: f64 = scores.iter().map(|s| (s - peak).exp()).sum();
                for col in tile..n.min(tile + 64) {
                    let want = match kept.iter().position(|&c| c == col) {
                        Some(at) => (scores[at] - peak).exp() / total,
                        None => 0.0,
                    };
                    let g = f64::from(got[row * n + col]);
                    // f32 accumulation of ≤ 96 products of values below 1, exp2f and a sum of ≤ 64
                    assert!(
                        (g - want).abs() <= 2e-5 * want.max(1e-3) + 1e-6,
                        "{m}×{n}×{k}: y[{row}, {col}] = {g}, want {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_softmax_kernels_compile_with_nvrtc_and_keep_the_fragment_in_registers() {
    for kernel in [&causal_softmax_of_product::KERNEL, &causal_softmax_in_the_pipeline::KERNEL] {
        let compiled = nvrtc::compile_cubin(kernel.cuda_source(), kernel.name(), Arch::SM_80)
            .unwrap_or_else(|e| panic!("{}: {e}", kernel.name()));
        assert!(!compiled.ptxas.spills(), "{} spills: {}", kernel.name(), compiled.ptxas);
        assert_eq!(compiled.ptxas.stack_frame_bytes, 0, "{} uses local memory: {}", kernel.name(), compiled.log);
    }
}
