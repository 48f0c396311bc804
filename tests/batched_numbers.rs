//! Batched tensors (rank 3 and 4, as attention's batch × heads): `.at([b, h])` selects one
//! matrix, whose tile is then an ordinary 2-D tile. Each kernel runs at tail shapes (rows 17
//! and 65, columns 24 and 64, B = 2, H = 3) on the CPU simulation and, ignored without one, on
//! a GPU: `cargo test --release --test batched_numbers -- --include-ignored`.

use tessera::dsl::VectorWidth;
use tessera::prelude::*;
use tessera::Backend;

mod common;

use common::{random_floats, POISON};

/// Each (b, h) matrix transposed through a padded shared tile; batch × heads on grid z.
#[tile_kernel(threads = (32, 8), consts(T = 32))]
pub fn batched_transpose(x: Global<f32, (B, H, R, C)>, y: GlobalMut<f32, (B, H, C, R)>) {
    let (bx, by, bz) = grid(cdiv(C, T), cdiv(R, T), B * H);
    let t = shared::<f32>([T, T]).pad(1);
    copy(x.at([bz / H, bz % H]).tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.at([bz / H, bz % H]).tile([bx, by], [T, T]));
}

/// A rank-3 copy through shared memory with 128-bit vectors: whole tiles unchecked, edge
/// tiles element by element.
#[tile_kernel(threads = 64, vector = 4, consts(TR = 8, TC = 32))]
pub fn batched_copy(x: Global<f32, (B, R, C)>, y: GlobalMut<f32, (B, R, C)>) {
    let (bx, by, b) = grid(cdiv(C, TC), cdiv(R, TR), B);
    let s = shared::<f32>([TR, TC]);
    copy(x.at([b]).tile([by, bx], [TR, TC]), &s);
    copy(&s, y.at([b]).tile([by, bx], [TR, TC]));
}

/// Index aliases: `let` of an index expression, named by the tile indices after it (the copy
/// sees the expression, as attention's backward walks its query tiles from `first`). Matrix b
/// of y is matrix B − 1 − b of x, copied row block by row block from the bottom.
#[tile_kernel(threads = 64, vector = 4, consts(TR = 8, TC = 32))]
pub fn batched_reverse(x: Global<f32, (B, R, C)>, y: GlobalMut<f32, (B, R, C)>) {
    let (bx, by, b) = grid(cdiv(C, TC), cdiv(R, TR), B);
    let s = shared::<f32>([TR, TC]);
    let source = B - 1 - b;
    let row_block = cdiv(R, TR) - 1 - by;
    copy(x.at([source]).tile([row_block, bx], [TR, TC]), &s);
    copy(&s, y.at([b]).tile([row_block, bx], [TR, TC]));
}

/// Attention's scores S = Q·Kᵀ per (batch, head) with grouped-query heads: H query heads
/// share HKV key heads, head h reading key head h / (H / HKV). K is stored transposed
/// (`kt`: D × SK per head); a 3-stage cp.async pipeline of FFMA thread tiles.
#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
pub fn gqa_scores(q: Global<f32, (B, H, SQ, D)>, kt: Global<f32, (B, HKV, D, SK)>, s: GlobalMut<f32, (B, H, SQ, SK)>) {
    let (bx, by, bz) = grid(cdiv(SK, BN), cdiv(SQ, BM), B * H);
    let q_s = shared::<f32>([BK, BM]).pad(4);
    let k_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(D, BK), stages = 3) {
        copy(q.at([bz / H, bz % H]).tile([by, k], [BM, BK]), &q_s.t());
        copy(kt.at([bz / H, bz % H / (H / HKV)]).tile([k, bx], [BK, BN]), &k_s);
        mma(&q_s.t(), &k_s, &mut acc);
    }
    copy(&acc, s.at([bz / H, bz % H]).tile([by, bx], [BM, BN]));
}

/// A batch of bf16 GEMMs on tensor cores, fragments straight from global memory, B read as
/// the transpose of a row-major N × K matrix (`.t()` on a batched tile).
#[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 16, WM = 32, WN = 32))]
pub fn batched_hgemm(a: Global<bf16, (B, M, K)>, bt: Global<bf16, (B, N, K)>, c: GlobalMut<f32, (B, M, N)>) {
    let (bx, by, b) = grid(cdiv(N, BN), cdiv(M, BM), B);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        mma(a.at([b]).tile([by, k], [BM, BK]), bt.at([b]).tile([bx, k], [BN, BK]).t(), &mut acc);
    }
    copy(&acc, c.at([b]).tile([by, bx], [BM, BN]));
}

/// Thread code on rank-4 and rank-3 tensors: each thread sums one row of its (b, h) matrix
/// into `sums[[b, h, i]]`, as attention stores its log-sum-exp per query row.
#[tile_kernel(threads = 64, vector = 1, consts(TILE = 64))]
pub fn row_sums(x: Global<f32, (B, H, S, D)>, sums: GlobalMut<f32, (B, H, S)>) {
    let (bx, h, b) = grid(cdiv(S, TILE), H, B);
    let i = bx * TILE + thread_index();
    if i < S {
        let mut total = 0.0;
        for d in 0..D {
            total += x[[b, h, i, d]];
        }
        sums[[b, h, i]] = total;
    }
}

on_both_backends!(
    each_matrix_of_a_batch_is_transposed_at_tail_shapes,
    a_rank_3_copy_moves_every_matrix_exactly,
    index_aliases_name_their_expressions_in_batch_and_tile_indices,
    grouped_query_heads_read_their_shared_key_head,
    batched_tensor_core_gemm_reads_each_matrix_from_global,
    thread_code_indexes_rank_3_and_4_tensors,
);

const BATCH: usize = 2;
const HEADS: usize = 3;

/// (rows, cols) of each matrix: tails and whole tiles.
const SHAPES: [(usize, usize); 4] = [(17, 24), (65, 64), (17, 64), (65, 24)];

fn assert_bits(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        let unwritten = got[i].to_bits() == POISON;
        panic!(
            "{what}: element {i} is {} (want {}){}",
            got[i],
            want[i],
            if unwritten { ", never written" } else { "" }
        );
    }
}

fn each_matrix_of_a_batch_is_transposed_at_tail_shapes(backend: &Backend) {
    for (rows, cols) in SHAPES {
        let matrix = rows * cols;
        let host = random_floats(BATCH * HEADS * matrix, (rows * 131 + cols) as u64);
        let x = backend.upload(&host, [BATCH, HEADS, rows, cols]).unwrap();
        let mut y = backend.filled([BATCH, HEADS, cols, rows], f32::from_bits(POISON)).unwrap();
        batched_transpose::launch(backend, &x, &mut y).unwrap();
        let mut want = vec![0.0f32; host.len()];
        for m in 0..BATCH * HEADS {
            for r in 0..rows {
                for c in 0..cols {
                    want[m * matrix + c * rows + r] = host[m * matrix + r * cols + c];
                }
            }
        }
        assert_bits(&format!("batched_transpose of {rows} × {cols}"), &backend.download(&y).unwrap(), &want);
    }
}

fn a_rank_3_copy_moves_every_matrix_exactly(backend: &Backend) {
    for (rows, cols) in SHAPES {
        let host = random_floats(BATCH * rows * cols, (rows * 7 + cols) as u64);
        let x = backend.upload(&host, [BATCH, rows, cols]).unwrap();
        let mut y = backend.filled([BATCH, rows, cols], f32::from_bits(POISON)).unwrap();
        let launched = batched_copy::launch(backend, &x, &mut y).unwrap();
        assert_eq!(launched.grid, [cols.div_ceil(32) as u32, rows.div_ceil(8) as u32, BATCH as u32]);
        assert_eq!(launched.vector, VectorWidth::W4, "rows of 24 and 64 floats keep 128-bit vectors");
        assert_bits(&format!("batched_copy of {BATCH} × {rows} × {cols}"), &backend.download(&y).unwrap(), &host);
    }
}

fn index_aliases_name_their_expressions_in_batch_and_tile_indices(backend: &Backend) {
    assert!(batched_reverse::CUDA_SOURCE.contains("const int source = B - 1 - b;"), "thread code keeps the local");
    for (rows, cols) in SHAPES {
        let matrix = rows * cols;
        let host = random_floats(BATCH * matrix, (rows * 5 + cols) as u64);
        let x = backend.upload(&host, [BATCH, rows, cols]).unwrap();
        let mut y = backend.filled([BATCH, rows, cols], f32::from_bits(POISON)).unwrap();
        batched_reverse::launch(backend, &x, &mut y).unwrap();
        let want: Vec<f32> = (0..BATCH).rev().flat_map(|b| host[b * matrix..(b + 1) * matrix].to_vec()).collect();
        assert_bits(&format!("batched_reverse of {BATCH} × {rows} × {cols}"), &backend.download(&y).unwrap(), &want);
    }
}

/// Row-major product of one (m × k) and one (k × n) matrix in f64.
fn product(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    c
}

fn assert_close(what: &str, got: &[f32], want: &[f64], tolerance: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= tolerance * (1.0 + w.abs()),
            "{what}: element {i} is {g} (want {w}){}",
            if g.to_bits() == POISON { ", never written" } else { "" }
        );
    }
}

fn grouped_query_heads_read_their_shared_key_head(backend: &Backend) {
    const KV_HEADS: usize = 1; // three query heads share one key head
    for (sq, sk, d) in [(17, 24, 24), (65, 64, 64), (17, 64, 24)] {
        let q = random_floats(BATCH * HEADS * sq * d, (sq * 3 + d) as u64);
        let kt = random_floats(BATCH * KV_HEADS * d * sk, (sk * 5 + d) as u64);
        let q_device = backend.upload(&q, [BATCH, HEADS, sq, d]).unwrap();
        let kt_device = backend.upload(&kt, [BATCH, KV_HEADS, d, sk]).unwrap();
        let mut s = backend.filled([BATCH, HEADS, sq, sk], f32::from_bits(POISON)).unwrap();
        gqa_scores::launch(backend, &q_device, &kt_device, &mut s).unwrap();
        let mut want = Vec::new();
        for b in 0..BATCH {
            for h in 0..HEADS {
                let kv = h / (HEADS / KV_HEADS);
                let q_bh: Vec<f64> = q[(b * HEADS + h) * sq * d..][..sq * d].iter().map(|&v| f64::from(v)).collect();
                let k_bh: Vec<f64> =
                    kt[(b * KV_HEADS + kv) * d * sk..][..d * sk].iter().map(|&v| f64::from(v)).collect();
                want.extend(product(&q_bh, &k_bh, sq, d, sk));
            }
        }
        assert_close(
            &format!("gqa_scores at SQ = {sq}, SK = {sk}, D = {d}"),
            &backend.download(&s).unwrap(),
            &want,
            1e-5,
        );
    }
}

fn batched_tensor_core_gemm_reads_each_matrix_from_global(backend: &Backend) {
    for (m, n, k) in [(17, 24, 24), (65, 64, 64), (65, 24, 64)] {
        let a: Vec<bf16> = random_floats(BATCH * m * k, (m + k) as u64).into_iter().map(bf16::from_f32).collect();
        let bt: Vec<bf16> = random_floats(BATCH * n * k, (n * 3 + k) as u64).into_iter().map(bf16::from_f32).collect();
        let a_device = backend.upload(&a, [BATCH, m, k]).unwrap();
        let bt_device = backend.upload(&bt, [BATCH, n, k]).unwrap();
        let mut c = backend.filled([BATCH, m, n], f32::from_bits(POISON)).unwrap();
        batched_hgemm::launch(backend, &a_device, &bt_device, &mut c).unwrap();
        let mut want = Vec::new();
        for b in 0..BATCH {
            let a_b: Vec<f64> = a[b * m * k..][..m * k].iter().map(|v| v.to_f64()).collect();
            // B = btᵀ: element (p, j) is bt[j][p]
            let mut b_b = vec![0.0; k * n];
            for j in 0..n {
                for p in 0..k {
                    b_b[p * n + j] = bt[b * n * k + j * k + p].to_f64();
                }
            }
            want.extend(product(&a_b, &b_b, m, k, n));
        }
        // bf16 products are exact in f32; only the f32 sums round
        assert_close(
            &format!("batched_hgemm at M = {m}, N = {n}, K = {k}"),
            &backend.download(&c).unwrap(),
            &want,
            1e-5,
        );
    }
}

fn thread_code_indexes_rank_3_and_4_tensors(backend: &Backend) {
    for (rows, cols) in SHAPES {
        let x = random_floats(BATCH * HEADS * rows * cols, (rows * 11 + cols) as u64);
        let x_device = backend.upload(&x, [BATCH, HEADS, rows, cols]).unwrap();
        let mut sums = backend.filled([BATCH, HEADS, rows], f32::from_bits(POISON)).unwrap();
        let launched = row_sums::launch(backend, &x_device, &mut sums).unwrap();
        assert_eq!(launched.grid, [rows.div_ceil(64) as u32, HEADS as u32, BATCH as u32]);
        // the same additions in the same order: the same bits
        let want: Vec<f32> = x.chunks(cols).map(|row| row.iter().fold(0.0f32, |total, v| total + v)).collect();
        assert_bits(
            &format!("row_sums of {BATCH} × {HEADS} × {rows} × {cols}"),
            &backend.download(&sums).unwrap(),
            &want,
        );
    }
}

/// The emitted CUDA addresses each batched tile through its matrix's offset, and indexes
/// rank-3 and rank-4 tensors in thread code row by row across the batch.
#[test]
fn batched_tiles_render_their_matrix_offset() {
    let source = gqa_scores::CUDA_SOURCE;
    assert!(source.contains("const int kt_batch0 = (bz / H * HKV + bz % H / (H / HKV)) * D * kt_ld;"), "{source}");
    assert!(source.contains("const int s_batch0 = (bz / H * H + bz % H) * SQ * s_ld;"), "{source}");
    let sums = row_sums::CUDA_SOURCE;
    assert!(sums.contains("x[(((b) * H + (h)) * S + (i)) * x_ld + (d)]"), "{sums}");
    assert!(sums.contains("sums[((b) * H + (h)) * sums_ld + (i)] = total;"), "{sums}");
}

/// Every kernel of this file compiles with NVRTC for sm_80 (the simulation runs the same C).
#[test]
fn batched_kernels_compile_with_nvrtc() {
    for (source, name) in [
        (batched_transpose::CUDA_SOURCE, "batched_transpose"),
        (batched_copy::CUDA_SOURCE, "batched_copy"),
        (gqa_scores::CUDA_SOURCE, "gqa_scores"),
        (batched_hgemm::CUDA_SOURCE, "batched_hgemm"),
        (row_sums::CUDA_SOURCE, "row_sums"),
    ] {
        let compiled =
            tessera::nvrtc::compile_cubin(source, name, tessera::Arch::SM_80).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!compiled.cubin.is_empty(), "{name}");
    }
}

/// A rank-4 launch binds every shape symbol, passes the last dimension as the leading
/// dimension, and counts the elements of all the matrices against the 32-bit index limit.
#[test]
fn a_rank_4_launch_binds_its_symbols_and_spans_every_matrix() {
    use tessera::dsl::{LaunchPlan, LaunchPlanError, TensorShape};
    let kernel = gqa_scores::KERNEL.ir().unwrap();
    let shapes = |q: &'static [usize], kt: &'static [usize], s: &'static [usize]| {
        [
            TensorShape { param: "q", dims: q, leading_dimension: q.last().copied() },
            TensorShape { param: "kt", dims: kt, leading_dimension: kt.last().copied() },
            TensorShape { param: "s", dims: s, leading_dimension: s.last().copied() },
        ]
    };
    let plan = LaunchPlan::new(kernel, &shapes(&[2, 6, 65, 24], &[2, 2, 24, 64], &[2, 6, 65, 64]), 1).unwrap();
    assert_eq!(plan.grid, [2, 3, 12], "tiles of SK, tiles of SQ, B × H");
    for (symbol, value) in [("B", 2), ("H", 6), ("HKV", 2), ("SQ", 65), ("SK", 64), ("D", 24)] {
        assert_eq!(plan.binding.get(symbol), Some(value), "{symbol}");
    }
    let err = LaunchPlan::new(kernel, &shapes(&[2, 6, 65, 24], &[2, 2, 24, 64], &[2, 6, 65, 32]), 1).unwrap_err();
    assert!(matches!(err, LaunchPlanError::ShapeMismatch { .. }), "{err}");
    // 4 × 1024 × 1024 × 1024 elements: over i32's reach even though each dimension is not
    let err =
        LaunchPlan::new(kernel, &shapes(&[4, 1024, 1024, 1024], &[4, 1024, 1024, 1024], &[4, 1024, 1024, 1024]), 1)
            .unwrap_err();
    assert!(matches!(err, LaunchPlanError::TensorTooLarge { .. }), "{err}");
}

/// The static analysis sees a batched tile as the 2-D tile it is: the same accesses as the
/// same copy of one matrix.
#[test]
fn the_analysis_of_a_batched_copy_is_that_of_its_matrix_copy() {
    let batched = tessera::dsl::analyze(batched_copy::KERNEL.ir().unwrap()).unwrap();
    let matrix = tessera::dsl::analyze(matrix_copy::KERNEL.ir().unwrap()).unwrap();
    let shape = |report: &tessera::dsl::Report| {
        report
            .accesses
            .iter()
            .map(|a| (a.operand.clone(), a.width_bits, a.instructions, a.bank_ways, a.sectors))
            .collect::<Vec<_>>()
    };
    assert!(!batched.accesses.is_empty());
    assert_eq!(shape(&batched), shape(&matrix));
}

/// `batched_copy` of one matrix, for the analysis to compare against.
#[tile_kernel(threads = 64, vector = 4, consts(TR = 8, TC = 32))]
pub fn matrix_copy(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R, C)>) {
    let (bx, by) = grid(cdiv(C, TC), cdiv(R, TR));
    let s = shared::<f32>([TR, TC]);
    copy(x.tile([by, bx], [TR, TC]), &s);
    copy(&s, y.tile([by, bx], [TR, TC]));
}
