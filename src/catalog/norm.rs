//! LayerNorm and RMSNorm over the rows of a matrix, f32, bf16 or f16 data and f32 statistics.
//! Rows to 1024 columns take a group of 8 or 16 lanes or a warp per row (`*_warp_128_*` ..
//! `*_warp_1024_*`, the statistics by `warp_sum(.., LANES)`), longer ones a block per row (64
//! threads to 2048 columns, 96 to 3072, for 16-bit rows 128 × 32 to 4096, 128 threads × 40 to
//! 5120, for 16-bit LayerNorm 128 × 48 to 6144 and 128 × 56 to 7168, 256 threads to 8192, 512
//! threads to 16384); see [`NormElement::KERNELS`]. Each holds
//! the row in registers (`ITEMS` elements per thread, consecutive threads on consecutive
//! columns), reduces it, and writes the normalised row — x is read once and y written once.
//!
//! The block kernels start each row's vectors at its first 16-byte-aligned column (`x.align_offset([row, 0])`,
//! `x.vector_at(..)`), the few columns before it and after the last whole vector one per
//! thread: rows whose leading dimension is not a multiple of the vector (4097 columns) still
//! move in 16-byte accesses.
//!
//! On f32 rows the variance is the mean of the squared deviations from the mean, computed from
//! the registers after the mean is known (a second reduction, no cancellation of
//! `E[x²] − E[x]²`).
//! 16-bit rows take Σx and Σx² as they are loaded and reduce both in one round (see
//! `layer_norm!`'s `one_pass`): var = Σx²/C − mean², and where that cancels (mean² > 8·var) the
//! exact second pass over the registers — its f32 rounding stays far below the 16-bit output's.
//! Rows far from zero beside their spread (f32: |mean| > 64·σ; 16-bit: |mean| > √8·σ, where
//! they take the exact pass) take that pass on x − x[row, 0], correcting the mean by the
//! deviations' mean: y is computed as x·(1/σ) − mean/σ, whose second term's rounding would
//! otherwise be |mean|/σ times f32's, and a row of one value gives the bias exactly, as torch
//! does.
//! 16-bit rows are converted to f32 as they are loaded and rounded once as they are stored
//! (what `torch.nn.LayerNorm` does on bf16 tensors).

use crate::prelude::*;
use crate::{Input, Output};

/// The longest row the norms hold in registers: ITEMS × THREADS.
pub const MAX_COLUMNS: usize = 16 * 1024;

// Each norm is stamped at several row lengths and element types by a macro_rules! of its own:
// the block's threads, `ITEMS` and the element type are the only differences (`as f32` of an
// f32 renders as nothing).

macro_rules! layer_norm {
    // `weights = vector_from`: where the weight's and bias' vectors do not start where the row's
    // do, read them as vectors from the aligned chunks that hold them, not by element;
    // `statistics = one_pass`: Σx and Σx² as the row is loaded (16-bit rows, below)
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt, threads = $threads:tt, items = $items:tt
        $(, weights = $weights:ident)? $(, statistics = $statistics:ident)? $(, min_blocks = $min_blocks:tt)?) => {
        layer_norm!(@weights [$($weights)?] $(#[$doc])* $name, $t, $vector, $threads, $items,
            [$($statistics)?], [$(min_blocks = $min_blocks,)?],
            // The exact pass on x − x[row, 0] (see the module's doc): the deviations from the
            // old mean less x[row, 0] summed beside their squares, in one round, their mean
            // correcting the mean and the variance (the corrected two-pass algorithm).
            centred = [
                let first = x[[row, 0]] as f32;
                if extra_column >= 0 {
                    extra -= first;
                }
                mean -= first;
                let mut deviation_sum = 0.0f32;
                let mut centred_squares = 0.0f32;
                if extra_column >= 0 {
                    deviation_sum = extra - mean;
                    centred_squares = deviation_sum * deviation_sum;
                }
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        for k in 0..VECTOR {
                            v[j * VECTOR + k] -= first;
                            let d = v[j * VECTOR + k] - mean;
                            deviation_sum += d;
                            centred_squares += d * d;
                        }
                    }
                }
                let correction = block_sum(deviation_sum) / C as f32;
                // (Σd²/C ≥ (Σd/C)² but for rounding: clamped, so eps = 0 gives no NaN)
                let centred_variance = max(block_sum(centred_squares) / C as f32 - correction * correction, 0.0f32);
                mean += correction;
            ]);
    };
    (@weights [] $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $threads:tt, $items:tt, $statistics:tt, $min_blocks:tt,
        centred = $centred:tt) => {
        layer_norm!(@statistics $statistics $(#[$doc])* $name, $t, $vector, $threads, $items, $min_blocks, $centred,
            shifted = [], w = [weight[c + k]], b = [bias[c + k]]);
    };
    (@weights [vector_from] $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $threads:tt, $items:tt, $statistics:tt, $min_blocks:tt,
        centred = $centred:tt) => {
        layer_norm!(@statistics $statistics $(#[$doc])* $name, $t, $vector, $threads, $items, $min_blocks, $centred,
            shifted = [let wv = weight.vector_from(c); let bv = bias.vector_from(c);], w = [wv[k]], b = [bv[k]]);
    };
    // The mean, then the mean of the squared deviations from it over the registers: two
    // reductions, one after the other, and no cancellation (and a round of two more for rows
    // far from zero).
    (@statistics [] $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $threads:tt, $items:tt, [$($min_blocks:tt)*],
        [$($centred:tt)*], $($weights:tt)*) => {
        layer_norm!(@kernel $(#[$doc])* $name, $t, $vector, $threads, $items, [$($min_blocks)*], $($weights)*,
            statistics = [
                let mut v = [0.0f32; ITEMS];
                let mut s = extra;
                // this thread's j-th vector is the row's vector j·THREADS + t from the boundary
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        let w = x.vector_at([row, head + i * VECTOR]);
                        for k in 0..VECTOR {
                            v[j * VECTOR + k] = w[k] as f32;
                            s += v[j * VECTOR + k];
                        }
                    }
                }
                let mut mean = block_sum(s) / C as f32;
                // the squared deviations from the mean, over the registers, guarded per vector as
                // loaded (a guard per element keeps a predicate per register alive: 66 registers
                // and 3 blocks per SM, where 48 give 5)
                let mut squares = 0.0f32;
                if extra_column >= 0 {
                    squares = (extra - mean) * (extra - mean);
                }
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        for k in 0..VECTOR {
                            let d = v[j * VECTOR + k] - mean;
                            squares += d * d;
                        }
                    }
                }
                let mut inverse_deviation = 1.0f32 / sqrt(block_sum(squares) / C as f32 + eps);
                // far from zero beside its spread, the pass again on x − x[row, 0] (a block-wide
                // branch, rarely taken: the other rows pay one compare)
                if abs(mean) * inverse_deviation > 64.0f32 {
                    $($centred)*
                    inverse_deviation = 1.0f32 / sqrt(centred_variance + eps);
                }
            ]);
    };
    // Σx and Σx² as the row is loaded (an FFMA an element where the second pass takes an FADD
    // and an FFMA), both block sums in one round (one pair of barriers where the two passes take
    // two), var = Σx²/C − mean². Where that cancels (mean² > 8·var: the deviations small beside
    // the mean) the block takes the exact second pass over its registers. 16-bit rows only: its
    // error, at most about 9 × f32's on the variance, is far below their rounding.
    (@statistics [one_pass] $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $threads:tt, $items:tt, [$($min_blocks:tt)*],
        [$($centred:tt)*], $($weights:tt)*) => {
        layer_norm!(@kernel $(#[$doc])* $name, $t, $vector, $threads, $items, [$($min_blocks)*], $($weights)*,
            statistics = [
                let mut v = [0.0f32; ITEMS];
                let mut s = extra;
                let mut q = extra * extra;
                // the loads alone under the guard (a vector past the row's stays zero, adding
                // nothing): with the sums inside it, ptxas branches around each load and its
                // sums, and a thread's loads run one after another
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    let mut w = vector(0.0 as $t);
                    if i < vectors {
                        w = x.vector_at([row, head + i * VECTOR]);
                    }
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k] as f32;
                        s += v[j * VECTOR + k];
                        q = fma(v[j * VECTOR + k], v[j * VECTOR + k], q);
                    }
                }
                let mut mean = block_sum(s) / C as f32;
                let mut variance = block_sum(q) / C as f32 - mean * mean;
                if !(mean * mean <= 8.0f32 * variance) {
                    // cancelled (or var ≤ 0): the exact pass on x − x[row, 0], taken by the
                    // whole block
                    $($centred)*
                    variance = centred_variance;
                }
                let inverse_deviation = 1.0f32 / sqrt(variance + eps);
            ]);
    };
    (@kernel $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $threads:tt, $items:tt, [$($min_blocks:tt)*],
        shifted = [$($shifted:tt)*], w = [$($w:tt)*], b = [$($b:tt)*], statistics = [$($statistics:tt)*]) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = $vector, $($min_blocks)* fixed(ITEMS = $items), require(THREADS >= 2 * VECTOR), require(C <= ITEMS * THREADS))]
        pub fn $name(
            x: Global<$t, (R, C)>,
            weight: Global<$t, (C,)>,
            bias: Global<$t, (C,)>,
            y: GlobalMut<$t, (R, C)>,
            eps: f32,
        ) {
            let (row,) = grid(R);
            // the row's columns before its first 16-byte boundary (head), its whole vectors from
            // there, the columns after the last one (tail): threads 0.. take the head's columns
            // one each, threads VECTOR.. the tail's, as one extra element
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
            let mut extra = 0.0f32;
            if extra_column >= 0 {
                extra = x[[row, extra_column]] as f32;
            }
            $($statistics)*
            // (x − mean)·inverse_deviation as one fma, x·inverse_deviation + shift, and the
            // weight and bias as a second: two instructions an element where the subtraction
            // took three (+1% of the copy on 16-bit rows, where instructions bound the kernel)
            let shift = -mean * inverse_deviation;
            if extra_column >= 0 {
                y[[row, extra_column]] =
                    (fma(extra, inverse_deviation, shift) * (weight[extra_column] as f32) + bias[extra_column] as f32) as $t;
            }
            if y.align_offset([row, 0]) == head && weight.align_offset(head) == 0 && bias.align_offset(head) == 0 {
                // y's row, weight and bias all start their vectors where x's row does
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        let c = head + i * VECTOR;
                        let wv = weight.vector_at(c);
                        let bv = bias.vector_at(c);
                        let mut out = vector(0.0 as $t);
                        for k in 0..VECTOR {
                            out[k] = (fma(v[j * VECTOR + k], inverse_deviation, shift) * (wv[k] as f32) + bv[k] as f32) as $t;
                        }
                        y.vector_at([row, c]) = out;
                    }
                }
            } else if y.align_offset([row, 0]) == head {
                // y's row starts as x's does, weight and bias elsewhere
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        let c = head + i * VECTOR;
                        $($shifted)*
                        let mut out = vector(0.0 as $t);
                        for k in 0..VECTOR {
                            out[k] = (fma(v[j * VECTOR + k], inverse_deviation, shift) * ($($w)* as f32) + $($b)* as f32) as $t;
                        }
                        y.vector_at([row, c]) = out;
                    }
                }
            } else {
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        for k in 0..VECTOR {
                            let c = head + i * VECTOR + k;
                            y[[row, c]] = (fma(v[j * VECTOR + k], inverse_deviation, shift) * (weight[c] as f32) + bias[c] as f32) as $t;
                        }
                    }
                }
            }
        }
    };
}
layer_norm!(
    /// y = (x − mean) / √(var + eps) · weight + bias, per row (`torch.nn.LayerNorm`), rows of up to 8192
    /// columns: a block of 256 threads per row (small blocks overlap one row's barriers with
    /// other rows' loads).
    layer_norm_f32, f32, vector = 4, threads = 256, items = 32
);
layer_norm!(
    /// [`layer_norm_f32`] for rows of up to 16384 columns: a block of 512 threads per row, 32
    /// elements each (two blocks an SM; 1024 × 16 held 46 registers, one block an SM, and ran
    /// at 77% of the device copy at 2048 × 16384 on an H200 where this runs at 94%).
    layer_norm_wide_f32, f32, vector = 4, threads = 512, items = 32
);
layer_norm!(
    /// [`layer_norm_f32`] for rows of up to 5120 columns: blocks of 128 threads, 40 elements
    /// each (on an H200 at 16384 × 2560 98% of the device copy, 8192 × 4096 99%, where 256 × 20
    /// gave 93 and 97%; 64 × 80 gave 96 and 96%).
    layer_norm_short_f32, f32, vector = 4, threads = 128, items = 40
);
layer_norm!(
    /// [`layer_norm_short_f32`] on bf16 data: blocks of 128 threads, 40 elements each (whole
    /// vectors of 8). A row of 16-bit data is half the bytes of an f32 one for the same
    /// reductions, so more, smaller blocks an SM keep more rows in flight: 8 blocks of 128
    /// hold 64 KB of rows where 5 of 256 (24 elements) held 40 KB — on an H200 at 4096 × 4096
    /// 78% of the device copy became 86%, at 4096 × 4097 62% became 66% (BENCHMARKS.md). The
    /// weight and bias are read by element on rows whose vectors do not start where theirs do:
    /// `vector_from` (as [`layer_norm_bf16`]) gained 4 points there but took 72 registers, 7
    /// blocks an SM, and lost 2–3 on aligned rows.
    layer_norm_short_bf16, bf16, vector = 8, threads = 128, items = 40, statistics = one_pass
);
layer_norm!(
    /// [`layer_norm_short_bf16`] on f16 data.
    layer_norm_short_f16, f16, vector = 8, threads = 128, items = 40, statistics = one_pass
);
layer_norm!(
    /// [`layer_norm_f32`] on bf16 x, weight, bias and y (f32 statistics). On the rows whose
    /// vectors do not start where the weight's do (7 in 8 at 8191 columns) the weight and bias
    /// come as vectors from their aligned chunks (`vector_from`): read by element, a warp's
    /// 2-byte loads 16 bytes apart bound the kernel on L1 (ncu on an H200: L1/TEX 86%, DRAM 41%;
    /// 68% of the device copy at 8192 × 8191, 77% from chunks in the lab).
    layer_norm_bf16, bf16, vector = 8, threads = 256, items = 32, weights = vector_from, statistics = one_pass, min_blocks = 4
);
layer_norm!(
    /// [`layer_norm_wide_f32`] on bf16 data (the weight and bias by element where their vectors
    /// do not start where the row's do: from chunks, as [`layer_norm_bf16`], this kernel's 64
    /// registers a thread spill on sm_80).
    layer_norm_wide_bf16, bf16, vector = 8, threads = 512, items = 32, statistics = one_pass
);
layer_norm!(
    /// [`layer_norm_f32`] on f16 x, weight, bias and y (f32 statistics).
    layer_norm_f16, f16, vector = 8, threads = 256, items = 32, weights = vector_from, statistics = one_pass, min_blocks = 4
);
layer_norm!(
    /// [`layer_norm_wide_f32`] on f16 data.
    layer_norm_wide_f16, f16, vector = 8, threads = 512, items = 32, statistics = one_pass
);

macro_rules! rms_norm {
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt, threads = $threads:tt, items = $items:tt) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = $vector, fixed(ITEMS = $items), require(THREADS >= 2 * VECTOR), require(C <= ITEMS * THREADS))]
        pub fn $name(x: Global<$t, (R, C)>, weight: Global<$t, (C,)>, y: GlobalMut<$t, (R, C)>, eps: f32) {
            let (row,) = grid(R);
            // head, whole vectors and tail of the row, as in the LayerNorm above
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
            let mut extra = 0.0f32;
            if extra_column >= 0 {
                extra = x[[row, extra_column]] as f32;
            }
            let mut v = [0.0f32; ITEMS];
            let mut squares = extra * extra;
            for j in 0..ITEMS / VECTOR {
                let i = j * THREADS + thread_index();
                if i < vectors {
                    let w = x.vector_at([row, head + i * VECTOR]);
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k] as f32;
                        squares += v[j * VECTOR + k] * v[j * VECTOR + k];
                    }
                }
            }
            let inverse_rms = 1.0f32 / sqrt(block_sum(squares) / C as f32 + eps);
            if extra_column >= 0 {
                y[[row, extra_column]] = (extra * inverse_rms * (weight[extra_column] as f32)) as $t;
            }
            if y.align_offset([row, 0]) == head && weight.align_offset(head) == 0 {
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        let c = head + i * VECTOR;
                        let wv = weight.vector_at(c);
                        let mut out = vector(0.0 as $t);
                        for k in 0..VECTOR {
                            out[k] = (v[j * VECTOR + k] * inverse_rms * (wv[k] as f32)) as $t;
                        }
                        y.vector_at([row, c]) = out;
                    }
                }
            } else if y.align_offset([row, 0]) == head {
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        let c = head + i * VECTOR;
                        let mut out = vector(0.0 as $t);
                        for k in 0..VECTOR {
                            out[k] = (v[j * VECTOR + k] * inverse_rms * (weight[c + k] as f32)) as $t;
                        }
                        y.vector_at([row, c]) = out;
                    }
                }
            } else {
                for j in 0..ITEMS / VECTOR {
                    let i = j * THREADS + thread_index();
                    if i < vectors {
                        for k in 0..VECTOR {
                            let c = head + i * VECTOR + k;
                            y[[row, c]] = (v[j * VECTOR + k] * inverse_rms * (weight[c] as f32)) as $t;
                        }
                    }
                }
            }
        }
    };
}
rms_norm!(
    /// y = x / √(mean(x²) + eps) · weight, per row (RMSNorm, as in LLaMA), rows of up to 8192
    /// columns: a block of 256 threads per row.
    rms_norm_f32, f32, vector = 4, threads = 256, items = 32
);
rms_norm!(
    /// [`rms_norm_f32`] for rows of up to 16384 columns: a block of 512 threads per row, 32
    /// elements each.
    rms_norm_wide_f32, f32, vector = 4, threads = 512, items = 32
);
rms_norm!(
    /// [`rms_norm_f32`] for rows of up to 5120 columns (20 elements a thread).
    rms_norm_short_f32, f32, vector = 4, threads = 256, items = 20
);
rms_norm!(
    /// [`rms_norm_short_f32`] on bf16 data: blocks of 128 threads, 40 elements each (five
    /// vectors of 8) — on an H200 at 16384 × 2560 88% of the device copy, 8192 × 4096 96%, where
    /// 256 × 24 gave 74 and 93%.
    rms_norm_short_bf16, bf16, vector = 8, threads = 128, items = 40
);
rms_norm!(
    /// [`rms_norm_short_bf16`] on f16 data.
    rms_norm_short_f16, f16, vector = 8, threads = 128, items = 40
);
rms_norm!(
    /// [`rms_norm_f32`] on bf16 x, weight and y (f32 statistics).
    rms_norm_bf16, bf16, vector = 8, threads = 256, items = 32
);
rms_norm!(
    /// [`rms_norm_wide_f32`] on bf16 data.
    rms_norm_wide_bf16, bf16, vector = 8, threads = 512, items = 32
);
rms_norm!(
    /// [`rms_norm_f32`] on f16 x, weight and y (f32 statistics).
    rms_norm_f16, f16, vector = 8, threads = 256, items = 32
);
rms_norm!(
    /// [`rms_norm_wide_f32`] on f16 data.
    rms_norm_wide_f16, f16, vector = 8, threads = 512, items = 32
);

// Rows to 1024 columns by groups of `LANES` lanes, as the softmax's (`softmax_warp_rows!`): a
// warp holds 32 / LANES rows side by side, a group each, each lane on vectors of 16 bytes counted
// from the row's start (the launch narrows them where a leading dimension or the weight's start
// does not hold whole vectors), the columns after the row's last whole vector one a lane; the
// statistics are the groups' `warp_sum(.., LANES)` — no shared memory, no barrier. Every load is
// issued before any value is used (a vector past the row's last loads that one again and is not
// counted; a row past the last repeats the last and is not stored).
macro_rules! norm_warp_rows {
    // LayerNorm: the mean, then the squared deviations from it
    ($(#[$doc:meta])* layer_norm $name:ident, $t:ident, vector = $vector:tt, lanes = $lanes:tt, items = $items:tt $(, min_blocks = $min_blocks:tt)?) => {
        norm_warp_rows!(@layer_norm [exact] $(#[$doc])* $name, $t, $vector, $lanes, $items, [$(min_blocks = $min_blocks,)?]);
    };
    // 16-bit LayerNorm: Σx and Σx² in one pass, their butterflies side by side, var = Σx²/C −
    // mean²; where that cancels in any of the warp's rows (mean² ≥ 8·var, as in the block
    // kernels), the whole warp takes the exact second pass — a branch on the warp's vote, so
    // every lane of the warp's shuffles takes it
    ($(#[$doc:meta])* layer_norm_one_pass $name:ident, $t:ident, vector = $vector:tt, lanes = $lanes:tt, items = $items:tt $(, min_blocks = $min_blocks:tt)?) => {
        norm_warp_rows!(@layer_norm [one_pass] $(#[$doc])* $name, $t, $vector, $lanes, $items, [$(min_blocks = $min_blocks,)?]);
    };
    // the exact pass on x − x[row, 0], which both statistics take
    (@layer_norm $statistics:tt $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $lanes:tt, $items:tt, $min_blocks:tt) => {
        norm_warp_rows!(@layer_norm_statistics $statistics $(#[$doc])* $name, $t, $vector, $lanes, $items, $min_blocks,
            // with the corrected mean, as `layer_norm!`'s
            // (`centre_row`: rows whose warp takes the pass for another row keep their statistics:
            // shifted by 0, their mean restored after, so no row's result depends on its
            // neighbours)
            centred = [
                let mut first = 0.0f32;
                if centre_row {
                    first = x[[read_row, 0]] as f32;
                }
                let kept_mean = mean;
                if tail_column < C {
                    extra -= first;
                }
                mean -= first;
                let mut deviation_sum = 0.0f32;
                let mut centred_squares = 0.0f32;
                if tail_column < C {
                    deviation_sum = extra - mean;
                    centred_squares = deviation_sum * deviation_sum;
                }
                for j in 0..ITEMS / VECTOR {
                    if j * LANES + position < vectors {
                        for k in 0..VECTOR {
                            v[j * VECTOR + k] -= first;
                            let d = v[j * VECTOR + k] - mean;
                            deviation_sum += d;
                            centred_squares += d * d;
                        }
                    }
                }
                let correction = warp_sum(deviation_sum, LANES) / C as f32;
                let centred_variance = max(warp_sum(centred_squares, LANES) / C as f32 - correction * correction, 0.0f32);
                mean += correction;
            ]);
    };
    (@layer_norm_statistics [exact] $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $lanes:tt, $items:tt, $min_blocks:tt,
        centred = [$($centred:tt)*]) => {
        norm_warp_rows!(@layer_norm_kernel $(#[$doc])* $name, $t, $vector, $lanes, $items, $min_blocks,
            statistics = [
                let mut s = extra;
                for j in 0..ITEMS / VECTOR {
                    if j * LANES + position < vectors {
                        for k in 0..VECTOR {
                            s += v[j * VECTOR + k];
                        }
                    }
                }
                let mut mean = warp_sum(s, LANES) / C as f32;
                let mut squares = 0.0f32;
                if tail_column < C {
                    squares = (extra - mean) * (extra - mean);
                }
                for j in 0..ITEMS / VECTOR {
                    if j * LANES + position < vectors {
                        for k in 0..VECTOR {
                            let d = v[j * VECTOR + k] - mean;
                            squares += d * d;
                        }
                    }
                }
                let mut inverse_deviation = 1.0f32 / sqrt(warp_sum(squares, LANES) / C as f32 + eps);
                // far from zero beside its spread, as in `layer_norm!`; the whole warp takes the
                // pass where any of its rows needs it (the groups' shuffles are the warp's)
                let centre_row = abs(mean) * inverse_deviation > 64.0f32;
                if warp_any(centre_row) {
                    $($centred)*
                    if centre_row {
                        inverse_deviation = 1.0f32 / sqrt(centred_variance + eps);
                    } else {
                        mean = kept_mean;
                    }
                }
            ]);
    };
    (@layer_norm_statistics [one_pass] $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $lanes:tt, $items:tt, $min_blocks:tt,
        centred = [$($centred:tt)*]) => {
        norm_warp_rows!(@layer_norm_kernel $(#[$doc])* $name, $t, $vector, $lanes, $items, $min_blocks,
            statistics = [
                let mut s = extra;
                let mut q = extra * extra;
                for j in 0..ITEMS / VECTOR {
                    if j * LANES + position < vectors {
                        for k in 0..VECTOR {
                            s += v[j * VECTOR + k];
                            q = fma(v[j * VECTOR + k], v[j * VECTOR + k], q);
                        }
                    }
                }
                let mut mean = warp_sum(s, LANES) / C as f32;
                let mut variance = warp_sum(q, LANES) / C as f32 - mean * mean;
                // the exact pass on x − x[row, 0] where Σx²/C − mean² cancels
                let centre_row = !(mean * mean < 8.0f32 * variance);
                if warp_any(centre_row) {
                    $($centred)*
                    if centre_row {
                        variance = centred_variance;
                    } else {
                        mean = kept_mean;
                    }
                }
                let inverse_deviation = 1.0f32 / sqrt(variance + eps);
            ]);
    };
    // the bias, and (x − mean)·inverse_deviation as one fma
    (@layer_norm_kernel $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $lanes:tt, $items:tt, [$($min_blocks:tt)*],
        statistics = [$($statistics:tt)*]) => {
        norm_warp_rows!(@kernel $(#[$doc])* $name, $t, $vector, $lanes, $items, [$($min_blocks)*],
            bias = [bias: Global<$t, (C,)>,],
            statistics = [
                $($statistics)*
                let shift = -mean * inverse_deviation;
            ],
            vectors = [let bv = bias.vector(i);],
            out = [fma(v[j * VECTOR + k], inverse_deviation, shift) * (wv[k] as f32) + bv[k] as f32],
            tail_out = [fma(extra, inverse_deviation, shift) * (weight[tail_column] as f32) + bias[tail_column] as f32]);
    };
    // RMSNorm: the mean of the squares
    ($(#[$doc:meta])* rms_norm $name:ident, $t:ident, vector = $vector:tt, lanes = $lanes:tt, items = $items:tt $(, min_blocks = $min_blocks:tt)?) => {
        norm_warp_rows!(@kernel $(#[$doc])* $name, $t, $vector, $lanes, $items, [$(min_blocks = $min_blocks,)?],
            bias = [],
            statistics = [
                let mut squares = extra * extra;
                for j in 0..ITEMS / VECTOR {
                    if j * LANES + position < vectors {
                        for k in 0..VECTOR {
                            squares += v[j * VECTOR + k] * v[j * VECTOR + k];
                        }
                    }
                }
                let inverse_rms = 1.0f32 / sqrt(warp_sum(squares, LANES) / C as f32 + eps);
            ],
            vectors = [],
            out = [v[j * VECTOR + k] * inverse_rms * (wv[k] as f32)],
            tail_out = [extra * inverse_rms * (weight[tail_column] as f32)]);
    };
    (@kernel $(#[$doc:meta])* $name:ident, $t:ident, $vector:tt, $lanes:tt, $items:tt, [$($min_blocks:tt)*],
        bias = [$($bias:tt)*], statistics = [$($statistics:tt)*], vectors = [$($bias_vector:tt)*],
        out = [$($out:tt)*], tail_out = [$($tail_out:tt)*]) => {
        $(#[$doc])*
        #[tile_kernel(threads = 256, vector = $vector, $($min_blocks)* consts(WARP_ROWS = 8), fixed(LANES = $lanes, ITEMS = $items), require(WARP_ROWS * 32 == THREADS), require(VECTOR <= LANES), require(C <= LANES * ITEMS))]
        pub fn $name(x: Global<$t, (R, C)>, weight: Global<$t, (C,)>, $($bias)* y: GlobalMut<$t, (R, C)>, eps: f32) {
            let (bx,) = grid(cdiv(R, WARP_ROWS * (32 / LANES)));
            // the row of this lane's group, and the lane's place in it
            let row = (bx * WARP_ROWS + warp_index()) * (32 / LANES) + lane() / LANES;
            let position = lane() % LANES;
            let read_row = min(row, R - 1);
            let vectors = C / VECTOR;
            let tail_column = vectors * VECTOR + position;
            let mut v = [0.0f32; ITEMS];
            if vectors > 0 {
                // this lane's j-th vector of the row is vector j·LANES + position
                for j in 0..ITEMS / VECTOR {
                    let w = x.vector([read_row, min(j * LANES + position, vectors - 1)]);
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k] as f32;
                    }
                }
            }
            let mut extra = 0.0f32;
            if tail_column < C {
                extra = x[[read_row, tail_column]] as f32;
            }
            $($statistics)*
            if row < R {
                for j in 0..ITEMS / VECTOR {
                    let i = j * LANES + position;
                    if i < vectors {
                        let wv = weight.vector(i);
                        $($bias_vector)*
                        let mut out = vector(0.0 as $t);
                        for k in 0..VECTOR {
                            out[k] = ($($out)*) as $t;
                        }
                        y.vector([row, i]) = out;
                    }
                }
                if tail_column < C {
                    y[[row, tail_column]] = ($($tail_out)*) as $t;
                }
            }
        }
    };
}

// The 1024-column kernels ask for 4 blocks an SM (64 registers at most): without it ptxas
// holds the 16-bit RMSNorm at 48 registers and spills 12 bytes. Not f32 LayerNorm, which takes
// 62 registers on sm_90 without it and 68 on sm_80, where it spills at 64.
norm_warp_rows!(
    /// [`layer_norm_f32`] for rows of up to 128 columns: a group of 8 lanes per row, 4 rows a
    /// warp, four vectors of 4 a lane, the statistics by `warp_sum(.., 8)`.
    layer_norm layer_norm_warp_128_f32, f32, vector = 4, lanes = 8, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_f32`] for rows of up to 256 columns: a group of 16 lanes per row.
    layer_norm layer_norm_warp_256_f32, f32, vector = 4, lanes = 16, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_f32`] for rows of up to 512 columns: a warp per row, 16 values a lane.
    layer_norm layer_norm_warp_512_f32, f32, vector = 4, lanes = 32, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_f32`] for rows of up to 1024 columns: a warp per row, 32 values a lane.
    layer_norm layer_norm_warp_1024_f32, f32, vector = 4, lanes = 32, items = 32
);
norm_warp_rows!(
    /// [`layer_norm_warp_128_f32`] on bf16 data (f32 statistics), vectors of 8.
    layer_norm_one_pass layer_norm_warp_128_bf16, bf16, vector = 8, lanes = 8, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_warp_256_f32`] on bf16 data (f32 statistics), vectors of 8.
    layer_norm_one_pass layer_norm_warp_256_bf16, bf16, vector = 8, lanes = 16, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_warp_512_f32`] on bf16 data (f32 statistics), vectors of 8.
    layer_norm_one_pass layer_norm_warp_512_bf16, bf16, vector = 8, lanes = 32, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_warp_1024_f32`] on bf16 data (f32 statistics), vectors of 8.
    layer_norm_one_pass layer_norm_warp_1024_bf16, bf16, vector = 8, lanes = 32, items = 32, min_blocks = 4
);
norm_warp_rows!(
    /// [`layer_norm_warp_128_f32`] on f16 data (f32 statistics), vectors of 8.
    layer_norm_one_pass layer_norm_warp_128_f16, f16, vector = 8, lanes = 8, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_warp_256_f32`] on f16 data (f32 statistics), vectors of 8.
    layer_norm_one_pass layer_norm_warp_256_f16, f16, vector = 8, lanes = 16, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_warp_512_f32`] on f16 data (f32 statistics), vectors of 8.
    layer_norm_one_pass layer_norm_warp_512_f16, f16, vector = 8, lanes = 32, items = 16
);
norm_warp_rows!(
    /// [`layer_norm_warp_1024_f32`] on f16 data (f32 statistics), vectors of 8.
    layer_norm_one_pass layer_norm_warp_1024_f16, f16, vector = 8, lanes = 32, items = 32, min_blocks = 4
);
norm_warp_rows!(
    /// [`rms_norm_f32`] for rows of up to 128 columns: a group of 8 lanes per row, 4 rows a warp.
    rms_norm rms_norm_warp_128_f32, f32, vector = 4, lanes = 8, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_f32`] for rows of up to 256 columns: a group of 16 lanes per row.
    rms_norm rms_norm_warp_256_f32, f32, vector = 4, lanes = 16, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_f32`] for rows of up to 512 columns: a warp per row, 16 values a lane.
    rms_norm rms_norm_warp_512_f32, f32, vector = 4, lanes = 32, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_f32`] for rows of up to 1024 columns: a warp per row, 32 values a lane.
    rms_norm rms_norm_warp_1024_f32, f32, vector = 4, lanes = 32, items = 32, min_blocks = 4
);
norm_warp_rows!(
    /// [`rms_norm_warp_128_f32`] on bf16 data (f32 statistics), vectors of 8.
    rms_norm rms_norm_warp_128_bf16, bf16, vector = 8, lanes = 8, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_warp_256_f32`] on bf16 data (f32 statistics), vectors of 8.
    rms_norm rms_norm_warp_256_bf16, bf16, vector = 8, lanes = 16, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_warp_512_f32`] on bf16 data (f32 statistics), vectors of 8.
    rms_norm rms_norm_warp_512_bf16, bf16, vector = 8, lanes = 32, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_warp_1024_f32`] on bf16 data (f32 statistics), vectors of 8.
    rms_norm rms_norm_warp_1024_bf16, bf16, vector = 8, lanes = 32, items = 32, min_blocks = 4
);
norm_warp_rows!(
    /// [`rms_norm_warp_128_f32`] on f16 data (f32 statistics), vectors of 8.
    rms_norm rms_norm_warp_128_f16, f16, vector = 8, lanes = 8, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_warp_256_f32`] on f16 data (f32 statistics), vectors of 8.
    rms_norm rms_norm_warp_256_f16, f16, vector = 8, lanes = 16, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_warp_512_f32`] on f16 data (f32 statistics), vectors of 8.
    rms_norm rms_norm_warp_512_f16, f16, vector = 8, lanes = 32, items = 16
);
norm_warp_rows!(
    /// [`rms_norm_warp_1024_f32`] on f16 data (f32 statistics), vectors of 8.
    rms_norm rms_norm_warp_1024_f16, f16, vector = 8, lanes = 32, items = 32, min_blocks = 4
);

// Rows of 1025 to 2048 columns: a block of 64 threads (two warps) per row, 32 values a thread
// — on an H200 at 16384 × 2048 LayerNorm / RMSNorm f32 98.4 / 98.8% of the device copy, bf16
// 94.8 / 97.8%, where the 5120-column kernels (256 threads, 128 for 16-bit LayerNorm) gave 86 /
// 98% and 71 / 68%; blocks of 128 × 16 gave 99 / 100% and 91 / 97%, a warp per row (64 values a
// lane) 93 / 91% and 81 / 87% (BENCHMARKS.md).
layer_norm!(
    /// [`layer_norm_f32`] for rows of up to 2048 columns: a block of 64 threads per row, 32
    /// elements each.
    layer_norm_block_2048_f32, f32, vector = 4, threads = 64, items = 32
);
layer_norm!(
    /// [`layer_norm_block_2048_f32`] on bf16 data (f32 statistics).
    layer_norm_block_2048_bf16, bf16, vector = 8, threads = 64, items = 32, statistics = one_pass
);
layer_norm!(
    /// [`layer_norm_block_2048_f32`] on f16 data (f32 statistics).
    layer_norm_block_2048_f16, f16, vector = 8, threads = 64, items = 32, statistics = one_pass
);
rms_norm!(
    /// [`rms_norm_f32`] for rows of up to 2048 columns: a block of 64 threads per row, 32
    /// elements each.
    rms_norm_block_2048_f32, f32, vector = 4, threads = 64, items = 32
);
rms_norm!(
    /// [`rms_norm_block_2048_f32`] on bf16 data (f32 statistics).
    rms_norm_block_2048_bf16, bf16, vector = 8, threads = 64, items = 32
);
rms_norm!(
    /// [`rms_norm_block_2048_f32`] on f16 data (f32 statistics).
    rms_norm_block_2048_f16, f16, vector = 8, threads = 64, items = 32
);

// Rows of 2049 to 3072 columns: a block of 96 threads (three warps) per row, 32 values a
// thread — on an H200 bf16 LayerNorm / RMSNorm at 16384 × 2560 93.0 / 97.5% of the device copy,
// at 16384 × 2304 91.8 / 97.9%, at 8192 × 3072 90.8 / 91.9%, where the 5120-column kernels (128
// × 40, half their threads idle at 2560) gave 80.8 / 88.9%, 76.1 / 85.1% and 84.3 / 91.4%;
// 128 × 24 and 64 × 48 beside them were level or behind (BENCHMARKS.md).
layer_norm!(
    /// [`layer_norm_f32`] for rows of up to 3072 columns: a block of 96 threads per row, 32
    /// elements each.
    layer_norm_block_3072_f32, f32, vector = 4, threads = 96, items = 32
);
layer_norm!(
    /// [`layer_norm_block_3072_f32`] on bf16 data (f32 statistics).
    layer_norm_block_3072_bf16, bf16, vector = 8, threads = 96, items = 32, statistics = one_pass
);
layer_norm!(
    /// [`layer_norm_block_3072_f32`] on f16 data (f32 statistics).
    layer_norm_block_3072_f16, f16, vector = 8, threads = 96, items = 32, statistics = one_pass
);
rms_norm!(
    /// [`rms_norm_f32`] for rows of up to 3072 columns: a block of 96 threads per row, 32
    /// elements each.
    rms_norm_block_3072_f32, f32, vector = 4, threads = 96, items = 32
);
rms_norm!(
    /// [`rms_norm_block_3072_f32`] on bf16 data (f32 statistics).
    rms_norm_block_3072_bf16, bf16, vector = 8, threads = 96, items = 32
);
rms_norm!(
    /// [`rms_norm_block_3072_f32`] on f16 data (f32 statistics).
    rms_norm_block_3072_f16, f16, vector = 8, threads = 96, items = 32
);

// 16-bit rows of 3073 to 4096 columns: a block of 128 threads per row, 32 values a thread (on
// sm_90 LayerNorm / RMSNorm 56 / 48 registers a thread, 9 / 10 blocks an SM, where the
// 5120-column kernels' 128 × 40 take 62 / 63, 8) — on an H200 bf16 LayerNorm at 16384 × 3200 /
// 16384 × 3584 / 8192 × 3840 / 8192 × 4096 92.0 / 94.3 / 94.1 / 93.2% of the device copy, where
// 128 × 40 gave 87.2 / 90.8 / 91.4 / 91.5%; RMSNorm level but at 3200 (+2). No f32 kernel: 128
// × 32 was level within a point with `*_short_f32` there (BENCHMARKS.md).
layer_norm!(
    /// [`layer_norm_block_3072_bf16`] for rows of up to 4096 columns: a block of 128 threads per
    /// row, 32 elements each (four vectors of 8) — on an H200 92–94% of the device copy on rows
    /// of 3200 to 4096 columns, where [`layer_norm_short_bf16`] gave 87–92%. f32 rows keep
    /// [`layer_norm_short_f32`], which 128 × 32 only matched.
    layer_norm_block_4096_bf16, bf16, vector = 8, threads = 128, items = 32, statistics = one_pass
);
layer_norm!(
    /// [`layer_norm_block_4096_bf16`] on f16 data.
    layer_norm_block_4096_f16, f16, vector = 8, threads = 128, items = 32, statistics = one_pass
);
rms_norm!(
    /// [`rms_norm_block_3072_bf16`] for rows of up to 4096 columns: a block of 128 threads per
    /// row, 32 elements each (four vectors of 8) — on an H200 level with [`rms_norm_short_bf16`]
    /// on rows of 3584 to 4096 columns, 2 points of the device copy ahead at 3200. f32 rows keep
    /// [`rms_norm_short_f32`], which 128 × 32 only matched.
    rms_norm_block_4096_bf16, bf16, vector = 8, threads = 128, items = 32
);
rms_norm!(
    /// [`rms_norm_block_4096_bf16`] on f16 data.
    rms_norm_block_4096_f16, f16, vector = 8, threads = 128, items = 32
);

// 16-bit LayerNorm on rows of 5121 to 7168 columns (hidden sizes of 6144 and 7168): blocks of
// 128 threads shaped to the row, where the 8192-column kernel's 256 × 32 held a 6144-column row
// with a quarter of its registers idle — on an H200 at 8192 × 6144 / 16384 × 6144 / 8192 × 6143
// 95.4–95.7 / 97.8–98.2 / 74.8–75.1% of the device copy with 128 × 48, where 256 × 32 gave
// 86.6 / 88.6 / 64.2% (192 × 32: 93 / 96 / 69%); at 8192 × 7168 / 16384 × 7168 / 8192 × 7000
// 92.7–93.3 / 95.3–96.7 / 90.8–91.2% with 128 × 56, where 256 × 32 gave 90.4–91.5 / 92.1–93.0
// / 88.9–89.3% (BENCHMARKS.md, thirty-sixth session). RMSNorm stays on 256 × 32 there (97–99%;
// the other shapes were level within a point but at 6143 columns).
layer_norm!(
    /// [`layer_norm_short_bf16`] for rows of up to 6144 columns: a block of 128 threads per row,
    /// 48 elements each (six vectors of 8; 80 registers, 6 blocks an SM on sm_90), the weight
    /// and bias as [`layer_norm_bf16`] reads them — on an H200 95–98% of the device copy at 6144
    /// columns, where [`layer_norm_bf16`] gave 87–89%.
    layer_norm_block_6144_bf16, bf16, vector = 8, threads = 128, items = 48, weights = vector_from, statistics = one_pass, min_blocks = 6
);
layer_norm!(
    /// [`layer_norm_block_6144_bf16`] on f16 data.
    layer_norm_block_6144_f16, f16, vector = 8, threads = 128, items = 48, weights = vector_from, statistics = one_pass, min_blocks = 6
);
layer_norm!(
    /// [`layer_norm_block_6144_bf16`] for rows of up to 7168 columns: 128 threads × 56 elements
    /// (seven vectors of 8; 96 registers, 5 blocks an SM on sm_90) — on an H200 93–97% of the
    /// device copy at 7168 columns, where [`layer_norm_bf16`] gave 90–93%.
    layer_norm_block_7168_bf16, bf16, vector = 8, threads = 128, items = 56, weights = vector_from, statistics = one_pass
);
layer_norm!(
    /// [`layer_norm_block_7168_bf16`] on f16 data.
    layer_norm_block_7168_f16, f16, vector = 8, threads = 128, items = 56, weights = vector_from, statistics = one_pass
);

/// Element types the norms take: f32, bf16 and f16 (statistics in f32 for all).
pub trait NormElement: crate::runtime::Element {
    /// The LayerNorm kernels of this type, then the RMSNorm ones, each by width — (the most
    /// columns, the kernel), narrowest first; a row takes the first that holds it: a group of 8
    /// lanes, 16 lanes or a warp per row to 128, 256, 512 and 1024 columns (`*_warp_128_*` ..
    /// `*_warp_1024_*`); a block of 64 threads × 32 elements to 2048 (`*_block_2048_*`); 96 × 32
    /// to 3072 (`*_block_3072_*`); for bf16 and f16, 128 × 32 to 4096 (`*_block_4096_*`); 128 ×
    /// 40 (256 × 20 for f32 RMSNorm) to 5120 (`*_short_*`); for 16-bit LayerNorm, 128 × 48 to
    /// 6144 and 128 × 56 to 7168 (`layer_norm_block_6144_*`, `layer_norm_block_7168_*`); 256 ×
    /// 32 to 8192; 512 × 32 to [`MAX_COLUMNS`] (`*_wide_*`).
    const KERNELS: [&'static [(usize, &'static crate::KernelDefinition)]; 2];
}

impl NormElement for f32 {
    const KERNELS: [&'static [(usize, &'static crate::KernelDefinition)]; 2] = [
        &[
            (128, &layer_norm_warp_128_f32::KERNEL),
            (256, &layer_norm_warp_256_f32::KERNEL),
            (512, &layer_norm_warp_512_f32::KERNEL),
            (1024, &layer_norm_warp_1024_f32::KERNEL),
            (2048, &layer_norm_block_2048_f32::KERNEL),
            (3072, &layer_norm_block_3072_f32::KERNEL),
            (5120, &layer_norm_short_f32::KERNEL),
            (8192, &layer_norm_f32::KERNEL),
            (MAX_COLUMNS, &layer_norm_wide_f32::KERNEL),
        ],
        &[
            (128, &rms_norm_warp_128_f32::KERNEL),
            (256, &rms_norm_warp_256_f32::KERNEL),
            (512, &rms_norm_warp_512_f32::KERNEL),
            (1024, &rms_norm_warp_1024_f32::KERNEL),
            (2048, &rms_norm_block_2048_f32::KERNEL),
            (3072, &rms_norm_block_3072_f32::KERNEL),
            (5120, &rms_norm_short_f32::KERNEL),
            (8192, &rms_norm_f32::KERNEL),
            (MAX_COLUMNS, &rms_norm_wide_f32::KERNEL),
        ],
    ];
}

impl NormElement for bf16 {
    const KERNELS: [&'static [(usize, &'static crate::KernelDefinition)]; 2] = [
        &[
            (128, &layer_norm_warp_128_bf16::KERNEL),
            (256, &layer_norm_warp_256_bf16::KERNEL),
            (512, &layer_norm_warp_512_bf16::KERNEL),
            (1024, &layer_norm_warp_1024_bf16::KERNEL),
            (2048, &layer_norm_block_2048_bf16::KERNEL),
            (3072, &layer_norm_block_3072_bf16::KERNEL),
            (4096, &layer_norm_block_4096_bf16::KERNEL),
            (5120, &layer_norm_short_bf16::KERNEL),
            (6144, &layer_norm_block_6144_bf16::KERNEL),
            (7168, &layer_norm_block_7168_bf16::KERNEL),
            (8192, &layer_norm_bf16::KERNEL),
            (MAX_COLUMNS, &layer_norm_wide_bf16::KERNEL),
        ],
        &[
            (128, &rms_norm_warp_128_bf16::KERNEL),
            (256, &rms_norm_warp_256_bf16::KERNEL),
            (512, &rms_norm_warp_512_bf16::KERNEL),
            (1024, &rms_norm_warp_1024_bf16::KERNEL),
            (2048, &rms_norm_block_2048_bf16::KERNEL),
            (3072, &rms_norm_block_3072_bf16::KERNEL),
            (4096, &rms_norm_block_4096_bf16::KERNEL),
            (5120, &rms_norm_short_bf16::KERNEL),
            (8192, &rms_norm_bf16::KERNEL),
            (MAX_COLUMNS, &rms_norm_wide_bf16::KERNEL),
        ],
    ];
}

impl NormElement for f16 {
    const KERNELS: [&'static [(usize, &'static crate::KernelDefinition)]; 2] = [
        &[
            (128, &layer_norm_warp_128_f16::KERNEL),
            (256, &layer_norm_warp_256_f16::KERNEL),
            (512, &layer_norm_warp_512_f16::KERNEL),
            (1024, &layer_norm_warp_1024_f16::KERNEL),
            (2048, &layer_norm_block_2048_f16::KERNEL),
            (3072, &layer_norm_block_3072_f16::KERNEL),
            (4096, &layer_norm_block_4096_f16::KERNEL),
            (5120, &layer_norm_short_f16::KERNEL),
            (6144, &layer_norm_block_6144_f16::KERNEL),
            (7168, &layer_norm_block_7168_f16::KERNEL),
            (8192, &layer_norm_f16::KERNEL),
            (MAX_COLUMNS, &layer_norm_wide_f16::KERNEL),
        ],
        &[
            (128, &rms_norm_warp_128_f16::KERNEL),
            (256, &rms_norm_warp_256_f16::KERNEL),
            (512, &rms_norm_warp_512_f16::KERNEL),
            (1024, &rms_norm_warp_1024_f16::KERNEL),
            (2048, &rms_norm_block_2048_f16::KERNEL),
            (3072, &rms_norm_block_3072_f16::KERNEL),
            (4096, &rms_norm_block_4096_f16::KERNEL),
            (5120, &rms_norm_short_f16::KERNEL),
            (8192, &rms_norm_f16::KERNEL),
            (MAX_COLUMNS, &rms_norm_wide_f16::KERNEL),
        ],
    ];
}

/// The kernel [`layer_norm`] takes for rows of `columns` elements of `T`: the narrowest width
/// of [`NormElement::KERNELS`] that holds the row; `None` past [`MAX_COLUMNS`].
///
/// ```
/// use tessera::catalog::norm::layer_norm_kernel_for;
/// let name = |kernel: Option<&tessera::KernelDefinition>| kernel.map(|k| k.name());
/// assert_eq!(name(layer_norm_kernel_for::<f32>(768)), Some("layer_norm_warp_1024_f32"));
/// assert_eq!(name(layer_norm_kernel_for::<f32>(2560)), Some("layer_norm_block_3072_f32"));
/// // 16-bit rows have a width f32 rows lack
/// assert_eq!(name(layer_norm_kernel_for::<f32>(4096)), Some("layer_norm_short_f32"));
/// assert_eq!(name(layer_norm_kernel_for::<half::bf16>(4096)), Some("layer_norm_block_4096_bf16"));
/// assert_eq!(name(layer_norm_kernel_for::<half::bf16>(4097)), Some("layer_norm_short_bf16"));
/// assert_eq!(name(layer_norm_kernel_for::<half::bf16>(6144)), Some("layer_norm_block_6144_bf16"));
/// assert_eq!(name(layer_norm_kernel_for::<half::bf16>(7168)), Some("layer_norm_block_7168_bf16"));
/// assert_eq!(name(layer_norm_kernel_for::<half::bf16>(7169)), Some("layer_norm_bf16"));
/// assert_eq!(name(layer_norm_kernel_for::<f32>(16385)), None);
/// ```
pub fn layer_norm_kernel_for<T: NormElement>(columns: usize) -> Option<&'static crate::KernelDefinition> {
    super::narrowest_holding(T::KERNELS[0], columns)
}

/// The kernel [`rms_norm`] takes for rows of `columns` elements of `T`, as
/// [`layer_norm_kernel_for`].
///
/// ```
/// use tessera::catalog::norm::rms_norm_kernel_for;
/// let name = |kernel: Option<&tessera::KernelDefinition>| kernel.map(|k| k.name());
/// assert_eq!(name(rms_norm_kernel_for::<f32>(3073)), Some("rms_norm_short_f32"));
/// assert_eq!(name(rms_norm_kernel_for::<half::f16>(3073)), Some("rms_norm_block_4096_f16"));
/// ```
pub fn rms_norm_kernel_for<T: NormElement>(columns: usize) -> Option<&'static crate::KernelDefinition> {
    super::narrowest_holding(T::KERNELS[1], columns)
}

/// LayerNorm of every row of `x` into `y` ([`layer_norm_f32`], [`layer_norm_bf16`],
/// [`layer_norm_f16`] by element type; the kernel [`layer_norm_kernel_for`] names for the row
/// length): rows of up to [`MAX_COLUMNS`] columns.
///
/// ```ignore
/// tessera::catalog::norm::layer_norm(&backend, &x, &weight, &bias, &mut y, 1e-5)?;
/// ```
pub fn layer_norm<T: NormElement>(
    device: &impl crate::Device,
    x: &impl Input<T>,
    weight: &impl Input<T>,
    bias: &impl Input<T>,
    y: &mut impl Output<T>,
    eps: f32,
) -> Result<crate::Launched, NormError> {
    let kernel = kernel_holding("layer_norm", layer_norm_kernel_for::<T>, x.shape())?;
    Ok(kernel.launch(
        device,
        &mut [
            crate::Argument::input("x", x),
            crate::Argument::input("weight", weight),
            crate::Argument::input("bias", bias),
            crate::Argument::output("y", y),
            crate::Argument::scalar("eps", eps),
        ],
    )?)
}

/// RMSNorm of every row of `x` into `y` ([`rms_norm_f32`], [`rms_norm_bf16`],
/// [`rms_norm_f16`] by element type; the kernel [`rms_norm_kernel_for`] names): rows of up to
/// [`MAX_COLUMNS`].
pub fn rms_norm<T: NormElement>(
    device: &impl crate::Device,
    x: &impl Input<T>,
    weight: &impl Input<T>,
    y: &mut impl Output<T>,
    eps: f32,
) -> Result<crate::Launched, NormError> {
    let kernel = kernel_holding("rms_norm", rms_norm_kernel_for::<T>, x.shape())?;
    Ok(kernel.launch(
        device,
        &mut [
            crate::Argument::input("x", x),
            crate::Argument::input("weight", weight),
            crate::Argument::output("y", y),
            crate::Argument::scalar("eps", eps),
        ],
    )?)
}

/// The kernel `kernel_for` names for the rows of `shape`, or the error that `norm` takes no
/// rows that long.
fn kernel_holding(
    norm: &'static str,
    kernel_for: fn(usize) -> Option<&'static crate::KernelDefinition>,
    shape: &[usize],
) -> Result<&'static crate::KernelDefinition, NormError> {
    let columns = shape.last().copied().unwrap_or(0);
    kernel_for(columns).ok_or_else(|| NormError::RowTooLong { norm, columns, max: MAX_COLUMNS })
}

/// A norm's error: a row longer than the kernels hold (before anything runs), or the launch's
/// own error. Through `?` as [`crate::catalog::attention::AttentionError`] goes: a launch's
/// error as itself, a row too long as [`crate::Error::Library`].
///
/// ```
/// use tessera::catalog::norm::NormError;
/// let error = NormError::RowTooLong { norm: "layer_norm", columns: 16385, max: 16384 };
/// assert!(error.to_string().contains("16385"));
/// let carried = tessera::Error::from(error);
/// assert!(matches!(carried.library::<NormError>(), Some(NormError::RowTooLong { norm: "layer_norm", .. })));
/// assert!(matches!(NormError::from(carried), NormError::RowTooLong { columns: 16385, .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NormError {
    #[error("`{norm}` holds a row of at most {max} columns in registers; this one has {columns}")]
    RowTooLong { norm: &'static str, columns: usize, max: usize },
    /// The row fits; the launch (or the compile before it) failed.
    #[error(transparent)]
    Launch(crate::Error),
}

crate::library_error::library_error_conversions!(NormError);

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 62] = [
    &layer_norm_warp_128_f32::KERNEL,
    &layer_norm_warp_256_f32::KERNEL,
    &layer_norm_warp_512_f32::KERNEL,
    &layer_norm_warp_1024_f32::KERNEL,
    &layer_norm_block_2048_f32::KERNEL,
    &layer_norm_block_3072_f32::KERNEL,
    &layer_norm_short_f32::KERNEL,
    &layer_norm_f32::KERNEL,
    &layer_norm_wide_f32::KERNEL,
    &rms_norm_warp_128_f32::KERNEL,
    &rms_norm_warp_256_f32::KERNEL,
    &rms_norm_warp_512_f32::KERNEL,
    &rms_norm_warp_1024_f32::KERNEL,
    &rms_norm_block_2048_f32::KERNEL,
    &rms_norm_block_3072_f32::KERNEL,
    &rms_norm_short_f32::KERNEL,
    &rms_norm_f32::KERNEL,
    &rms_norm_wide_f32::KERNEL,
    &layer_norm_warp_128_bf16::KERNEL,
    &layer_norm_warp_256_bf16::KERNEL,
    &layer_norm_warp_512_bf16::KERNEL,
    &layer_norm_warp_1024_bf16::KERNEL,
    &layer_norm_block_2048_bf16::KERNEL,
    &layer_norm_block_3072_bf16::KERNEL,
    &layer_norm_block_4096_bf16::KERNEL,
    &layer_norm_short_bf16::KERNEL,
    &layer_norm_block_6144_bf16::KERNEL,
    &layer_norm_block_7168_bf16::KERNEL,
    &layer_norm_bf16::KERNEL,
    &layer_norm_wide_bf16::KERNEL,
    &rms_norm_warp_128_bf16::KERNEL,
    &rms_norm_warp_256_bf16::KERNEL,
    &rms_norm_warp_512_bf16::KERNEL,
    &rms_norm_warp_1024_bf16::KERNEL,
    &rms_norm_block_2048_bf16::KERNEL,
    &rms_norm_block_3072_bf16::KERNEL,
    &rms_norm_block_4096_bf16::KERNEL,
    &rms_norm_short_bf16::KERNEL,
    &rms_norm_bf16::KERNEL,
    &rms_norm_wide_bf16::KERNEL,
    &layer_norm_warp_128_f16::KERNEL,
    &layer_norm_warp_256_f16::KERNEL,
    &layer_norm_warp_512_f16::KERNEL,
    &layer_norm_warp_1024_f16::KERNEL,
    &layer_norm_block_2048_f16::KERNEL,
    &layer_norm_block_3072_f16::KERNEL,
    &layer_norm_block_4096_f16::KERNEL,
    &layer_norm_short_f16::KERNEL,
    &layer_norm_block_6144_f16::KERNEL,
    &layer_norm_block_7168_f16::KERNEL,
    &layer_norm_f16::KERNEL,
    &layer_norm_wide_f16::KERNEL,
    &rms_norm_warp_128_f16::KERNEL,
    &rms_norm_warp_256_f16::KERNEL,
    &rms_norm_warp_512_f16::KERNEL,
    &rms_norm_warp_1024_f16::KERNEL,
    &rms_norm_block_2048_f16::KERNEL,
    &rms_norm_block_3072_f16::KERNEL,
    &rms_norm_block_4096_f16::KERNEL,
    &rms_norm_short_f16::KERNEL,
    &rms_norm_f16::KERNEL,
    &rms_norm_wide_f16::KERNEL,
];
