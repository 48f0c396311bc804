//! The transpose family: y = xᵀ for any R×C, f32.
//!
//! The classic story (32×32 tiles, threads (32, 8)) goes naive → shared tile → padded →
//! swizzled; the float4 "col2row" story of seeds/002 (16×64 tiles, threads (16, 16)) goes
//! 4-way bank conflicts → padding (2-way) → threads walking down the columns (conflict-free).
//! Each kernel differs from its neighbour only in the idea it adds; `REPORT` shows what that
//! does to shared-memory banks and global sectors.

use crate::prelude::*;

/// Naive: each thread reads x down a column (strided) and writes y along a row (coalesced).
#[tile_kernel(threads = (32, 8), consts(T = 32))]
pub fn transpose_naive(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    copy(x.tile([by, bx], [T, T]).t(), y.tile([bx, by], [T, T]));
}

/// Through a shared tile: both global sides coalesced, but reading a column of the
/// unpadded tile hits one bank 32 times.
#[tile_kernel(threads = (32, 8), consts(T = 32))]
pub fn transpose_shared(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, T]);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

/// One element of padding per row: a column now touches all 32 banks.
#[tile_kernel(threads = (32, 8), consts(T = 32))]
pub fn transpose_padded(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, T]).pad(1);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

/// XOR swizzle instead of padding: conflict-free with no wasted shared memory.
#[tile_kernel(threads = (32, 8), consts(T = 32))]
pub fn transpose_swizzled(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, T]).swizzle(1);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

/// Padded 64×64 tiles: 16 elements in flight per thread, for bandwidth.
#[tile_kernel(threads = (32, 8), consts(T = 64))]
pub fn transpose_padded_64(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, T]).pad(1);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

/// [`transpose_padded_64`] with the grid's order swapped: consecutive blocks walk down x's
/// rows (one band of its columns at a time), so the blocks running together write long runs of
/// the same rows of y, where the other order scatters each block's writes over y's rows
/// (on an H200 93.4% → 96.7% of the device copy at 16384², BENCHMARKS.md).
#[tile_kernel(threads = (32, 8), consts(T = 64))]
pub fn transpose_padded_64_down(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (by, bx) = grid(cdiv(R, T), cdiv(C, T));
    let t = shared::<f32>([T, T]).pad(1);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

/// 16-byte accesses on both sides (Triton's 64 × 64 tile moves the same), blocks walking down
/// x's rows as in [`transpose_padded_64_down`]: a thread loads vectors of x's rows, writes
/// their elements down a column of the padded tile, and builds each vector of y's rows from
/// elements of one tile row. Edge tiles go element by element; rows whose leading dimension
/// is not a multiple of 4 narrow it to single floats.
#[tile_kernel(
    threads = 256,
    vector = 4,
    consts(T = 64),
    require(T % VECTOR == 0, THREADS % (T / VECTOR) == 0, T * T % (THREADS * VECTOR) == 0)
)]
pub fn transpose_vector_64(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (by, bx) = grid(cdiv(R, T), cdiv(C, T));
    // t[[c, r]] holds x[[by·T + r, bx·T + c]]
    let t = shared::<f32>([T, T]).pad(1);
    // this thread's vector q of tile rows p, p + THREADS / (T / VECTOR), ..
    let q = thread_index() % (T / VECTOR);
    let p = thread_index() / (T / VECTOR);
    for k in 0..T * T / (THREADS * VECTOR) {
        let r = p + k * (THREADS / (T / VECTOR));
        let row = by * T + r;
        let col = bx * T + q * VECTOR;
        if row < R {
            if col + VECTOR <= C {
                let w = x.vector([row, bx * (T / VECTOR) + q]);
                for e in 0..VECTOR {
                    t[[q * VECTOR + e, r]] = w[e];
                }
            } else {
                for e in 0..VECTOR {
                    if col + e < C {
                        t[[q * VECTOR + e, r]] = x[[row, col + e]];
                    }
                }
            }
        }
    }
    // row c of the tile is row bx·T + c of y, its columns by·T ..
    for k in 0..T * T / (THREADS * VECTOR) {
        let c = p + k * (THREADS / (T / VECTOR));
        let out_row = bx * T + c;
        let out_col = by * T + q * VECTOR;
        if out_row < C {
            if out_col + VECTOR <= R {
                let mut w = vector(0.0f32);
                for e in 0..VECTOR {
                    w[e] = t[[c, q * VECTOR + e]];
                }
                y.vector([out_row, by * (T / VECTOR) + q]) = w;
            } else {
                for e in 0..VECTOR {
                    if out_col + e < R {
                        y[[out_row, out_col + e]] = t[[c, q * VECTOR + e]];
                    }
                }
            }
        }
    }
}

/// Padded 128×32 tiles: each block writes 128-element runs of y's rows, so rows of y that
/// are not 32-byte aligned leave partial sectors at the ends of 512 bytes, not 256.
#[tile_kernel(threads = (32, 8), consts(TR = 128, TC = 32))]
pub fn transpose_padded_128x32(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, TC), cdiv(R, TR));
    let t = shared::<f32>([TR, TC]).pad(1);
    copy(x.tile([by, bx], [TR, TC]), &t);
    copy(&t.t(), y.tile([bx, by], [TC, TR]));
}

/// Padded 256×32 tiles: 1 KiB runs of y's rows per block.
#[tile_kernel(threads = (32, 8), consts(TR = 256, TC = 32))]
pub fn transpose_padded_256x32(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, TC), cdiv(R, TR));
    let t = shared::<f32>([TR, TC]).pad(1);
    copy(x.tile([by, bx], [TR, TC]), &t);
    copy(&t.t(), y.tile([bx, by], [TC, TR]));
}

/// seeds/002, f32x4 with shared memory: 16×64 tiles, float4 loads and stores; reading
/// four rows down a column of the unpadded tile is a 4-way bank conflict.
#[tile_kernel(threads = (16, 16), vector = 4, consts(TR = 16, TC = 64))]
pub fn transpose_f32x4_shared(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, TC), cdiv(R, TR));
    let t = shared::<f32>([TR, TC]);
    copy(x.tile([by, bx], [TR, TC]), &t);
    copy(&t.t(), y.tile([bx, by], [TC, TR]));
}

/// seeds/002 with PAD = 1: the column reads drop to 2-way, but the padded rows are no
/// longer 16-byte aligned, so the tile is stored element by element (also 2-way).
#[tile_kernel(threads = (16, 16), vector = 4, consts(TR = 16, TC = 64))]
pub fn transpose_f32x4_padded(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, TC), cdiv(R, TR));
    let t = shared::<f32>([TR, TC]).pad(1);
    copy(x.tile([by, bx], [TR, TC]), &t);
    copy(&t.t(), y.tile([bx, by], [TC, TR]));
}

/// seeds/002's own layout: the unpadded tile, but consecutive threads walk down y's rows,
/// so a warp reads 32 consecutive columns of one shared row — no bank conflict, at the
/// price of y's float4 stores landing in 32 different rows.
#[tile_kernel(threads = (16, 16), vector = 4, consts(TR = 16, TC = 64))]
pub fn transpose_f32x4_conflict_free(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, TC), cdiv(R, TR));
    let t = shared::<f32>([TR, TC]);
    copy(x.tile([by, bx], [TR, TC]), &t);
    copy(&t.t(), y.tile([bx, by], [TC, TR])).column_major();
}

// The sector-aligned transpose is stamped twice by a macro_rules! of its own: the order of the
// grid (blocks along x's rows, or down them) is the only difference.
macro_rules! transpose_sector_aligned {
    ($(#[$doc:meta])* $name:ident, grid = ($first:ident, $second:ident) = (cdiv($a:ident, $b:ident), cdiv($c:ident, $d:ident))) => {
        $(#[$doc])*
        #[tile_kernel(
            threads = 256,
            vector = 1,
            consts(TR = 64, TC = 64),
            require(TR % 8 == 0, (TR + 8) * TC % THREADS == 0, TC % (THREADS / 32) == 0)
        )]
        pub fn $name(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
            let ($first, $second) = grid(cdiv($a, $b), cdiv($c, $d));
            let t = shared::<f32>([TR + 8, TC]).pad(1);
            // the slab divides into whole passes of the block (required), so no load is guarded and
            // all of a thread's loads issue before its first shared store
            for k in 0..(TR + 8) * TC / THREADS {
                let e = k * THREADS + thread_index();
                let i = e / TC;
                let j = e % TC;
                t[[i, j]] = x[[min(by * TR + i, R - 1), min(bx * TC + j, C - 1)]];
            }
            // warp w stores rows w, w + THREADS / 32, .. of the block's TC rows of y; only the stores
            // are guarded, so every shared read of a thread issues before its first store
            for q in 0..TC / (THREADS / 32) {
                let lr = warp_index() + q * (THREADS / 32);
                let r = bx * TC + lr;
                // y[r][h] is the first element of row r on a 32-byte boundary
                let h = (8 - r * y.leading_dimension() % 8) % 8;
                let end = min(by * TR + TR + h, R);
                for k in 0..(TR + 31) / 32 {
                    let c = by * TR + h + 32 * k + lane();
                    let v = t[[min(c - by * TR, TR + 7), lr]];
                    if r < C && c < end {
                        y[[r, c]] = v;
                    }
                }
                let head = t[[lane(), lr]];
                if by == 0 && r < C && lane() < min(h, R) {
                    y[[r, lane()]] = head;
                }
            }
        }
    };
}
transpose_sector_aligned!(
    /// Sector-aligned stores: each run a block writes into a row of y starts on a 32-byte boundary,
    /// so every sector of y is written whole by one block. When y's rows are not a multiple of 8
    /// floats long, the padded kernels' 128-byte warp stores each touch 5 sectors, 2 of them
    /// partial (ncu at 4095×4097: 17% more L2 write sectors, and the load/store unit throttles);
    /// here they touch 4.
    ///
    /// Block (bx, by) owns [by·TR + h, by·TR + TR + h) of y's row r, h < 8 the shift to its first
    /// aligned element (block 0 also [0, h)), so it stages x's rows by·TR .. by·TR + TR + 8 in
    /// shared memory (loads clamped, not guarded). h follows y's leading dimension, so sub-matrix
    /// outputs stay aligned too. Only speed assumes y's base is aligned; the sector where one row
    /// of y ends and the next begins is still split.
    transpose_sector_aligned, grid = (bx, by) = (cdiv(C, TC), cdiv(R, TR))
);
transpose_sector_aligned!(
    /// [`transpose_sector_aligned`] with blocks walking down x's rows, as
    /// [`transpose_padded_64_down`] does.
    transpose_sector_aligned_down, grid = (by, bx) = (cdiv(R, TR), cdiv(C, TC))
);

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 14] = [
    &transpose_naive::KERNEL,
    &transpose_shared::KERNEL,
    &transpose_padded::KERNEL,
    &transpose_swizzled::KERNEL,
    &transpose_padded_64::KERNEL,
    &transpose_padded_64_down::KERNEL,
    &transpose_vector_64::KERNEL,
    &transpose_padded_128x32::KERNEL,
    &transpose_padded_256x32::KERNEL,
    &transpose_f32x4_shared::KERNEL,
    &transpose_f32x4_padded::KERNEL,
    &transpose_f32x4_conflict_free::KERNEL,
    &transpose_sector_aligned::KERNEL,
    &transpose_sector_aligned_down::KERNEL,
];
