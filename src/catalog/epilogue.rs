//! Fused GEMM epilogues: the element-wise work after a GEMM — a bias per column, an
//! activation, a residual added — done on the accumulators in registers by the GEMM itself
//! (`copy(&acc, c.tile(..)).map(|v, row, col| ..)`), instead of a second kernel that reads C
//! back and writes it again. `bias_gelu_f32` is that second kernel, for the comparison.

use crate::prelude::*;

/// C = GELU(α·A·B + bias): SGEMM V13 (warp-specialised copies, 128×256 tiles) with the bias
/// and the activation applied to each accumulator before the store.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_bias_gelu(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    bias: Global<f32, (N,)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3, producers = 128) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).map(|v, _, col| gelu(alpha * v + bias[col]));
}

/// [`sgemm_bias_gelu`] on SGEMM V12 (cp.async, stream-K: the resident blocks share the tiles'
/// k loops): the GELU is applied once a tile's shares are added up, by the block that adds
/// them — one block a tile does all its GELUs, so on an H200 this runs behind V12 followed by
/// [`bias_gelu_f32`] (80% of cuBLAS + it at 1024³, where the pair is at 100%), and
/// `tessera::gemm_bias_gelu` takes the pair where the GEMM table prefers stream-K.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_bias_gelu_stream_k(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    bias: Global<f32, (N,)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).stream_k();
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).map(|v, _, col| gelu(alpha * v + bias[col]));
}

/// C = ReLU(A·B + bias) + residual, then α and β as in every GEMM (C = α·that + β·C): SGEMM
/// V11 (128×256 tiles, cp.async) with a row-major residual read at each value's place.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_bias_relu_residual(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    bias: Global<f32, (N,)>,
    residual: Global<f32, (M, N)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]))
        .map(|v, row, col| max(v + bias[col], 0.0) + residual[[row, col]])
        .axpby(alpha, beta);
}

/// C = SiLU(A·B + bias) in bf16, on tensor cores: HGEMM V6 (BF16 inputs, f32 accumulators,
/// mma.sync m16n8k16 from 128-byte-swizzled tiles, 3-stage cp.async), rounded once at the store.
#[tile_kernel(threads = 256, vector = 8, target = sm_90, consts(BM = 128, BN = 256, BK = 64, WM = 64, WN = 64))]
pub fn hgemm_bias_silu_bf16(
    a: Global<bf16, (M, K)>,
    b: Global<bf16, (K, N)>,
    bias: Global<f32, (N,)>,
    c: GlobalMut<bf16, (M, N)>,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128);
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).map(|v, _, col| silu(v + bias[col]));
}

/// C = GELU(C + bias) in place, row by row: the second kernel a GEMM without a fused epilogue
/// needs (cuBLAS + this is the baseline of the fused kernels). Loads are unguarded (clamped to
/// the last column) so that each thread's loads all issue before the first GELU.
#[tile_kernel(threads = 256, vector = 1, consts(TILE = 1024))]
pub fn bias_gelu_f32(bias: Global<f32, (N,)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, TILE), M);
    for k in 0..TILE / THREADS {
        let col = bx * TILE + k * THREADS + thread_index();
        let clamped = min(col, N - 1);
        let value = gelu(c[[by, clamped]] + bias[clamped]);
        if col < N {
            c[[by, col]] = value;
        }
    }
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 5] = [
    &sgemm_bias_gelu::KERNEL,
    &sgemm_bias_gelu_stream_k::KERNEL,
    &sgemm_bias_relu_residual::KERNEL,
    &hgemm_bias_silu_bf16::KERNEL,
    &bias_gelu_f32::KERNEL,
];
