//! Softmax over the rows of a matrix, each row read once and written once: the row sits in
//! the registers of the threads that share it (`let mut v = [..; ITEMS]`), its maximum and
//! its sum are reduced across those threads (`warp_max(m, LANES)`/`warp_sum(s, LANES)` for a
//! group of lanes or a warp per row, `block_max`/`block_sum` for a block per row), and every
//! thread writes its own elements.
//!
//! Which kernel a row length takes ([`softmax`] chooses):
//!
//! | columns         | kernel                 | threads per row | elements per thread |
//! |-----------------|------------------------|-----------------|---------------------|
//! | ≤ 64            | [`softmax_warp_64_f32`] | 8 (32 rows a block) | 8              |
//! | ≤ 128           | [`softmax_warp_f32`]   | 8 (32 rows a block) | 16              |
//! | ≤ 256           | [`softmax_warp_256_f32`] | 16 (16 rows a block) | 16           |
//! | ≤ 512           | [`softmax_warp_512_f32`] | 32 (8 rows a block) | 16            |
//! | ≤ 1024          | [`softmax_warp_wide_f32`] | 32 (8 rows a block) | 32           |
//! | ≤ 2048          | [`softmax_aligned_2048_f32`] | 64        | 32 (+ 1 of the row's ends) |
//! | ≤ 3072          | [`softmax_aligned_3072_f32`] | 96        | 32 (+ 1)            |
//! | ≤ 4096 (bf16, f16) | [`softmax_aligned_4096_bf16`] | 128   | 32 (+ 1)            |
//! | ≤ 5120          | [`softmax_aligned_short_f32`] | 256      | 20 (+ 1)            |
//! | ≤ 8192          | [`softmax_aligned_f32`] | 512            | 16 (+ 1)            |
//! | ≤ 16384         | [`softmax_aligned_long_f32`] | 512       | 32 (+ 1)            |
//! | ≤ 32768         | [`softmax_aligned_wide_f32`] | 1024      | 32 (+ 1)            |
//! | ≤ 65536 (sm_90) | [`softmax_cluster_f32`] | a cluster of 8 blocks of 256 | 32           |
//! | longer, or before sm_90 | [`softmax_chunk_stats_f32`] then [`softmax_chunk_write_f32`] | 256 per 8192-column chunk | 32, the row read twice |
//!
//! [`softmax_looped_f32`] (one block per row, the row read twice) is the one-kernel
//! alternative for long rows; with few rows it leaves most SMs idle.
//!
//! bf16 and f16 rows take the same steps (`softmax_aligned_bf16`, `softmax_cluster_f16`, ..;
//! [`SoftmaxElement`]): each element converted to f32 as it is loaded, the maximum, exps and
//! sum in f32, y rounded once as it is stored; vectors of 8 (16 bytes), the blocks' tiers to
//! 5120 and 8192 columns 128 × 40 and 256 × 32 (more rows an SM for half the bytes a row), a
//! tier of their own to 4096 columns ([`SoftmaxKernels::blocks`]), the five widths to 1024
//! columns as f32's ([`SoftmaxKernels::warps`]). Their warp
//! and block kernels hold the values in log2 units (x·log2 e), so that an exp is one
//! `ex2.approx.ftz` (`exp2_ftz`) where `expf` takes eight instructions: a 16-bit row moves half
//! the bytes of an f32 one for the same arithmetic, and the exp's error is far below the
//! rounding of y.
//!
//! Consecutive threads hold consecutive vectors of a row (vector j of thread t is vector
//! `j·THREADS + t` in the block-per-row kernels, `j·LANES + position` in a group of lanes), so
//! every load and store of a warp is one contiguous run per row, and any column count and
//! leading dimension works (4097 as well as 4096). The warps' kernels count vectors from each
//! row's start (`x.vector([r, i])`), which the launch narrows where the leading dimension is not
//! a multiple of the vector. The `softmax_aligned_*` kernels start each row's vectors at its
//! first 16-byte-aligned column (`x.align_offset([row, 0])`, `x.vector_at(..)`), the columns
//! before it and after the last whole vector one per thread, so rows of 4097 move in 16-byte
//! vectors; [`softmax_block_f32`] and [`softmax_block_wide_f32`] count vectors from each
//! row's start (`x.vector([r, i])`), which the launch narrows to single floats where the
//! leading dimension is not a multiple of 4.

use crate::prelude::*;
use crate::{Input, Output};

// The warp-per-row and the block-per-row kernels are each stamped at several row lengths and
// element types by a macro_rules! of their own: `ITEMS`, the block's threads, the element type
// and its vector are the only differences (`as f32` of an f32 renders as nothing).

// Rows to 1024 columns by groups of `LANES` lanes: a warp holds 32 / LANES rows side by side,
// a group each, each lane on vectors counted from the row's start (the launch narrows them
// where the leading dimension does not hold whole vectors), the columns after a row's last
// whole vector one a lane. Every load is issued before any value is used: a vector past the
// row's last (and a row past the last) loads that one again and counts as −∞ — a short
// 16-bit row is few bytes, and a warp must keep several in flight. The reductions are the
// groups' (`warp_max(m, LANES)`): a row of 128 in a group of 8 lanes takes 3 shuffle rounds,
// 4 rows at once, where a warp per row takes 5 for one. 16-bit values in log2 units
// (x·log2 e), so that an exp is one `ex2.approx.ftz`; f32 ones as they are, through `expf`.
macro_rules! softmax_warp_rows {
    // 16-bit: vectors of 8, values in log2 units
    ($(#[$doc:meta])* $name:ident, $t:ident, lanes = $lanes:tt, items = $items:tt) => {
        softmax_warp_rows!(@kernel $(#[$doc])* $name, $t, lanes = $lanes, items = $items, vector = 8,
            scale = [* 1.4426950408889634f32], exp = exp2_ftz);
    };
    // f32: vectors of 4, `exp` (expf) of the values as they are
    ($(#[$doc:meta])* $name:ident, f32, lanes = $lanes:tt, items = $items:tt, vector = 4) => {
        softmax_warp_rows!(@kernel $(#[$doc])* $name, f32, lanes = $lanes, items = $items, vector = 4,
            scale = [], exp = exp);
    };
    (@kernel $(#[$doc:meta])* $name:ident, $t:ident, lanes = $lanes:tt, items = $items:tt, vector = $vector:tt,
        scale = [$($scale:tt)*], exp = $exp:ident) => {
        $(#[$doc])*
        #[tile_kernel(threads = 256, vector = $vector, consts(WARP_ROWS = 8), fixed(LANES = $lanes, ITEMS = $items), require(WARP_ROWS * 32 == THREADS), require(VECTOR <= LANES), require(C <= LANES * ITEMS))]
        pub fn $name(x: Global<$t, (R, C)>, y: GlobalMut<$t, (R, C)>) {
            let (bx,) = grid(cdiv(R, WARP_ROWS * (32 / LANES)));
            // the row of this lane's group, and the lane's place in it
            let row = (bx * WARP_ROWS + warp_index()) * (32 / LANES) + lane() / LANES;
            let position = lane() % LANES;
            let vectors = C / VECTOR;
            let tail_column = vectors * VECTOR + position;
            let mut v = [-f32::INFINITY; ITEMS];
            let mut extra = -f32::INFINITY;
            let read_row = min(row, R - 1);
            if vectors > 0 {
                // this lane's j-th vector of the row is vector j·LANES + position
                for j in 0..ITEMS / VECTOR {
                    let w = x.vector([read_row, min(j * LANES + position, vectors - 1)]);
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k] as f32 $($scale)*;
                    }
                }
            }
            if tail_column < C {
                extra = x[[read_row, tail_column]] as f32 $($scale)*;
            }
            for j in 0..ITEMS / VECTOR {
                if j * LANES + position >= vectors {
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = -f32::INFINITY;
                    }
                }
            }
            // every group reduces (a row past the last repeats the last), so the warp's shuffles
            // stay whole; only real rows are stored
            let mut m = extra;
            for j in 0..ITEMS {
                m = max(m, v[j]);
            }
            let row_max = warp_max(m, LANES);
            let mut s = 0.0f32;
            for j in 0..ITEMS {
                v[j] = $exp(v[j] - row_max);
                s += v[j];
            }
            extra = $exp(extra - row_max);
            s += extra;
            let scale = 1.0f32 / warp_sum(s, LANES);
            if row < R {
                for j in 0..ITEMS / VECTOR {
                    let i = j * LANES + position;
                    if i < vectors {
                        let mut w = vector(0.0 as $t);
                        for k in 0..VECTOR {
                            w[k] = (v[j * VECTOR + k] * scale) as $t;
                        }
                        y.vector([row, i]) = w;
                    }
                }
                if tail_column < C {
                    y[[row, tail_column]] = (extra * scale) as $t;
                }
            }
        }
    };
}
// Rows to 1024 columns in five widths: a group of 8 lanes per row to 128 columns (4 rows a
// warp side by side), 16 to 256, the warp from 257; vectors of 16 bytes (4 f32, 8 bf16 or f16).
// On an H200 (% of the device copy) against a warp per row on single floats (f32) or vectors
// of 4 (16-bit), f32 / bf16: 131072 × 64 98 / 78% (73 / 42%), 32768 × 128 103 / 75% (96 /
// 64%), 32768 × 256 101 / 79% (50 / 40%), 32768 × 512 100 / 91% (75 / 70%), 16384 × 1024
// 100 / 91% (82 / 90%).
softmax_warp_rows!(
    /// Softmax of rows of up to 64 columns: a group of 8 lanes per row, 4 rows a warp, two
    /// vectors of 4 a lane.
    softmax_warp_64_f32, f32, lanes = 8, items = 8, vector = 4
);
softmax_warp_rows!(
    /// Softmax of rows of up to 128 columns: a group of 8 lanes per row, 4 rows a warp, four
    /// vectors of 4 a lane (on an H200 at 32768 × 128 103% of the device copy; a warp per row
    /// on single floats 96%, 16 lanes a row 98%).
    softmax_warp_f32, f32, lanes = 8, items = 16, vector = 4
);
softmax_warp_rows!(
    /// Softmax of rows of up to 256 columns: a group of 16 lanes per row, 2 rows a warp, four
    /// vectors of 4 a lane.
    softmax_warp_256_f32, f32, lanes = 16, items = 16, vector = 4
);
softmax_warp_rows!(
    /// Softmax of rows of up to 512 columns: a warp per row, four vectors of 4 a lane.
    softmax_warp_512_f32, f32, lanes = 32, items = 16, vector = 4
);
softmax_warp_rows!(
    /// Softmax of rows of up to 1024 columns: a warp per row, eight vectors of 4 a lane.
    softmax_warp_wide_f32, f32, lanes = 32, items = 32, vector = 4
);
softmax_warp_rows!(
    /// Softmax of bf16 rows of up to 64 columns (f32 arithmetic, y rounded once): a group of 8
    /// lanes per row, 4 rows a warp side by side, a vector of 8 a lane.
    softmax_warp_64_bf16, bf16, lanes = 8, items = 8
);
softmax_warp_rows!(
    /// Softmax of bf16 rows of up to 128 columns: a group of 8 lanes per row, 4 rows a warp,
    /// two vectors of 8 a lane (on an H200 at 32768 × 128 75% of the device copy; a warp per
    /// row on vectors of 4 64%, 2 and 4 rows a group one after the other 72 and 67%).
    softmax_warp_bf16, bf16, lanes = 8, items = 16
);
softmax_warp_rows!(
    /// Softmax of bf16 rows of up to 256 columns: a group of 16 lanes per row, 2 rows a warp,
    /// two vectors of 8 a lane.
    softmax_warp_256_bf16, bf16, lanes = 16, items = 16
);
softmax_warp_rows!(
    /// Softmax of bf16 rows of up to 512 columns: a warp per row, two vectors of 8 a lane.
    softmax_warp_512_bf16, bf16, lanes = 32, items = 16
);
softmax_warp_rows!(
    /// Softmax of bf16 rows of up to 1024 columns: a warp per row, four vectors of 8 a lane.
    softmax_warp_wide_bf16, bf16, lanes = 32, items = 32
);
softmax_warp_rows!(
    /// [`softmax_warp_64_bf16`] on f16 rows.
    softmax_warp_64_f16, f16, lanes = 8, items = 8
);
softmax_warp_rows!(
    /// [`softmax_warp_bf16`] on f16 rows.
    softmax_warp_f16, f16, lanes = 8, items = 16
);
softmax_warp_rows!(
    /// [`softmax_warp_256_bf16`] on f16 rows.
    softmax_warp_256_f16, f16, lanes = 16, items = 16
);
softmax_warp_rows!(
    /// [`softmax_warp_512_bf16`] on f16 rows.
    softmax_warp_512_f16, f16, lanes = 32, items = 16
);
softmax_warp_rows!(
    /// [`softmax_warp_wide_bf16`] on f16 rows.
    softmax_warp_wide_f16, f16, lanes = 32, items = 32
);

macro_rules! softmax_block_per_row {
    ($(#[$doc:meta])* $name:ident, threads = $threads:tt, items = $items:tt) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = 4, fixed(ITEMS = $items), require(C <= ITEMS * THREADS))]
        pub fn $name(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R, C)>) {
            let (row,) = grid(R);
            let mut v = [-f32::INFINITY; ITEMS];
            let mut m = -f32::INFINITY;
            // this thread's j-th vector of the row is vector j·THREADS + t: columns
            // (j·THREADS + t)·VECTOR ..; a vector past the row's end is loaded element by element
            for j in 0..ITEMS / VECTOR {
                let i = j * THREADS + thread_index();
                if (i + 1) * VECTOR <= C {
                    let w = x.vector([row, i]);
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k];
                        m = max(m, w[k]);
                    }
                } else {
                    for k in 0..VECTOR {
                        if i * VECTOR + k < C {
                            v[j * VECTOR + k] = x[[row, i * VECTOR + k]];
                            m = max(m, v[j * VECTOR + k]);
                        }
                    }
                }
            }
            let row_max = block_max(m);
            let mut s = 0.0f32;
            for j in 0..ITEMS {
                v[j] = exp(v[j] - row_max);
                s += v[j];
            }
            let scale = 1.0f32 / block_sum(s);
            for j in 0..ITEMS / VECTOR {
                let i = j * THREADS + thread_index();
                if (i + 1) * VECTOR <= C {
                    let mut w = vector(0.0f32);
                    for k in 0..VECTOR {
                        w[k] = v[j * VECTOR + k] * scale;
                    }
                    y.vector([row, i]) = w;
                } else {
                    for k in 0..VECTOR {
                        if i * VECTOR + k < C {
                            y[[row, i * VECTOR + k]] = v[j * VECTOR + k] * scale;
                        }
                    }
                }
            }
        }
    };
}
softmax_block_per_row!(
    /// Softmax of rows of up to 8192 columns: a block of 256 threads per row. Small blocks keep
    /// several rows per SM in different phases (loading, reducing, storing), so loads stay in
    /// flight while other rows wait at their barriers.
    softmax_block_f32, threads = 256, items = 32
);
softmax_block_per_row!(
    /// Softmax of rows of up to 32768 columns: a block of 1024 threads per row, 32 elements each.
    softmax_block_wide_f32, threads = 1024, items = 32
);

// Block-per-row softmax from each row's own alignment: rows whose leading dimension is not a
// multiple of VECTOR (4097 columns) still move in 16-byte vectors, where the kernels above
// narrow to single floats. Stamped at four row lengths (5120, 8192, 16384, 32768 columns) and
// three element types; the 16-bit ones scale the values to log2 units as they load them
// (`scale`) and take `exp2_ftz` for `exp`.
macro_rules! softmax_block_per_aligned_row {
    // f32: each vector's load guarded by its test (ptxas predicates them)
    ($(#[$doc:meta])* $name:ident, f32, vector = $vector:tt, threads = $threads:tt, items = $items:tt) => {
        softmax_block_per_aligned_row!(@kernel $(#[$doc])* $name, f32, $vector, $threads, $items, scale = [], exp = exp,
            loads = [
                let mut m = extra;
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        let w = x.vector_at([row, head + i * VECTOR]);
                        for k in 0..VECTOR {
                            v[j * VECTOR + k] = w[k];
                            m = max(m, v[j * VECTOR + k]);
                        }
                    }
                }
            ]);
    };
    // 16-bit: values in log2 units, and a vector past the row's last loads that one again and
    // counts as −∞, so that no load waits behind a test: with the conversions inside the tests
    // ptxas branched around each load, and each waited for the one before it (8192² bf16:
    // 84% → 93% of the device copy on an H200)
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt, threads = $threads:tt, items = $items:tt) => {
        softmax_block_per_aligned_row!(@kernel $(#[$doc])* $name, $t, $vector, $threads, $items,
            scale = [* 1.4426950408889634f32], exp = exp2_ftz,
            loads = [
                if vectors > 0 {
                    for j in 0..ITEMS / VECTOR {
                        let i = min(j * THREADS + thread_index(), vectors - 1);
                        let w = x.vector_at([row, head + i * VECTOR]);
                        for k in 0..VECTOR {
                            v[j * VECTOR + k] = w[k] as f32 * 1.4426950408889634f32;
                        }
                    }
                    for j in 0..ITEMS / VECTOR {
                        if j * THREADS + thread_index() >= vectors {
                            for k in 0..VECTOR {
                                v[j * VECTOR + k] = -f32::INFINITY;
                            }
                        }
                    }
                }
                let mut m = extra;
                for j in 0..ITEMS {
                    m = max(m, v[j]);
                }
            ]);
    };
    (@kernel $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $threads:tt, $items:tt,
        scale = [$($scale:tt)*], exp = $exp:ident, loads = [$($loads:tt)*]) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = $vector, fixed(ITEMS = $items), require(THREADS >= 2 * VECTOR), require(C <= ITEMS * THREADS))]
        pub fn $name(x: Global<$t, (R, C)>, y: GlobalMut<$t, (R, C)>) {
            let (row,) = grid(R);
            // the row's columns before its first 16-byte boundary (head), its whole vectors from
            // there, and the columns after the last one (tail): threads 0.. take the head's
            // columns one each, threads VECTOR.. the tail's, as one extra element
            let head = min(x.align_offset([row, 0]), C);
            let vectors = (C - head) / VECTOR;
            let tail = head + vectors * VECTOR;
            let mut extra_column = -1;
            if thread_index() < head {
                extra_column = thread_index();
            }
            if thread_index() >= VECTOR && thread_index() - VECTOR < C - tail {
                extra_column = tail + thread_index() - VECTOR;
            }
            let mut extra = -f32::INFINITY;
            if extra_column >= 0 {
                extra = x[[row, extra_column]] as f32 $($scale)*;
            }
            let mut v = [-f32::INFINITY; ITEMS];
            // this thread's j-th vector is the row's vector j·THREADS + t from the boundary
            $($loads)*
            let row_max = block_max(m);
            let mut s = 0.0f32;
            for j in 0..ITEMS {
                v[j] = $exp(v[j] - row_max);
                s += v[j];
            }
            extra = $exp(extra - row_max);
            s += extra;
            let scale = 1.0f32 / block_sum(s);
            if extra_column >= 0 {
                y[[row, extra_column]] = (extra * scale) as $t;
            }
            if y.align_offset([row, 0]) == head {
                // y's row starts as x's does (the same alignment and leading dimension)
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        let mut w = vector(0.0 as $t);
                        for k in 0..VECTOR {
                            w[k] = (v[j * VECTOR + k] * scale) as $t;
                        }
                        y.vector_at([row, head + i * VECTOR]) = w;
                    }
                }
            } else {
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        for k in 0..VECTOR {
                            y[[row, head + i * VECTOR + k]] = (v[j * VECTOR + k] * scale) as $t;
                        }
                    }
                }
            }
        }
    };
}
softmax_block_per_aligned_row!(
    /// Softmax of rows of up to 2048 columns: a block of 64 threads (two warps) per row, 32
    /// elements each, in 16-byte vectors from each row's first aligned column (as the norms'
    /// `*_block_2048_*`: on an H200 16-bit LayerNorm at 16384 × 2048 went from 71% of the device
    /// copy on 128-thread blocks to 95%).
    softmax_aligned_2048_f32, f32, vector = 4, threads = 64, items = 32
);
softmax_block_per_aligned_row!(
    /// Softmax of rows of up to 3072 columns, a block of 96 threads per row, 32 elements each
    /// (on an H200 at 16384 × 2304 / 2560 and 8192 × 3072: f32 99.0 / 99.0 / 100.0% of the
    /// device copy, bf16 94.2 / 97.1 / 97.1%, where [`softmax_aligned_short_f32`]'s blocks —
    /// 256 × 20, 128 × 40 for 16-bit rows, half their threads idle at 2560 — gave 91.5 / 96.1 /
    /// 99.4% and 71.0 / 76.7 / 84.9%).
    softmax_aligned_3072_f32, f32, vector = 4, threads = 96, items = 32
);
softmax_block_per_aligned_row!(
    /// Softmax of rows of up to 5120 columns, a block of 256 threads per row, 20 elements each,
    /// in 16-byte vectors from each row's first aligned column: rows of 4097 fill 80% of the
    /// registers where [`softmax_block_f32`] fills half, and keep vectors where it narrows.
    softmax_aligned_short_f32, f32, vector = 4, threads = 256, items = 20
);
softmax_block_per_aligned_row!(
    /// Softmax of rows of up to 8192 columns in 16-byte vectors from each row's first aligned
    /// column, whatever the leading dimension: a block of 512 threads per row, 16 elements
    /// each — 32 registers, so four blocks (every warp slot) per SM, where 256 × 32 takes 48
    /// and five (98.1–98.3% of the device copy at 8192² on an H200, against 96.9–97.2%).
    softmax_aligned_f32, f32, vector = 4, threads = 512, items = 16
);
softmax_block_per_aligned_row!(
    /// Softmax of rows of up to 16384 columns: 512 threads × 32 elements, two blocks an SM
    /// (the norms' wide tier went from 77% to 94% of the device copy at 16384 columns this way).
    softmax_aligned_long_f32, f32, vector = 4, threads = 512, items = 32
);
softmax_block_per_aligned_row!(
    /// Softmax of rows of up to 32768 columns like [`softmax_block_wide_f32`], in 16-byte
    /// vectors from each row's first aligned column.
    softmax_aligned_wide_f32, f32, vector = 4, threads = 1024, items = 32
);
// 16-bit rows: half the bytes of an f32 row in as many elements, so smaller blocks with more
// elements a thread keep as many bytes in flight per SM (more rows at once, each in its own
// phase); the wide tiers as the f32 ones
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_2048_f32`] on bf16 rows: 64 threads × 32 elements (four vectors of 8).
    softmax_aligned_2048_bf16, bf16, vector = 8, threads = 64, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_2048_f32`] on f16 rows.
    softmax_aligned_2048_f16, f16, vector = 8, threads = 64, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_3072_f32`] on bf16 rows: 96 threads × 32 elements (four vectors of 8).
    softmax_aligned_3072_bf16, bf16, vector = 8, threads = 96, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_3072_f32`] on f16 rows.
    softmax_aligned_3072_f16, f16, vector = 8, threads = 96, items = 32
);
softmax_block_per_aligned_row!(
    /// Softmax of bf16 rows of up to 4096 columns, a block of 128 threads per row, 32 elements
    /// each (four vectors of 8; 48 registers, 10 blocks an SM on sm_90, where 128 × 40 takes 56
    /// and 9) — on an H200 at 16384 × 3200 / 16384 × 3584 / 8192 × 3840 / 8192 × 4096 95.7 /
    /// 97.7 / 99.4 / 98.5% of the device copy, where [`softmax_aligned_short_bf16`] (128 × 40)
    /// gave 89.5 / 94.8 / 97.0 / 97.6%. f32 rows have no such tier: 128 × 32 was level within a
    /// point with [`softmax_aligned_short_f32`] there and 1–2 points behind at 3840
    /// (BENCHMARKS.md).
    softmax_aligned_4096_bf16, bf16, vector = 8, threads = 128, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_4096_bf16`] on f16 rows.
    softmax_aligned_4096_f16, f16, vector = 8, threads = 128, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_short_f32`] on bf16 rows: 128 threads × 40 elements (five vectors of
    /// 8), 9 blocks an SM — on an H200 4096 × 4096 at 89% of the device copy where 256 × 24
    /// (6 blocks) gave 76%, 4096 × 4097 81% against 71%.
    softmax_aligned_short_bf16, bf16, vector = 8, threads = 128, items = 40
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_f32`] on bf16 rows: 256 threads × 32 elements, 5 blocks an SM (8192²
    /// at 97–98% of the device copy on an H200, where 512 × 16 gave 93%).
    softmax_aligned_bf16, bf16, vector = 8, threads = 256, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_long_f32`] on bf16 rows.
    softmax_aligned_long_bf16, bf16, vector = 8, threads = 512, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_wide_f32`] on bf16 rows.
    softmax_aligned_wide_bf16, bf16, vector = 8, threads = 1024, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_short_bf16`] on f16 rows.
    softmax_aligned_short_f16, f16, vector = 8, threads = 128, items = 40
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_bf16`] on f16 rows.
    softmax_aligned_f16, f16, vector = 8, threads = 256, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_long_f32`] on f16 rows.
    softmax_aligned_long_f16, f16, vector = 8, threads = 512, items = 32
);
softmax_block_per_aligned_row!(
    /// [`softmax_aligned_wide_f32`] on f16 rows.
    softmax_aligned_wide_f16, f16, vector = 8, threads = 1024, items = 32
);

/// Softmax of rows of any length in one kernel: a block per row reads it twice — once for the maximum
/// and the sum (kept together, online: the sum is rescaled when the maximum grows), once to
/// write — so it moves 3 row-lengths where the others move 2.
#[tile_kernel(threads = 1024, vector = 1)]
pub fn softmax_looped_f32(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R, C)>) {
    let (row,) = grid(R);
    let mut m = -f32::INFINITY;
    let mut s = 0.0f32;
    for c in (thread_index()..C).step_by(THREADS) {
        let v = x[[row, c]];
        let grown = max(m, v);
        s = s * exp(m - grown) + exp(v - grown);
        m = grown;
    }
    let row_max = block_max(m);
    // a thread that saw no column has m = -inf and s = 0: its share stays 0
    let mut share = 0.0f32;
    if s > 0.0f32 {
        share = s * exp(m - row_max);
    }
    let scale = 1.0f32 / block_sum(share);
    for c in (thread_index()..C).step_by(THREADS) {
        y[[row, c]] = exp(x[[row, c]] - row_max) * scale;
    }
}

macro_rules! softmax_cluster {
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt) => {
        $(#[$doc])*
        #[tile_kernel(threads = 256, vector = $vector, cluster = 8, target = sm_90, fixed(ITEMS = 32, BLOCKS = 8), require(C <= BLOCKS * THREADS * ITEMS))]
        pub fn $name(x: Global<$t, (R, C)>, y: GlobalMut<$t, (R, C)>) {
            // the grid's x is the cluster: BLOCKS blocks per row, whatever the row's length
            let (chunk, row) = grid(BLOCKS, R);
            let first = chunk * (THREADS * ITEMS / VECTOR);
            // every load issued before any value is used (one block an SM has no other warps to hide
            // a wait): no test per vector where all the block's columns are in the row, and the maximum
            // taken after the loads — inside their loop, each vector was waited for before the next
            let mut v = [-f32::INFINITY; ITEMS];
            if (first + THREADS * ITEMS / VECTOR) * VECTOR <= C {
                for j in 0..ITEMS / VECTOR {
                    let w = x.vector([row, first + j * THREADS + thread_index()]);
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k] as f32;
                    }
                }
            } else {
                for j in 0..ITEMS / VECTOR {
                    let i = first + j * THREADS + thread_index();
                    if (i + 1) * VECTOR <= C {
                        let w = x.vector([row, i]);
                        for k in 0..VECTOR {
                            v[j * VECTOR + k] = w[k] as f32;
                        }
                    } else {
                        for k in 0..VECTOR {
                            if i * VECTOR + k < C {
                                v[j * VECTOR + k] = x[[row, i * VECTOR + k]] as f32;
                            }
                        }
                    }
                }
            }
            let mut m = -f32::INFINITY;
            for j in 0..ITEMS {
                m = max(m, v[j]);
            }
            // a thread whose values are all −∞ (or past the row's end) holds zeros, its sum 0 (the test
            // outside the loops: inside, each exp is a branch of its own and the 32 run one by one)
            let mut s = 0.0f32;
            if m > -f32::INFINITY {
                for j in 0..ITEMS {
                    v[j] = exp(v[j] - m);
                    s += v[j];
                }
            } else {
                for j in 0..ITEMS {
                    v[j] = 0.0;
                }
            }
            let scale = cluster_softmax_scale(m, s);
            if (first + THREADS * ITEMS / VECTOR) * VECTOR <= C {
                for j in 0..ITEMS / VECTOR {
                    let mut w = vector(0.0 as $t);
                    for k in 0..VECTOR {
                        w[k] = (v[j * VECTOR + k] * scale) as $t;
                    }
                    y.vector([row, first + j * THREADS + thread_index()]) = w;
                }
            } else {
                for j in 0..ITEMS / VECTOR {
                    let i = first + j * THREADS + thread_index();
                    if (i + 1) * VECTOR <= C {
                        let mut w = vector(0.0 as $t);
                        for k in 0..VECTOR {
                            w[k] = (v[j * VECTOR + k] * scale) as $t;
                        }
                        y.vector([row, i]) = w;
                    } else {
                        for k in 0..VECTOR {
                            if i * VECTOR + k < C {
                                y[[row, i * VECTOR + k]] = (v[j * VECTOR + k] * scale) as $t;
                            }
                        }
                    }
                }
            }
        }
    };
}
softmax_cluster!(
    /// Softmax of rows of up to 65536 columns in one kernel, each row read once and written once:
    /// a cluster of 8 blocks per row (sm_90's thread-block clusters), block `chunk` holding columns
    /// `chunk · 8192 ..` in registers. Each thread exponentiates its values against its own
    /// maximum as soon as they are loaded; `cluster_softmax_scale` then combines the threads'
    /// (maximum, sum) pairs — each block's, pushed into every block of the cluster in one exchange —
    /// into the factor that rescales them, so that after the exchange a value takes one
    /// multiplication (on an H200 at 16 × 65536 56% of the device copy became 68–70% with the
    /// pairs read from each block's shared memory, against the maximum, then the exps, then the sum
    /// in two exchanges; `benchmarks/lab/rows/cluster.cu`, BENCHMARKS.md).
    /// A few long rows fill the GPU (16 rows of 65536: 128 blocks), where the chunked kernels need
    /// two launches and read the row twice.
    softmax_cluster_f32, f32, vector = 4
);
softmax_cluster!(
    /// [`softmax_cluster_f32`] on bf16 rows (f32 arithmetic, y rounded once): four vectors of 8 a
    /// thread.
    softmax_cluster_bf16, bf16, vector = 8
);
softmax_cluster!(
    /// [`softmax_cluster_f32`] on f16 rows.
    softmax_cluster_f16, f16, vector = 8
);

/// The longest row [`softmax_aligned_short_f32`] holds: its THREADS × ITEMS.
pub const SHORT_COLUMNS: usize =
    (softmax_aligned_short_f32::THREADS.0 as i64 * softmax_aligned_short_f32::ITEMS) as usize;

/// The longest row [`softmax_cluster_f32`] holds: its cluster's blocks × their threads × ITEMS.
pub const CLUSTER_COLUMNS: usize =
    (softmax_cluster_f32::BLOCKS * softmax_cluster_f32::THREADS.0 as i64 * softmax_cluster_f32::ITEMS) as usize;

/// The columns one block of the chunked softmax holds: THREADS × ITEMS of its kernels (their
/// `CHUNK`, which the two must agree on).
pub const CHUNK: usize = softmax_chunk_stats_f32::CHUNK as usize;
const _: () = assert!(softmax_chunk_stats_f32::CHUNK == softmax_chunk_write_f32::CHUNK);
// the 16-bit kernels hold at least the rows the f32 ones do where their tables share a limit
const _: () = {
    assert!(softmax_aligned_short_bf16::THREADS.0 as i64 * softmax_aligned_short_bf16::ITEMS >= SHORT_COLUMNS as i64);
    assert!(softmax_aligned_short_f16::THREADS.0 as i64 * softmax_aligned_short_f16::ITEMS >= SHORT_COLUMNS as i64);
    assert!(
        softmax_cluster_bf16::BLOCKS * softmax_cluster_bf16::THREADS.0 as i64 * softmax_cluster_bf16::ITEMS
            == CLUSTER_COLUMNS as i64
    );
    assert!(
        softmax_cluster_f16::BLOCKS * softmax_cluster_f16::THREADS.0 as i64 * softmax_cluster_f16::ITEMS
            == CLUSTER_COLUMNS as i64
    );
    assert!(softmax_chunk_stats_bf16::CHUNK == CHUNK as i64 && softmax_chunk_write_bf16::CHUNK == CHUNK as i64);
    assert!(softmax_chunk_stats_f16::CHUNK == CHUNK as i64 && softmax_chunk_write_f16::CHUNK == CHUNK as i64);
};

macro_rules! softmax_chunked {
    ($(#[$stats_doc:meta])* $stats:ident, $(#[$write_doc:meta])* $write:ident, $t:ident, vector = $vector:tt) => {
        $(#[$stats_doc])*
        #[tile_kernel(threads = 256, vector = $vector, fixed(ITEMS = 32, CHUNK = 8192))]
        pub fn $stats(x: Global<$t, (R, C)>, maxima: GlobalMut<f32, (R, S)>, sums: GlobalMut<f32, (R, S)>) {
            let (chunk, row) = grid(S, R);
            let first = chunk * (CHUNK / VECTOR);
            let mut v = [-f32::INFINITY; ITEMS];
            let mut m = -f32::INFINITY;
            for j in 0..ITEMS / VECTOR {
                let i = first + j * THREADS + thread_index();
                if (i + 1) * VECTOR <= C {
                    let w = x.vector([row, i]);
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k] as f32;
                        m = max(m, v[j * VECTOR + k]);
                    }
                } else {
                    for k in 0..VECTOR {
                        if i * VECTOR + k < C {
                            v[j * VECTOR + k] = x[[row, i * VECTOR + k]] as f32;
                            m = max(m, v[j * VECTOR + k]);
                        }
                    }
                }
            }
            let chunk_max = block_max(m);
            // a chunk of −∞ alone (a masked run of the row) adds nothing to the row's sum, where
            // exp(−∞ − (−∞)) would make it NaN
            let mut reference = chunk_max;
            if chunk_max == -f32::INFINITY {
                reference = 0.0;
            }
            let mut s = 0.0f32;
            for j in 0..ITEMS {
                s += exp(v[j] - reference);
            }
            let chunk_sum = block_sum(s);
            if thread_index() == 0 {
                maxima[[row, chunk]] = chunk_max;
                sums[[row, chunk]] = chunk_sum;
            }
        }

        $(#[$write_doc])*
        #[tile_kernel(threads = 256, vector = $vector, fixed(ITEMS = 32, CHUNK = 8192))]
        pub fn $write(
            x: Global<$t, (R, C)>,
            maxima: Global<f32, (R, S)>,
            sums: Global<f32, (R, S)>,
            y: GlobalMut<$t, (R, C)>,
        ) {
            let (chunk, row) = grid(S, R);
            let mut row_max = -f32::INFINITY;
            for j in 0..S {
                row_max = max(row_max, maxima[[row, j]]);
            }
            let mut total = 0.0f32;
            for j in 0..S {
                total += sums[[row, j]] * exp(maxima[[row, j]] - row_max);
            }
            let scale = 1.0f32 / total;
            let first = chunk * (CHUNK / VECTOR);
            for j in 0..ITEMS / VECTOR {
                let i = first + j * THREADS + thread_index();
                if (i + 1) * VECTOR <= C {
                    let w = x.vector([row, i]);
                    let mut out = vector(0.0 as $t);
                    for k in 0..VECTOR {
                        out[k] = (exp(w[k] as f32 - row_max) * scale) as $t;
                    }
                    y.vector([row, i]) = out;
                } else {
                    for k in 0..VECTOR {
                        let c = i * VECTOR + k;
                        if c < C {
                            y[[row, c]] = (exp(x[[row, c]] as f32 - row_max) * scale) as $t;
                        }
                    }
                }
            }
        }
    };
}
softmax_chunked!(
    /// Pass 1 of the softmax of long rows, split over blocks so that a few rows still fill the
    /// GPU: block (chunk, row) holds `CHUNK` columns of the row in registers and writes their
    /// maximum and the sum of exp(x − that maximum) to `maxima` and `sums` (S = the chunks per row).
    softmax_chunk_stats_f32,
    /// Pass 2: every block combines its row's `S` maxima and sums (in chunk order, so every block
    /// of a row computes the same scale), reads its chunk of x again and writes y.
    softmax_chunk_write_f32,
    f32, vector = 4
);
softmax_chunked!(
    /// [`softmax_chunk_stats_f32`] on bf16 rows.
    softmax_chunk_stats_bf16,
    /// [`softmax_chunk_write_f32`] on bf16 rows.
    softmax_chunk_write_bf16,
    bf16, vector = 8
);
softmax_chunked!(
    /// [`softmax_chunk_stats_f32`] on f16 rows.
    softmax_chunk_stats_f16,
    /// [`softmax_chunk_write_f32`] on f16 rows.
    softmax_chunk_write_f16,
    f16, vector = 8
);

/// The kernels [`softmax`] takes for one element type, by row length (the table above).
#[derive(Clone, Copy)]
pub struct SoftmaxKernels {
    /// Rows to 1024 columns, a warp or a group of its lanes per row: (the most columns, the
    /// kernel), by width; a row takes the first that holds it.
    pub warps: &'static [(usize, &'static crate::KernelDefinition)],
    /// Rows of 1025 to 32768 columns, a block per row from each row's first aligned column
    /// (`softmax_aligned_*`): (the most columns, the kernel), by width; a row takes the first
    /// that holds it. 64 threads to 2048 columns, 96 to 3072, for 16-bit rows 128 to 4096
    /// (measured ahead of the next tier there; f32's level or behind), 256 (128 for 16-bit rows)
    /// to [`SHORT_COLUMNS`], 512 (256) to 8192, 512 × 32 to 16384, 1024 × 32 to 32768.
    pub blocks: &'static [(usize, &'static crate::KernelDefinition)],
    /// A cluster of 8 blocks per row (sm_90), to [`CLUSTER_COLUMNS`].
    pub cluster: &'static crate::KernelDefinition,
    /// Longer rows (or no clusters): each chunk's statistics, ..
    pub chunk_stats: &'static crate::KernelDefinition,
    /// .. then the chunks written.
    pub chunk_write: &'static crate::KernelDefinition,
}

/// Element types the softmax takes: f32, bf16 and f16. 16-bit rows are converted to f32 as
/// they are loaded, and y rounded once as it is stored (the maximum, the exps and the sum in
/// f32, as `torch.softmax` does on bf16 tensors).
pub trait SoftmaxElement: crate::runtime::Element {
    /// This type's kernels.
    const KERNELS: SoftmaxKernels;
}

impl SoftmaxElement for f32 {
    const KERNELS: SoftmaxKernels = SoftmaxKernels {
        warps: &[
            (64, &softmax_warp_64_f32::KERNEL),
            (128, &softmax_warp_f32::KERNEL),
            (256, &softmax_warp_256_f32::KERNEL),
            (512, &softmax_warp_512_f32::KERNEL),
            (1024, &softmax_warp_wide_f32::KERNEL),
        ],
        blocks: &[
            (2048, &softmax_aligned_2048_f32::KERNEL),
            (3072, &softmax_aligned_3072_f32::KERNEL),
            (SHORT_COLUMNS, &softmax_aligned_short_f32::KERNEL),
            (8192, &softmax_aligned_f32::KERNEL),
            (16384, &softmax_aligned_long_f32::KERNEL),
            (32768, &softmax_aligned_wide_f32::KERNEL),
        ],
        cluster: &softmax_cluster_f32::KERNEL,
        chunk_stats: &softmax_chunk_stats_f32::KERNEL,
        chunk_write: &softmax_chunk_write_f32::KERNEL,
    };
}

impl SoftmaxElement for bf16 {
    const KERNELS: SoftmaxKernels = SoftmaxKernels {
        warps: &[
            (64, &softmax_warp_64_bf16::KERNEL),
            (128, &softmax_warp_bf16::KERNEL),
            (256, &softmax_warp_256_bf16::KERNEL),
            (512, &softmax_warp_512_bf16::KERNEL),
            (1024, &softmax_warp_wide_bf16::KERNEL),
        ],
        blocks: &[
            (2048, &softmax_aligned_2048_bf16::KERNEL),
            (3072, &softmax_aligned_3072_bf16::KERNEL),
            (4096, &softmax_aligned_4096_bf16::KERNEL),
            (SHORT_COLUMNS, &softmax_aligned_short_bf16::KERNEL),
            (8192, &softmax_aligned_bf16::KERNEL),
            (16384, &softmax_aligned_long_bf16::KERNEL),
            (32768, &softmax_aligned_wide_bf16::KERNEL),
        ],
        cluster: &softmax_cluster_bf16::KERNEL,
        chunk_stats: &softmax_chunk_stats_bf16::KERNEL,
        chunk_write: &softmax_chunk_write_bf16::KERNEL,
    };
}

impl SoftmaxElement for f16 {
    const KERNELS: SoftmaxKernels = SoftmaxKernels {
        warps: &[
            (64, &softmax_warp_64_f16::KERNEL),
            (128, &softmax_warp_f16::KERNEL),
            (256, &softmax_warp_256_f16::KERNEL),
            (512, &softmax_warp_512_f16::KERNEL),
            (1024, &softmax_warp_wide_f16::KERNEL),
        ],
        blocks: &[
            (2048, &softmax_aligned_2048_f16::KERNEL),
            (3072, &softmax_aligned_3072_f16::KERNEL),
            (4096, &softmax_aligned_4096_f16::KERNEL),
            (SHORT_COLUMNS, &softmax_aligned_short_f16::KERNEL),
            (8192, &softmax_aligned_f16::KERNEL),
            (16384, &softmax_aligned_long_f16::KERNEL),
            (32768, &softmax_aligned_wide_f16::KERNEL),
        ],
        cluster: &softmax_cluster_f16::KERNEL,
        chunk_stats: &softmax_chunk_stats_f16::KERNEL,
        chunk_write: &softmax_chunk_write_f16::KERNEL,
    };
}

/// The softmax of every row of `x` (rows × columns) into `y`, f32, bf16 or f16, with the
/// kernel for the row length (see the table above); returns what was launched.
///
/// ```ignore
/// let x = backend.upload(&logits, [rows, cols])?;
/// let mut y = backend.zeros::<f32>([rows, cols])?;
/// tessera::catalog::softmax::softmax(&backend, &x, &mut y)?;
/// ```
pub fn softmax<T: SoftmaxElement>(
    device: &impl crate::Device,
    x: &impl Input<T>,
    y: &mut impl Output<T>,
) -> Result<crate::Launched, Error> {
    let (rows, columns) = match x.shape() {
        &[rows, columns] => (rows, columns),
        _ => (0, 0),
    };
    let kernel = kernel_for::<T>(device, columns);
    if kernel.name() != T::KERNELS.chunk_write.name() {
        return kernel.launch(device, &mut [crate::Argument::input("x", x), crate::Argument::output("y", y)]);
    }
    // long rows: the chunks' statistics into a workspace, then the rows written chunk by chunk
    let chunks = columns.div_ceil(CHUNK);
    let workspace = device.device_ref();
    let (mut maxima, mut sums) = (workspace.zeros::<f32>([rows, chunks])?, workspace.zeros::<f32>([rows, chunks])?);
    T::KERNELS.chunk_stats.launch(
        device,
        &mut [
            crate::Argument::input("x", x),
            crate::Argument::output("maxima", &mut maxima),
            crate::Argument::output("sums", &mut sums),
        ],
    )?;
    kernel.launch(
        device,
        &mut [
            crate::Argument::input("x", x),
            crate::Argument::input("maxima", &maxima),
            crate::Argument::input("sums", &sums),
            crate::Argument::output("y", y),
        ],
    )
}

/// The kernel [`softmax`] takes on `device` for rows of `columns` elements of `T`: the cluster
/// kernel needs sm_90 (the simulation runs it as an H100 would).
///
/// ```
/// use tessera::catalog::softmax;
/// # fn main() -> Result<(), tessera::Error> {
/// let simulator = tessera::Simulator::new()?;
/// assert_eq!(softmax::kernel_for::<f32>(&simulator, 4096).name(), "softmax_aligned_short_f32");
/// assert_eq!(softmax::kernel_for::<half::bf16>(&simulator, 65536).name(), "softmax_cluster_bf16");
/// # Ok(())
/// # }
/// ```
pub fn kernel_for<T: SoftmaxElement>(device: &impl crate::Device, columns: usize) -> &'static crate::KernelDefinition {
    kernel_for_columns::<T>(columns, super::runs_sm_90(device))
}

/// The kernel for rows of `columns` elements of `T` on a device that runs thread-block
/// clusters (`clusters`: sm_90 and newer) or not.
///
/// ```
/// use tessera::catalog::softmax::kernel_for_columns;
/// assert_eq!(kernel_for_columns::<f32>(4096, true).name(), "softmax_aligned_short_f32");
/// assert_eq!(kernel_for_columns::<half::bf16>(4096, true).name(), "softmax_aligned_4096_bf16");
/// assert_eq!(kernel_for_columns::<f32>(65536, true).name(), "softmax_cluster_f32");
/// assert_eq!(kernel_for_columns::<half::f16>(65536, false).name(), "softmax_chunk_write_f16");
/// ```
pub fn kernel_for_columns<T: SoftmaxElement>(columns: usize, clusters: bool) -> &'static crate::KernelDefinition {
    let kernels = T::KERNELS;
    // a warp or a group of lanes per row to 1024 columns, a block per row to 32768
    let by_width =
        super::narrowest_holding(kernels.warps, columns).or_else(|| super::narrowest_holding(kernels.blocks, columns));
    match by_width {
        Some(kernel) => kernel,
        None if clusters && columns <= CLUSTER_COLUMNS => kernels.cluster,
        // pass 2 of two: the chunks' statistics run first
        None => kernels.chunk_write,
    }
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 47] = [
    &softmax_warp_64_f32::KERNEL,
    &softmax_warp_f32::KERNEL,
    &softmax_warp_256_f32::KERNEL,
    &softmax_warp_512_f32::KERNEL,
    &softmax_warp_wide_f32::KERNEL,
    &softmax_block_f32::KERNEL,
    &softmax_block_wide_f32::KERNEL,
    &softmax_aligned_2048_f32::KERNEL,
    &softmax_aligned_3072_f32::KERNEL,
    &softmax_aligned_short_f32::KERNEL,
    &softmax_aligned_f32::KERNEL,
    &softmax_aligned_long_f32::KERNEL,
    &softmax_aligned_wide_f32::KERNEL,
    &softmax_looped_f32::KERNEL,
    &softmax_cluster_f32::KERNEL,
    &softmax_chunk_stats_f32::KERNEL,
    &softmax_chunk_write_f32::KERNEL,
    &softmax_warp_64_bf16::KERNEL,
    &softmax_warp_bf16::KERNEL,
    &softmax_warp_256_bf16::KERNEL,
    &softmax_warp_512_bf16::KERNEL,
    &softmax_warp_wide_bf16::KERNEL,
    &softmax_aligned_2048_bf16::KERNEL,
    &softmax_aligned_3072_bf16::KERNEL,
    &softmax_aligned_4096_bf16::KERNEL,
    &softmax_aligned_short_bf16::KERNEL,
    &softmax_aligned_bf16::KERNEL,
    &softmax_aligned_long_bf16::KERNEL,
    &softmax_aligned_wide_bf16::KERNEL,
    &softmax_cluster_bf16::KERNEL,
    &softmax_chunk_stats_bf16::KERNEL,
    &softmax_chunk_write_bf16::KERNEL,
    &softmax_warp_64_f16::KERNEL,
    &softmax_warp_f16::KERNEL,
    &softmax_warp_256_f16::KERNEL,
    &softmax_warp_512_f16::KERNEL,
    &softmax_warp_wide_f16::KERNEL,
    &softmax_aligned_2048_f16::KERNEL,
    &softmax_aligned_3072_f16::KERNEL,
    &softmax_aligned_4096_f16::KERNEL,
    &softmax_aligned_short_f16::KERNEL,
    &softmax_aligned_f16::KERNEL,
    &softmax_aligned_long_f16::KERNEL,
    &softmax_aligned_wide_f16::KERNEL,
    &softmax_cluster_f16::KERNEL,
    &softmax_chunk_stats_f16::KERNEL,
    &softmax_chunk_write_f16::KERNEL,
];
