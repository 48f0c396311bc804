//! y = Aᵀ·x without transposing A: a block per band of `COLUMNS` columns, the lanes of each
//! warp side by side across the band (a warp reads 128 or 256 contiguous bytes of each of its
//! rows), the block's warps down interleaved runs of `UNROLL` rows, their sums added from
//! shared memory in warp order, so the result does not depend on timing. f32 lanes load single
//! elements; 16-bit lanes load vectors of 2 or 4 (as many bytes a row as an f32 band of half
//! the columns, in half the load instructions). With fewer bands than SMs the rows are split
//! into slices (`gemv_t_partials_*` into f32 partial sums, then `gemv_t_finish_*` adds the
//! slices in order); [`super::gemv_t`] picks the kernel.

use crate::prelude::*;

// Every Aᵀ·x kernel is stamped by this macro_rules!: lane l of each warp takes the vectors l,
// l + 32, .. of its block's band (COLUMNS / 32 columns a lane), the warps interleaved runs of
// UNROLL rows of the block's rows `begin .. end` (a lane's loads all in flight before any is
// used: straight-line, indices clamped into A, only the products guarded). The kernels differ
// in the element type, the band, the rows a block takes (all, or a slice of S), where the
// totals go (y, or a slice's partial row) and what follows (the last block of a band adding
// the slices).
macro_rules! gemv_t_column_sums {
    // f32: a lane loads single elements (its columns 32 apart)
    ($(#[$doc:meta])* $name:ident, sums = elements, $($rest:tt)*) => {
        gemv_t_column_sums!(@kernel $(#[$doc])* $name, $($rest)*, sums = [
            let first_col = bx * COLUMNS;
            for r0 in (begin + warp_index() * UNROLL..end).step_by(WARPS * UNROLL) {
                let mut v = [0.0f32; UNROLL * (COLUMNS / 32)];
                let mut w = [0.0f32; UNROLL];
                for u in 0..UNROLL {
                    let r = min(r0 + u, M - 1);
                    w[u] = x[r] as f32;
                    for j in 0..COLUMNS / 32 {
                        v[u * (COLUMNS / 32) + j] = a[[r, min(first_col + j * 32 + lane(), N - 1)]] as f32;
                    }
                }
                for u in 0..UNROLL {
                    if r0 + u < end {
                        for k in 0..COLUMNS / 32 {
                            s[k] += v[u * (COLUMNS / 32) + k] * w[u];
                        }
                    }
                }
            }
        ]);
    };
    // 16-bit: a lane loads vectors (their first elements 32 · VECTOR apart), or single elements
    // where the rows end inside a vector
    ($(#[$doc:meta])* $name:ident, sums = vectors, $($rest:tt)*) => {
        gemv_t_column_sums!(@kernel $(#[$doc])* $name, $($rest)*, sums = [
            let first_vector = bx * (COLUMNS / VECTOR);
            if N % VECTOR == 0 {
                // whole vectors, the index clamped to the row's last
                let last_vector = N / VECTOR - 1;
                for r0 in (begin + warp_index() * UNROLL..end).step_by(WARPS * UNROLL) {
                    let mut v = [0.0f32; UNROLL * (COLUMNS / 32)];
                    let mut w = [0.0f32; UNROLL];
                    for u in 0..UNROLL {
                        let r = min(r0 + u, M - 1);
                        w[u] = x[r] as f32;
                        for j in 0..COLUMNS / (32 * VECTOR) {
                            let loaded = a.vector([r, min(first_vector + j * 32 + lane(), last_vector)]);
                            for e in 0..VECTOR {
                                v[u * (COLUMNS / 32) + j * VECTOR + e] = loaded[e] as f32;
                            }
                        }
                    }
                    for u in 0..UNROLL {
                        if r0 + u < end {
                            for k in 0..COLUMNS / 32 {
                                s[k] += v[u * (COLUMNS / 32) + k] * w[u];
                            }
                        }
                    }
                }
            } else {
                // a view whose width is not a multiple of VECTOR in rows that start aligned
                // (dense rows of such widths narrow VECTOR instead): by element, the column
                // clamped to the row's last
                for r0 in (begin + warp_index() * UNROLL..end).step_by(WARPS * UNROLL) {
                    let mut v = [0.0f32; UNROLL * (COLUMNS / 32)];
                    let mut w = [0.0f32; UNROLL];
                    for u in 0..UNROLL {
                        let r = min(r0 + u, M - 1);
                        w[u] = x[r] as f32;
                        for j in 0..COLUMNS / (32 * VECTOR) {
                            for e in 0..VECTOR {
                                let c = min((first_vector + j * 32 + lane()) * VECTOR + e, N - 1);
                                v[u * (COLUMNS / 32) + j * VECTOR + e] = a[[r, c]] as f32;
                            }
                        }
                    }
                    for u in 0..UNROLL {
                        if r0 + u < end {
                            for k in 0..COLUMNS / 32 {
                                s[k] += v[u * (COLUMNS / 32) + k] * w[u];
                            }
                        }
                    }
                }
            }
        ]);
    };
    (
        @kernel
        $(#[$doc:meta])*
        $name:ident,
        config = [$($config:tt)*],
        params = [$($params:tt)*],
        grid = [$($grid:tt)*],
        rows = [$($rows:tt)*],
        store = [$($store:tt)*],
        then = [$($then:tt)*],
        sums = [$($sums:tt)*]
    ) => {
        $(#[$doc])*
        #[tile_kernel($($config)*, require(WARPS * 32 == THREADS, COLUMNS % (32 * VECTOR) == 0))]
        pub fn $name($($params)*) {
            $($grid)*
            let partial = shared::<f32>([WARPS, COLUMNS]);
            $($rows)*
            // lane l's share of the band: COLUMNS / 32 columns, summed over the block's rows
            let mut s = [0.0f32; COLUMNS / 32];
            $($sums)*
            for j in 0..COLUMNS / (32 * VECTOR) {
                for e in 0..VECTOR {
                    partial[[warp_index(), (j * 32 + lane()) * VECTOR + e]] = s[j * VECTOR + e];
                }
            }
            let col = bx * COLUMNS + thread_index();
            if thread_index() < COLUMNS {
                let mut t = 0.0f32;
                for w in 0..WARPS {
                    t += partial[[w, thread_index()]];
                }
                if col < N {
                    $($store)*
                }
            }
            $($then)*
        }
    };
}

// The three one-launch shapes of the band (512 threads two blocks an SM, 1024 threads for
// one or two bands an SM, 1024 threads on double-width bands), the row-split first pass and
// the finishing pass, for one element type and its bands.
macro_rules! gemv_t_kernels {
    // 16-bit data: lanes on vectors of 2 (bands of 64 columns) and 4 (double-width bands of 128);
    // the band kernel's rows a trip per type
    (sixteen_bit $t:ident, band_unroll = $band_unroll:tt, $($kernels:tt)*) => {
        gemv_t_kernels!(
            $t,
            sums = vectors,
            vector = 2,
            columns = 64,
            wide_vector = 4,
            wide_columns = 128,
            // 24 rows a trip: with 32, 64 registers spilled 8 bytes
            unroll = 24,
            band_unroll = $band_unroll,
            // one block an SM said, so that ptxas keeps every load of a trip in flight (64
            // registers; unsaid it chose 32 and interleaved the loads with the products)
            one_wave = [min_blocks = 1,],
            $($kernels)*
        );
    };
    (
        $t:ident,
        sums = $sums:ident,
        vector = $vector:tt,
        columns = $columns:tt,
        wide_vector = $wide_vector:tt,
        wide_columns = $wide_columns:tt,
        unroll = $unroll:tt,
        band_unroll = $band_unroll:tt,
        one_wave = [$($one_wave:tt)*],
        rows = [$(#[$rows_doc:meta])* $rows_kernel:ident],
        band = [$(#[$band_doc:meta])* $band:ident],
        pairs = [$(#[$pairs_doc:meta])* $pairs:ident],
        partials = [$(#[$partials_doc:meta])* $partials:ident],
        finish = [$(#[$finish_doc:meta])* $finish:ident]
    ) => {
        gemv_t_column_sums!(
            $(#[$rows_doc])*
            $rows_kernel,
            sums = $sums,
            config = [threads = 512, vector = $vector, min_blocks = 2, consts(WARPS = 16, UNROLL = $unroll, COLUMNS = $columns)],
            params = [a: Global<$t, (M, N)>, x: Global<$t, (M,)>, y: GlobalMut<$t, (N,)>],
            grid = [let (bx,) = grid(cdiv(N, COLUMNS));],
            rows = [let begin = 0; let end = M;],
            store = [y[col] = t as $t;],
            then = []
        );
        gemv_t_column_sums!(
            $(#[$band_doc])*
            $band,
            sums = $sums,
            config = [threads = 1024, vector = $vector, $($one_wave)* consts(WARPS = 32, UNROLL = $band_unroll, COLUMNS = $columns)],
            params = [a: Global<$t, (M, N)>, x: Global<$t, (M,)>, y: GlobalMut<$t, (N,)>],
            grid = [let (bx,) = grid(cdiv(N, COLUMNS));],
            rows = [let begin = 0; let end = M;],
            store = [y[col] = t as $t;],
            then = []
        );
        gemv_t_column_sums!(
            $(#[$pairs_doc])*
            $pairs,
            sums = $sums,
            config = [threads = 1024, vector = $wide_vector, target = sm_90, $($one_wave)* consts(WARPS = 32, UNROLL = 16, COLUMNS = $wide_columns)],
            params = [a: Global<$t, (M, N)>, x: Global<$t, (M,)>, y: GlobalMut<$t, (N,)>],
            grid = [let (bx,) = grid(cdiv(N, COLUMNS));],
            rows = [let begin = 0; let end = M;],
            store = [y[col] = t as $t;],
            then = []
        );
        gemv_t_column_sums!(
            $(#[$partials_doc])*
            $partials,
            sums = $sums,
            config = [threads = 512, vector = $vector, min_blocks = 2, consts(WARPS = 16, UNROLL = 8, COLUMNS = $wide_columns)],
            params = [a: Global<$t, (M, N)>, x: Global<$t, (M,)>, partials: GlobalMut<f32, (S, N)>],
            grid = [let (bx, by) = grid(cdiv(N, COLUMNS), S);],
            rows = [let slice = (M + S - 1) / S; let begin = by * slice; let end = min(begin + slice, M);],
            store = [partials[[by, col]] = t;],
            then = []
        );
        $(#[$finish_doc])*
        #[tile_kernel(threads = 256, vector = 1, consts(COLUMNS = 256))]
        pub fn $finish(partials: Global<f32, (S, N)>, y: GlobalMut<$t, (N,)>) {
            let (bx,) = grid(cdiv(N, COLUMNS));
            let col = bx * COLUMNS + thread_index();
            if col < N {
                let mut t = 0.0f32;
                for r in 0..S {
                    t += partials[[r, col]];
                }
                y[col] = t as $t;
            }
        }
    };
}

gemv_t_kernels!(
    f32,
    sums = elements,
    vector = 1,
    columns = 32,
    wide_vector = 1,
    wide_columns = 64,
    unroll = 16,
    band_unroll = 32,
    // one block an SM said (as for 16-bit data): 64 registers, a trip's loads in flight
    one_wave = [min_blocks = 1,],
    rows = [
        /// y = Aᵀ·x for A of M × N: a block of 512 threads per band of 32 columns, 16 rows a warp
        /// a trip (two blocks an SM: `tessera tune`'s winner at 8192 × 8192 on an H100, 11% over
        /// one). [`super::gemv_t`] takes it for many bands where [`gemv_t_band_pairs_f32`]'s
        /// do not fit one wave, and on sm_80.
        gemv_t_f32
    ],
    band = [
        /// y = Aᵀ·x, a block of 1024 threads per band of 32 columns, 32 rows a warp a trip,
        /// declared one block an SM so that ptxas gives it 64 registers and keeps a trip's loads
        /// in flight (unsaid it took 32 and interleaved them with the products: on an H200 86.6%
        /// of the device copy at 14336 × 4096 where this runs at 94–95%, 81.5% at 4097 × 4095
        /// against 84–85.5%, 66% at 8192 × 3000 against 79%). [`super::gemv_t`] takes it from
        /// f32's [`super::Unsplit`] bands to one wave ([`super::ONE_WAVE_BANDS`]), and from 192
        /// to 255 off sm_90.
        gemv_t_band_f32
    ],
    pairs = [
        /// [`gemv_t_band_f32`] with bands of 64 columns (a lane on two, 32 apart), 16 rows a
        /// trip: where those bands number at most one an SM the grid is one even wave — at
        /// 8192² (128 bands) 64.7 µs, 97.5% of the device copy, in two H200 runs, where
        /// [`gemv_t_f32`] holds 66–68 µs. sm_90: its 64 registers a thread (1024 threads'
        /// share) spill on sm_80.
        gemv_t_band_pairs_f32
    ],
    partials = [
        /// Pass 1 of y = Aᵀ·x split over row slices, where one pass would leave SMs idle or end
        /// on a thin wave ([`super::row_slices`]): block (bx, by) adds rows by·⌈M/S⌉ .. of
        /// columns bx·64 .. into `partials[by, ..]` (S = the rows of `partials`). Lane l of each
        /// warp takes columns l and l + 32 of the block's 64, so a warp reads 256 contiguous
        /// bytes of each of its rows (two 128-byte runs side by
        /// side: 85% of the device copy at 4097 × 4095 on an H100 where one run of 128 bytes
        /// gave 82%, `benchmarks/lab/rows/gemv_t.cu`); its 16 warps take interleaved runs of 8
        /// rows. Two blocks an SM.
        gemv_t_partials_f32
    ],
    finish = [
        /// Pass 2: `y[c]` = the S partials of column c added in order (the result does not
        /// depend on which block finished first).
        gemv_t_finish_f32
    ]
);

gemv_t_kernels!(
    // 12 rows a trip: on an H200 1–3 points of the device copy over 24 at 4096–16384 rows of
    // 8192–12000 columns (16384 × 8192: 94.0–94.3% against 91.1–91.5%), where f16 lost 0–2
    sixteen_bit bf16,
    band_unroll = 12,
    rows = [
        /// y = Aᵀ·x on bf16 A, x and y (f32 sums, y rounded once): [`gemv_t_f32`]'s 512
        /// threads, two blocks an SM, on bands of 64 columns, a lane loading two at once (the
        /// 128 bytes a row an f32 band reads, in half the loads), 24 rows a warp a trip. Rows
        /// whose leading dimension is odd take single elements (the launch narrows `VECTOR`).
        gemv_t_bf16
    ],
    band = [
        /// [`gemv_t_band_f32`] on bf16 data: 1024 threads per band of 64 columns, pairs of
        /// columns a lane, 12 rows a trip (on an H200 87% of the device copy at 8192², 94% at
        /// 16384 × 8192, where 24 rows gave 85 and 91%, single elements on bands of 64 68 and 72%).
        gemv_t_band_bf16
    ],
    pairs = [
        /// [`gemv_t_band_pairs_f32`] on bf16 data: bands of 128 columns, four columns a lane
        /// (256 bytes a row a warp), 16 rows a trip: 96–99% of the device copy at 8192 × 16384
        /// on an H200, 89–93% at 4096 × 16384.
        gemv_t_band_pairs_bf16
    ],
    partials = [
        /// [`gemv_t_partials_f32`] on bf16 A and x (partials in f32): bands of 128 columns,
        /// two pairs a lane.
        gemv_t_partials_bf16
    ],
    finish = [
        /// [`gemv_t_finish_f32`] into a bf16 y (the f32 total rounded once).
        gemv_t_finish_bf16
    ]
);

gemv_t_kernels!(
    sixteen_bit f16,
    band_unroll = 24,
    rows = [
        /// [`gemv_t_bf16`] on f16 data.
        gemv_t_f16
    ],
    band = [
        /// [`gemv_t_band_bf16`] on f16 data, 24 rows a trip (12 lost 0–2 points of the device
        /// copy on an H200).
        gemv_t_band_f16
    ],
    pairs = [
        /// [`gemv_t_band_pairs_bf16`] on f16 data.
        gemv_t_band_pairs_f16
    ],
    partials = [
        /// [`gemv_t_partials_bf16`] on f16 data.
        gemv_t_partials_f16
    ],
    finish = [
        /// [`gemv_t_finish_bf16`] into an f16 y.
        gemv_t_finish_f16
    ]
);

gemv_t_column_sums!(
    /// y = Aᵀ·x with the rows split into slices, in one launch: [`gemv_t_partials_f32`]'s blocks,
    /// each writing its slice's column sums into `partials[by, ..]`, and the last block of each
    /// band of 64 columns to finish (`last_block_of`) adds the band's S partials in slice order
    /// into y — the same sums, in the same order, as [`gemv_t_finish_f32`] after it, without the
    /// second launch. On an H200 the block's fence, count and read of the partials cost what the
    /// finishing pass's dependent launch does (23.4 µs against 23.1 µs at 4097 × 4095, 67.1 against
    /// 67.6 µs at 8192² in 4 slices), so [`super::gemv_t`] does not take it.
    gemv_t_split_f32,
    sums = elements,
    config = [threads = 512, vector = 1, min_blocks = 2, consts(WARPS = 16, UNROLL = 8, COLUMNS = 64)],
    params = [
        a: Global<f32, (M, N)>,
        x: Global<f32, (M,)>,
        partials: GlobalMut<f32, (S, N)>,
        y: GlobalMut<f32, (N,)>
    ],
    grid = [let (bx, by) = grid(cdiv(N, COLUMNS), S);],
    rows = [let slice = (M + S - 1) / S; let begin = by * slice; let end = min(begin + slice, M);],
    store = [partials[[by, col]] = t;],
    then = [
        if last_block_of(bx, S) {
            if thread_index() < COLUMNS && col < N {
                let mut total = 0.0f32;
                for r in 0..S {
                    total += partials[[r, col]];
                }
                y[col] = total;
            }
        }
    ]
);
