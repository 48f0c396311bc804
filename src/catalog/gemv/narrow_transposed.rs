//! y = Aᵀ·x on narrow rows (to 256 f32 or 512 16-bit columns): the row split of
//! [`super::gemv_t`] with rows read whole. A block of 256 threads per slice of rows; each row a
//! group of `LANES` lanes (32 / LANES rows a warp side by side, so a warp reads that many
//! consecutive rows at once), each lane loading its `ITEMS` columns as 16-byte vectors and
//! adding `a[r, c]·x[r]` into as many sums, `UNROLL` rows a trip all loaded before any is used;
//! the groups' sums are added from shared memory in group order into `partials[slice, ..]`,
//! then [`gemv_t_lanes_finish_f32`] (or its 16-bit forms) adds the slices in order, each warp of
//! a block taking every 32nd slice of 32 columns. The band kernels give a block 32 to 128
//! columns of every row: at 1048576 × 64 two bands, 32 slices, 64 blocks for 132 SMs and 40% of
//! the device copy on an H200 (torch 85%).

use crate::prelude::*;

// The first pass, stamped for each width and element type (16-bit elements converted to f32 as
// they are loaded, f32 sums).
macro_rules! gemv_t_lanes_partials {
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt, lanes = $lanes:tt, items = $items:tt, unroll = $unroll:tt) => {
        $(#[$doc])*
        #[tile_kernel(
            threads = 256,
            vector = $vector,
            consts(WARPS = 8),
            fixed(LANES = $lanes, ITEMS = $items, UNROLL = $unroll),
            require(WARPS * 32 == THREADS, VECTOR <= LANES, ITEMS % VECTOR == 0, N <= LANES * ITEMS)
        )]
        pub fn $name(a: Global<$t, (M, N)>, x: Global<$t, (M,)>, partials: GlobalMut<f32, (S, N)>) {
            let (by,) = grid(S);
            // every group's column sums: a row of LANES · ITEMS columns per group of the block
            let sums = shared::<f32>([WARPS * (32 / LANES), LANES * ITEMS]);
            let slice = (M + S - 1) / S;
            let begin = by * slice;
            let end = min(begin + slice, M);
            let groups = 32 / LANES;
            let group = lane() / LANES;
            let position = lane() % LANES;
            let vectors = N / VECTOR;
            // the columns past the last whole vector (fewer than VECTOR <= LANES), one a lane
            let tail_column = vectors * VECTOR + position;
            let mut s = [0.0f32; ITEMS];
            let mut tail = 0.0f32;
            // a warp takes runs of UNROLL · groups consecutive rows, its groups side by side
            for r0 in (begin + warp_index() * (UNROLL * groups)..end).step_by(WARPS * UNROLL * groups) {
                let mut v = [0.0f32; UNROLL * ITEMS];
                let mut w = [0.0f32; UNROLL];
                let mut extra = [0.0f32; UNROLL];
                for u in 0..UNROLL {
                    let r = min(r0 + u * groups + group, M - 1);
                    w[u] = x[r] as f32;
                    if vectors > 0 {
                        for j in 0..ITEMS / VECTOR {
                            let loaded = a.vector([r, min(j * LANES + position, vectors - 1)]);
                            for e in 0..VECTOR {
                                v[u * ITEMS + j * VECTOR + e] = loaded[e] as f32;
                            }
                        }
                    }
                    if tail_column < N {
                        extra[u] = a[[r, tail_column]] as f32;
                    }
                }
                for u in 0..UNROLL {
                    if r0 + u * groups + group < end {
                        for k in 0..ITEMS {
                            s[k] += v[u * ITEMS + k] * w[u];
                        }
                        tail += extra[u] * w[u];
                    }
                }
            }
            let row = warp_index() * groups + group;
            for j in 0..ITEMS / VECTOR {
                if j * LANES + position < vectors {
                    for e in 0..VECTOR {
                        sums[[row, (j * LANES + position) * VECTOR + e]] = s[j * VECTOR + e];
                    }
                }
            }
            if tail_column < N {
                sums[[row, tail_column]] = tail;
            }
            // the block's groups added in order, a thread per column
            for c in (thread_index()..N).step_by(THREADS) {
                let mut t = 0.0f32;
                for g in 0..WARPS * (32 / LANES) {
                    t += sums[[g, c]];
                }
                partials[[by, c]] = t;
            }
        }
    };
}

// The second pass: y[c] = the S partials of column c added in a fixed order (each warp of a
// block every 32nd slice of the block's 32 columns, then the warps' totals in warp order).
macro_rules! gemv_t_lanes_finish {
    ($(#[$doc:meta])* $name:ident, $t:ident) => {
        $(#[$doc])*
        #[tile_kernel(threads = 1024, vector = 1, consts(WARPS = 32, COLUMNS = 32), require(WARPS * 32 == THREADS))]
        pub fn $name(partials: Global<f32, (S, N)>, y: GlobalMut<$t, (N,)>) {
            let (bx,) = grid(cdiv(N, COLUMNS));
            let totals = shared::<f32>([WARPS, COLUMNS]);
            let col = bx * COLUMNS + lane();
            let mut t = 0.0f32;
            if col < N {
                for r in (warp_index()..S).step_by(WARPS) {
                    t += partials[[r, col]];
                }
            }
            totals[[warp_index(), lane()]] = t;
            if thread_index() < COLUMNS {
                let mut total = 0.0f32;
                for w in 0..WARPS {
                    total += totals[[w, thread_index()]];
                }
                let c = bx * COLUMNS + thread_index();
                if c < N {
                    y[c] = total as $t;
                }
            }
        }
    };
}

gemv_t_lanes_partials!(
    /// Pass 1 of y = Aᵀ·x for rows of up to 32 f32 columns: 8 lanes per row (4 rows a warp),
    /// a vector of 4 a lane, 8 rows a group a trip.
    gemv_t_lanes_32_f32, f32, vector = 4, lanes = 8, items = 4, unroll = 8
);
gemv_t_lanes_partials!(
    /// Pass 1 of y = Aᵀ·x for rows of up to 64 f32 columns: 16 lanes per row (2 rows a warp).
    gemv_t_lanes_64_f32, f32, vector = 4, lanes = 16, items = 4, unroll = 8
);
gemv_t_lanes_partials!(
    /// Pass 1 of y = Aᵀ·x for rows of up to 128 f32 columns: a warp per row.
    gemv_t_lanes_128_f32, f32, vector = 4, lanes = 32, items = 4, unroll = 8
);
gemv_t_lanes_partials!(
    /// Pass 1 of y = Aᵀ·x for rows of up to 256 f32 columns: a warp per row, two vectors a
    /// lane, 4 rows a trip.
    gemv_t_lanes_256_f32, f32, vector = 4, lanes = 32, items = 8, unroll = 4
);
gemv_t_lanes_partials!(
    /// Pass 1 of y = Aᵀ·x for bf16 rows of up to 64 columns: 8 lanes per row (4 rows a warp), a
    /// vector of 8 a lane, 4 rows a group a trip (f32 sums).
    gemv_t_lanes_64_bf16, bf16, vector = 8, lanes = 8, items = 8, unroll = 4
);
gemv_t_lanes_partials!(
    /// Pass 1 of y = Aᵀ·x for bf16 rows of up to 128 columns: 16 lanes per row.
    gemv_t_lanes_128_bf16, bf16, vector = 8, lanes = 16, items = 8, unroll = 4
);
gemv_t_lanes_partials!(
    /// Pass 1 of y = Aᵀ·x for bf16 rows of up to 256 columns: a warp per row.
    gemv_t_lanes_256_bf16, bf16, vector = 8, lanes = 32, items = 8, unroll = 4
);
gemv_t_lanes_partials!(
    /// Pass 1 of y = Aᵀ·x for bf16 rows of up to 512 columns: a warp per row, two vectors a
    /// lane, 2 rows a trip.
    gemv_t_lanes_512_bf16, bf16, vector = 8, lanes = 32, items = 16, unroll = 2
);
gemv_t_lanes_partials!(
    /// [`gemv_t_lanes_64_bf16`] on f16 data.
    gemv_t_lanes_64_f16, f16, vector = 8, lanes = 8, items = 8, unroll = 4
);
gemv_t_lanes_partials!(
    /// [`gemv_t_lanes_128_bf16`] on f16 data.
    gemv_t_lanes_128_f16, f16, vector = 8, lanes = 16, items = 8, unroll = 4
);
gemv_t_lanes_partials!(
    /// [`gemv_t_lanes_256_bf16`] on f16 data.
    gemv_t_lanes_256_f16, f16, vector = 8, lanes = 32, items = 8, unroll = 4
);
gemv_t_lanes_partials!(
    /// [`gemv_t_lanes_512_bf16`] on f16 data.
    gemv_t_lanes_512_f16, f16, vector = 8, lanes = 32, items = 16, unroll = 2
);
gemv_t_lanes_finish!(
    /// Pass 2 of the narrow-row y = Aᵀ·x: `y[c]` = the S partials of column c, added in a fixed
    /// order (the result does not depend on which block of pass 1 finished first).
    gemv_t_lanes_finish_f32, f32
);
gemv_t_lanes_finish!(
    /// [`gemv_t_lanes_finish_f32`] into a bf16 y (the f32 total rounded once).
    gemv_t_lanes_finish_bf16, bf16
);
gemv_t_lanes_finish!(
    /// [`gemv_t_lanes_finish_f32`] into an f16 y.
    gemv_t_lanes_finish_f16, f16
);

/// The narrow-row y = Aᵀ·x kernels of one element type: the first passes by width (the most
/// columns, the kernel; a row takes the first that holds it) and the finishing pass.
///
/// ```
/// use tessera::catalog::gemv::BF16_NARROW_TRANSPOSED;
/// assert_eq!(BF16_NARROW_TRANSPOSED.widths.last().map(|&(most, _)| most), Some(512));
/// assert_eq!(BF16_NARROW_TRANSPOSED.finish.name(), "gemv_t_lanes_finish_bf16");
/// ```
pub struct NarrowTransposed {
    /// Pass 1 by width.
    pub widths: &'static [(usize, &'static crate::KernelDefinition)],
    /// Pass 2.
    pub finish: &'static crate::KernelDefinition,
}

/// f32's.
pub const F32_NARROW_TRANSPOSED: NarrowTransposed = NarrowTransposed {
    widths: &[
        (32, &gemv_t_lanes_32_f32::KERNEL),
        (64, &gemv_t_lanes_64_f32::KERNEL),
        (128, &gemv_t_lanes_128_f32::KERNEL),
        (256, &gemv_t_lanes_256_f32::KERNEL),
    ],
    finish: &gemv_t_lanes_finish_f32::KERNEL,
};
/// bf16's.
pub const BF16_NARROW_TRANSPOSED: NarrowTransposed = NarrowTransposed {
    widths: &[
        (64, &gemv_t_lanes_64_bf16::KERNEL),
        (128, &gemv_t_lanes_128_bf16::KERNEL),
        (256, &gemv_t_lanes_256_bf16::KERNEL),
        (512, &gemv_t_lanes_512_bf16::KERNEL),
    ],
    finish: &gemv_t_lanes_finish_bf16::KERNEL,
};
/// f16's.
pub const F16_NARROW_TRANSPOSED: NarrowTransposed = NarrowTransposed {
    widths: &[
        (64, &gemv_t_lanes_64_f16::KERNEL),
        (128, &gemv_t_lanes_128_f16::KERNEL),
        (256, &gemv_t_lanes_256_f16::KERNEL),
        (512, &gemv_t_lanes_512_f16::KERNEL),
    ],
    finish: &gemv_t_lanes_finish_f16::KERNEL,
};
