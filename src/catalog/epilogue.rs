//! Fused GEMM epilogues: the element-wise work after a GEMM — a bias per column, an
//! activation, a residual added — done on the accumulators in registers by the GEMM itself
//! (`copy(&acc, c.tile(..)).map(|v, row, col| ..)`), instead of a second kernel that reads C
//! back and writes it again: on the SGEMMs (f32), on HGEMM V6 (mma.sync) and on the wgmma
//! HGEMM V11 (bf16 and f16). `bias_gelu_*` and `bias_residual_*` (f32, bf16, f16) are that
//! second kernel, for the comparison.

use crate::prelude::*;

// Epilogues fused into SGEMM V13 (warp-specialised copies, 128 × 256 tiles): the tensors the
// expression reads besides the bias, and the expression applied to each accumulator `v` of row
// `row` and column `col`, are the only differences.
macro_rules! sgemm_v13_epilogue {
    ($(#[$doc:meta])* $name:ident, $(reads [$($read:ident),*],)? |$v:ident, $row:tt, $col:ident| $value:expr) => {
        $(#[$doc])*
        #[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
        pub fn $name(
            a: Global<f32, (M, K)>,
            b: Global<f32, (K, N)>,
            bias: Global<f32, (N,)>,
            $($($read: Global<f32, (M, N)>,)*)?
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
            copy(&acc, c.tile([by, bx], [BM, BN])).map(|$v, $row, $col| $value);
        }
    };
}
sgemm_v13_epilogue!(
    /// C = GELU(α·A·B + bias): SGEMM V13 (warp-specialised copies, 128×256 tiles) with the bias
    /// and the activation applied to each accumulator before the store.
    sgemm_bias_gelu,
    |v, _, col| gelu(alpha * v + bias[col])
);
sgemm_v13_epilogue!(
    /// C = α·A·B + bias + residual on f32 data: [`sgemm_bias_gelu`]'s SGEMM V13 with the residual
    /// read at each value's place instead of the GELU — `x + F.linear(h, w, b)` in f32, one kernel
    /// where torch runs two.
    sgemm_bias_residual,
    reads [residual],
    |v, row, col| alpha * v + bias[col] + residual[[row, col]]
);

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

// Epilogues on 16-bit data fused into the wgmma GEMMs writing 16-bit C (HGEMM V11: TMA
// producers, two consumer warpgroups on 128 × 256 tiles, grouped rasterisation, 16-byte
// stores; or V20's 64 × 128 tiles for the small shapes): the tiles, B's layout ([K, N], or
// [N, K] with `b = rows`: `catalog::hgemm_bt`'s turned tile), the element type, the tensors the
// epilogue reads besides the bias and the expression applied to each accumulator `v` of row
// `row` and column `col` are the only differences.
macro_rules! hgemm_epilogue {
    // V11's tiles: 128 × 256, two consumer warpgroups, four stages
    ($(#[$doc:meta])* $name:ident, $t:ident, $(reads [$($read:ident),*],)? |$v:ident, $row:tt, $col:ident| $value:expr $(, b = $rows:ident)?) => {
        hgemm_epilogue!(@layout $(#[$doc])* $name, $t, [$($($read),*)?], |$v, $row, $col| $value,
            config = [threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256)],
            stages = 4 $(, $rows)?);
    };
    // V20's: 64 × 128, one consumer warpgroup, eight stages (the small shapes)
    ($(#[$doc:meta])* $name:ident, $t:ident, $(reads [$($read:ident),*],)? |$v:ident, $row:tt, $col:ident| $value:expr, tiles = small $(, b = $rows:ident)?) => {
        hgemm_epilogue!(@layout $(#[$doc])* $name, $t, [$($($read),*)?], |$v, $row, $col| $value,
            config = [threads = 128, vector = 8, min_blocks = 1, target = sm_90a, consts(BM = 64, BN = 128, BK = 64, WN = 128)],
            stages = 8 $(, $rows)?);
    };
    // B stored [K, N]: its [BK, BN] tiles read MN-major
    (@layout $(#[$doc:meta])* $name:ident, $t:ident, [$($read:ident),*], |$v:ident, $row:tt, $col:ident| $value:expr,
        config = [$($config:tt)*], stages = $stages:literal) => {
        hgemm_epilogue!(@kernel $(#[$doc])* $name, $t, [$($read),*], |$v, $row, $col| $value,
            config = [$($config)*], stages = $stages,
            b = [(K, N), [BK, BN], [k, bx]], product = { mma(&a_s, &b_s, &mut acc) });
    };
    // B stored [N, K] (a linear layer's weight): its [BN, BK] tiles read K-major, Bᵀ multiplied
    (@layout $(#[$doc:meta])* $name:ident, $t:ident, [$($read:ident),*], |$v:ident, $row:tt, $col:ident| $value:expr,
        config = [$($config:tt)*], stages = $stages:literal, rows) => {
        hgemm_epilogue!(@kernel $(#[$doc])* $name, $t, [$($read),*], |$v, $row, $col| $value,
            config = [$($config)*], stages = $stages,
            b = [(N, K), [BN, BK], [bx, k]], product = { mma(&a_s, &b_s.t(), &mut acc) });
    };
    (@kernel $(#[$doc:meta])* $name:ident, $t:ident, [$($read:ident),*], |$v:ident, $row:tt, $col:ident| $value:expr,
        config = [$($config:tt)*], stages = $stages:literal,
        b = [($b0:ident, $b1:ident), [$t0:ident, $t1:ident], [$i0:ident, $i1:ident]], product = { $($product:tt)* }) => {
        $(#[$doc])*
        #[tile_kernel($($config)*)]
        pub fn $name(
            a: Global<$t, (M, K)>,
            b: Global<$t, ($b0, $b1)>,
            bias: Global<$t, (N,)>,
            $($read: Global<$t, (M, N)>,)*
            c: GlobalMut<$t, (M, N)>,
            alpha: f32,
        ) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([$t0, $t1]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = $stages, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([$i0, $i1], [$t0, $t1]), &b_s);
                $($product)*;
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).map(|$v, $row, $col| $value);
        }
    };
}
hgemm_epilogue!(
    /// C = α·A·B + bias with bf16 A, B, bias and C (f32 accumulators, the bias added in f32, C
    /// rounded once): HGEMM V11 (`hgemm_v11_bf16_to_bf16`) with the bias added to each
    /// accumulator before the store — `F.linear(x, w, b)` on bf16 tensors (w stored [K, N]).
    /// On an H200 98% of the plain V11's speed at 4096³.
    hgemm_bias_bf16,
    bf16,
    |v, _, col| alpha * v + bias[col] as f32
);
hgemm_epilogue!(
    /// [`hgemm_bias_bf16`] on f16 data.
    hgemm_bias_f16,
    f16,
    |v, _, col| alpha * v + bias[col] as f32
);
hgemm_epilogue!(
    /// C = α·A·B + bias + residual with bf16 A, B, bias, residual and C (the sum in f32, C rounded
    /// once): [`hgemm_bias_bf16`] adding a tensor of C's shape as each value is stored — a
    /// transformer's projection back into the residual stream, `x + F.linear(h, w, b)`, which
    /// torch runs as two kernels (the GEMM with its bias, then the add) that write and read the
    /// product once more.
    hgemm_bias_residual_bf16,
    bf16,
    reads [residual],
    |v, row, col| alpha * v + bias[col] as f32 + residual[[row, col]] as f32
);
hgemm_epilogue!(
    /// [`hgemm_bias_residual_bf16`] on f16 data.
    hgemm_bias_residual_f16,
    f16,
    reads [residual],
    |v, row, col| alpha * v + bias[col] as f32 + residual[[row, col]] as f32
);
hgemm_epilogue!(
    /// [`hgemm_bias_residual_bf16`] on HGEMM V20's tiles (64 × 128, one consumer warpgroup,
    /// eight stages): for the shapes where the GEMM table has V20 ahead of V11.
    hgemm_bias_residual_small_tiles_bf16,
    bf16,
    reads [residual],
    |v, row, col| alpha * v + bias[col] as f32 + residual[[row, col]] as f32,
    tiles = small
);
hgemm_epilogue!(
    /// [`hgemm_bias_residual_small_tiles_bf16`] on f16 data.
    hgemm_bias_residual_small_tiles_f16,
    f16,
    reads [residual],
    |v, row, col| alpha * v + bias[col] as f32 + residual[[row, col]] as f32,
    tiles = small
);
hgemm_epilogue!(
    /// [`hgemm_bias_bf16`] on HGEMM V20's tiles (64 × 128, one consumer warpgroup, eight
    /// stages): for the shapes where the GEMM table has V20 ahead of V11 (1024³: 9.4 µs
    /// against 16.9 on an H200).
    hgemm_bias_small_tiles_bf16,
    bf16,
    |v, _, col| alpha * v + bias[col] as f32,
    tiles = small
);
hgemm_epilogue!(
    /// [`hgemm_bias_small_tiles_bf16`] on f16 data.
    hgemm_bias_small_tiles_f16,
    f16,
    |v, _, col| alpha * v + bias[col] as f32,
    tiles = small
);
hgemm_epilogue!(
    /// C = α·A·Bᵀ + bias with B stored [N, K] — `F.linear(x, w, b)` on bf16 tensors as torch
    /// stores them (w [out, in]): [`hgemm_bias_bf16`] on `catalog::hgemm_bt`'s turned B tile
    /// (V11's tiles, B's rows read K-major by wgmma's descriptor).
    hgemm_bt_bias_bf16,
    bf16,
    |v, _, col| alpha * v + bias[col] as f32,
    b = rows
);
hgemm_epilogue!(
    /// [`hgemm_bt_bias_bf16`] on f16 data.
    hgemm_bt_bias_f16,
    f16,
    |v, _, col| alpha * v + bias[col] as f32,
    b = rows
);
hgemm_epilogue!(
    /// [`hgemm_bt_bias_bf16`] on V20's tiles (64 × 128, eight stages), for the small shapes.
    hgemm_bt_bias_small_tiles_bf16,
    bf16,
    |v, _, col| alpha * v + bias[col] as f32,
    tiles = small,
    b = rows
);
hgemm_epilogue!(
    /// [`hgemm_bt_bias_small_tiles_bf16`] on f16 data.
    hgemm_bt_bias_small_tiles_f16,
    f16,
    |v, _, col| alpha * v + bias[col] as f32,
    tiles = small,
    b = rows
);
hgemm_epilogue!(
    /// C = α·A·Bᵀ + bias + residual with B stored [N, K] — `x + F.linear(h, w, b)` on bf16
    /// tensors as torch stores them: [`hgemm_bias_residual_bf16`] on the turned B tile of
    /// [`hgemm_bt_bias_bf16`] (the sum in f32, C rounded once).
    hgemm_bt_bias_residual_bf16,
    bf16,
    reads [residual],
    |v, row, col| alpha * v + bias[col] as f32 + residual[[row, col]] as f32,
    b = rows
);
hgemm_epilogue!(
    /// [`hgemm_bt_bias_residual_bf16`] on f16 data.
    hgemm_bt_bias_residual_f16,
    f16,
    reads [residual],
    |v, row, col| alpha * v + bias[col] as f32 + residual[[row, col]] as f32,
    b = rows
);
hgemm_epilogue!(
    /// [`hgemm_bt_bias_residual_bf16`] on V20's tiles (64 × 128, eight stages), for the small
    /// shapes.
    hgemm_bt_bias_residual_small_tiles_bf16,
    bf16,
    reads [residual],
    |v, row, col| alpha * v + bias[col] as f32 + residual[[row, col]] as f32,
    tiles = small,
    b = rows
);
hgemm_epilogue!(
    /// [`hgemm_bt_bias_residual_small_tiles_bf16`] on f16 data.
    hgemm_bt_bias_residual_small_tiles_f16,
    f16,
    reads [residual],
    |v, row, col| alpha * v + bias[col] as f32 + residual[[row, col]] as f32,
    tiles = small,
    b = rows
);
hgemm_epilogue!(
    /// C = GELU(α·A·B + bias) with bf16 A, B, bias and C (the GELU of the erf, in f32, C
    /// rounded once): [`hgemm_bias_bf16`] with the activation — what `F.gelu(F.linear(x, w, b))`
    /// computes in two kernels. The GELU's 17 instructions a value run while the tensor cores
    /// wait (on an H200 86% of the plain V11's speed at 4096³, 58% at 2048³; BENCHMARKS.md):
    /// `tessera::gemm_bias_gelu` runs [`hgemm_bias_bf16`] (or [`hgemm_bias_small_tiles_bf16`])
    /// and then [`gelu_bf16`] instead.
    hgemm_bias_gelu_bf16,
    bf16,
    |v, _, col| gelu(alpha * v + bias[col] as f32)
);
hgemm_epilogue!(
    /// [`hgemm_bias_gelu_bf16`] on f16 data.
    hgemm_bias_gelu_f16,
    f16,
    |v, _, col| gelu(alpha * v + bias[col] as f32)
);

// C = GELU(C + bias) in place, row by row: the second kernel a GEMM without a fused epilogue
// needs (cuBLAS + it is the baseline of the fused kernels), for f32 and 16-bit C. Loads are
// unguarded (clamped to the last column) so that each thread's loads all issue before the
// first GELU; 16-bit values are widened to f32 and rounded once.
macro_rules! bias_gelu {
    ($(#[$doc:meta])* $name:ident, $t:ident) => {
        $(#[$doc])*
        #[tile_kernel(threads = 256, vector = 1, consts(TILE = 1024))]
        pub fn $name(bias: Global<$t, (N,)>, c: GlobalMut<$t, (M, N)>) {
            // rows on x, whose extent has no 65535 limit
            let (row, chunk) = grid(M, cdiv(N, TILE));
            for k in 0..TILE / THREADS {
                let col = chunk * TILE + k * THREADS + thread_index();
                let clamped = min(col, N - 1);
                let value = gelu(c[[row, clamped]] as f32 + bias[clamped] as f32);
                if col < N {
                    c[[row, col]] = value as $t;
                }
            }
        }
    };
}
bias_gelu!(
    /// C = GELU(C + bias) in place on an f32 C, row by row: what follows cuBLAS SGEMM in the
    /// fused SGEMMs' baseline. Loads are unguarded (clamped to the last column) so that each
    /// thread's loads all issue before the first GELU.
    bias_gelu_f32,
    f32
);
bias_gelu!(
    /// [`bias_gelu_f32`] on a bf16 C and bias: what follows cuBLAS's bf16 GEMM in
    /// [`hgemm_bias_gelu_bf16`]'s baseline.
    bias_gelu_bf16,
    bf16
);
bias_gelu!(
    /// [`bias_gelu_bf16`] on f16 data.
    bias_gelu_f16,
    f16
);

// C = C + bias + residual in place, a 16-byte vector of each a thread: what follows a GEMM that
// wrote C without the bias and the residual (cuBLAS + it is the baseline of
// [`hgemm_bias_residual_bf16`]); the sum in f32, a 16-bit C rounded once.
macro_rules! bias_residual {
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:literal) => {
        $(#[$doc])*
        #[tile_kernel(threads = 256, vector = $vector, consts(COLUMNS = 2048), require(COLUMNS % (THREADS * VECTOR) == 0))]
        pub fn $name(bias: Global<$t, (N,)>, residual: Global<$t, (M, N)>, c: GlobalMut<$t, (M, N)>) {
            // rows on x, whose extent has no 65535 limit
            let (row, chunk) = grid(M, cdiv(N, COLUMNS));
            let whole = N / VECTOR;
            // one vector a thread (more where the launch narrows VECTOR for rows not 16-byte aligned)
            for j in 0..COLUMNS / (THREADS * VECTOR) {
                let i = chunk * (COLUMNS / VECTOR) + j * THREADS + thread_index();
                if i < whole {
                    let product = c.vector([row, i]);
                    let added = residual.vector([row, i]);
                    let biases = bias.vector(i);
                    let mut out = vector(0.0 as $t);
                    for e in 0..VECTOR {
                        out[e] = (product[e] as f32 + biases[e] as f32 + added[e] as f32) as $t;
                    }
                    c.vector([row, i]) = out;
                }
            }
            // the columns after the row's last whole vector, one a thread of the row's first block
            let tail = whole * VECTOR + thread_index();
            if chunk == 0 && tail < N {
                c[[row, tail]] = (c[[row, tail]] as f32 + bias[tail] as f32 + residual[[row, tail]] as f32) as $t;
            }
        }
    };
}
bias_residual!(
    /// C = C + bias + residual in place on f32 data, a vector of 4 a thread: what follows the
    /// GEMM where `tessera::gemm_bias_residual` does not fuse it.
    bias_residual_f32,
    f32,
    vector = 4
);
bias_residual!(
    /// C = C + bias + residual in place on bf16 data (the sum in f32, C rounded once), a vector of
    /// 8 a thread: what follows cuBLAS's bf16 GEMM in [`hgemm_bias_residual_bf16`]'s baseline.
    bias_residual_bf16,
    bf16,
    vector = 8
);
bias_residual!(
    /// [`bias_residual_bf16`] on f16 data.
    bias_residual_f16,
    f16,
    vector = 8
);

// GELU(C) in place on 16-bit C, two 16-byte vectors a thread: the pass after a GEMM that fused
// the bias ([`hgemm_bias_bf16`]), which `tessera::gemm_bias_gelu` takes on 16-bit data — a pass
// over C at full occupancy, where the GELU fused into the GEMM runs on the two consumer
// warpgroups while the tensor cores wait. Both vectors are loaded before the first GELU: with
// one vector a thread in flight the pass ran at 87–91% of the device copy of its bytes on an
// H200 (4096², 8192², 16384 × 4096), with two at 96–100% (BENCHMARKS.md, `benchmarks/lab/gelu`).
macro_rules! gelu_in_place {
    ($(#[$doc:meta])* $name:ident, $t:ident) => {
        $(#[$doc])*
        #[tile_kernel(threads = 256, vector = 8, consts(COLUMNS = 4096), require(COLUMNS % (2 * THREADS * VECTOR) == 0))]
        pub fn $name(c: GlobalMut<$t, (M, N)>) {
            // rows on x, whose extent has no 65535 limit
            let (row, chunk) = grid(M, cdiv(N, COLUMNS));
            let whole = N / VECTOR;
            // two vectors a thread (more where the launch narrows VECTOR for rows not 16-byte aligned)
            for j in 0..COLUMNS / (2 * THREADS * VECTOR) {
                let first = chunk * (COLUMNS / VECTOR) + j * 2 * THREADS + thread_index();
                let second = first + THREADS;
                let mut first_loaded = vector(0.0 as $t);
                let mut second_loaded = vector(0.0 as $t);
                if first < whole {
                    first_loaded = c.vector([row, first]);
                }
                if second < whole {
                    second_loaded = c.vector([row, second]);
                }
                if first < whole {
                    let mut out = vector(0.0 as $t);
                    for e in 0..VECTOR {
                        out[e] = gelu(first_loaded[e] as f32) as $t;
                    }
                    c.vector([row, first]) = out;
                }
                if second < whole {
                    let mut out = vector(0.0 as $t);
                    for e in 0..VECTOR {
                        out[e] = gelu(second_loaded[e] as f32) as $t;
                    }
                    c.vector([row, second]) = out;
                }
            }
            // the columns after the row's last whole vector, one a thread of the row's first block
            let tail = whole * VECTOR + thread_index();
            if chunk == 0 && tail < N {
                c[[row, tail]] = gelu(c[[row, tail]] as f32) as $t;
            }
        }
    };
}
gelu_in_place!(
    /// C = GELU(C) in place on a bf16 C (widened to f32, rounded once), two vectors of 8 a thread.
    gelu_bf16,
    bf16
);
gelu_in_place!(
    /// [`gelu_bf16`] on an f16 C.
    gelu_f16,
    f16
);

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 31] = [
    &sgemm_bias_gelu::KERNEL,
    &sgemm_bias_gelu_stream_k::KERNEL,
    &sgemm_bias_residual::KERNEL,
    &sgemm_bias_relu_residual::KERNEL,
    &hgemm_bias_silu_bf16::KERNEL,
    &hgemm_bias_bf16::KERNEL,
    &hgemm_bias_f16::KERNEL,
    &hgemm_bias_residual_bf16::KERNEL,
    &hgemm_bias_residual_f16::KERNEL,
    &hgemm_bias_residual_small_tiles_bf16::KERNEL,
    &hgemm_bias_residual_small_tiles_f16::KERNEL,
    &hgemm_bias_small_tiles_bf16::KERNEL,
    &hgemm_bias_small_tiles_f16::KERNEL,
    &hgemm_bt_bias_bf16::KERNEL,
    &hgemm_bt_bias_f16::KERNEL,
    &hgemm_bt_bias_small_tiles_bf16::KERNEL,
    &hgemm_bt_bias_small_tiles_f16::KERNEL,
    &hgemm_bt_bias_residual_bf16::KERNEL,
    &hgemm_bt_bias_residual_f16::KERNEL,
    &hgemm_bt_bias_residual_small_tiles_bf16::KERNEL,
    &hgemm_bt_bias_residual_small_tiles_f16::KERNEL,
    &hgemm_bias_gelu_bf16::KERNEL,
    &hgemm_bias_gelu_f16::KERNEL,
    &bias_gelu_f32::KERNEL,
    &bias_gelu_bf16::KERNEL,
    &bias_gelu_f16::KERNEL,
    &bias_residual_f32::KERNEL,
    &bias_residual_bf16::KERNEL,
    &bias_residual_f16::KERNEL,
    &gelu_bf16::KERNEL,
    &gelu_f16::KERNEL,
];
