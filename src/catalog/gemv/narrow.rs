//! y = A·x on narrow rows (to 512 f32 or 1024 16-bit columns): a group of `LANES` lanes per row,
//! 32 / LANES rows a warp side by side, each lane loading `ITEMS` elements of its row as 16-byte
//! vectors (the vectors `position`, `position + LANES`, .. of the row) and the matching ones of
//! x, then `warp_sum(s, LANES)` adding the group's lanes. A warp per row ([`super::gemv_f32`])
//! leaves most of its lanes idle there — 12% of the device copy at 1048576 × 64 on an H200,
//! 22% at 524288 × 128 — where the loads of every lane are what keeps the memory busy.
//! [`super::gemv_kernel_for`] takes the narrowest width that holds the row.

use crate::prelude::*;

// Stamped for each width and element type: the lanes of a row, the elements a lane holds and
// the vector are the only differences (16-bit elements converted to f32 as they are loaded, f32
// sums, y rounded once).
macro_rules! gemv_lanes {
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt, lanes = $lanes:tt, items = $items:tt) => {
        $(#[$doc])*
        #[tile_kernel(
            threads = 256,
            vector = $vector,
            consts(WARP_ROWS = 8),
            fixed(LANES = $lanes, ITEMS = $items),
            require(WARP_ROWS * 32 == THREADS, ITEMS % VECTOR == 0, K <= LANES * ITEMS)
        )]
        pub fn $name(a: Global<$t, (M, K)>, x: Global<$t, (K,)>, y: GlobalMut<$t, (M,)>) {
            let (bx,) = grid(cdiv(M, WARP_ROWS * (32 / LANES)));
            // the row of this lane's group, and the lane's place in it
            let row = (bx * WARP_ROWS + warp_index()) * (32 / LANES) + lane() / LANES;
            let position = lane() % LANES;
            let vectors = K / VECTOR;
            // a row past the last reads the last (its group still takes part in the shuffles)
            let read_row = min(row, M - 1);
            let mut w = [0.0f32; ITEMS];
            let mut v = [0.0f32; ITEMS];
            if vectors > 0 {
                // all of a lane's loads in flight before any product: indices clamped into the row
                for j in 0..ITEMS / VECTOR {
                    let i = min(j * LANES + position, vectors - 1);
                    let row_vector = a.vector([read_row, i]);
                    let x_vector = x.vector(i);
                    for e in 0..VECTOR {
                        w[j * VECTOR + e] = row_vector[e] as f32;
                        v[j * VECTOR + e] = x_vector[e] as f32;
                    }
                }
            }
            // the columns past the last whole vector (fewer than VECTOR), one a lane: at most one
            // where the group has VECTOR lanes (a loop there cost the 1024-column bf16 kernel 17
            // registers, a block an SM and 20% of its speed on an H200)
            let mut s = 0.0f32;
            if LANES >= VECTOR {
                let tail_column = vectors * VECTOR + position;
                if tail_column < K {
                    s = a[[read_row, tail_column]] as f32 * x[tail_column] as f32;
                }
            } else {
                for c in (vectors * VECTOR + position..K).step_by(LANES) {
                    s += a[[read_row, c]] as f32 * x[c] as f32;
                }
            }
            for j in 0..ITEMS / VECTOR {
                if j * LANES + position < vectors {
                    for e in 0..VECTOR {
                        s += w[j * VECTOR + e] * v[j * VECTOR + e];
                    }
                }
            }
            let total = warp_sum(s, LANES);
            if row < M && position == 0 {
                y[row] = total as $t;
            }
        }
    };
}

gemv_lanes!(
    /// y = A·x for rows of up to 32 f32 columns: 4 lanes per row, 8 rows a warp, two vectors of
    /// 4 a lane.
    gemv_lanes_32_f32, f32, vector = 4, lanes = 4, items = 8
);
gemv_lanes!(
    /// y = A·x for rows of up to 64 f32 columns: 8 lanes per row, 4 rows a warp.
    gemv_lanes_64_f32, f32, vector = 4, lanes = 8, items = 8
);
gemv_lanes!(
    /// y = A·x for rows of up to 128 f32 columns: 16 lanes per row, 2 rows a warp.
    gemv_lanes_128_f32, f32, vector = 4, lanes = 16, items = 8
);
gemv_lanes!(
    /// y = A·x for rows of up to 256 f32 columns: a warp per row, two vectors of 4 a lane.
    gemv_lanes_256_f32, f32, vector = 4, lanes = 32, items = 8
);
gemv_lanes!(
    /// y = A·x for rows of up to 512 f32 columns: a warp per row, four vectors of 4 a lane.
    gemv_lanes_512_f32, f32, vector = 4, lanes = 32, items = 16
);
gemv_lanes!(
    /// y = A·x for bf16 rows of up to 32 columns: 4 lanes per row, 8 rows a warp, a vector of 8
    /// a lane (f32 sums, y rounded once; on an H200 at 1048576 × 32 0.024 ms where 8 lanes a row
    /// took 0.043).
    gemv_lanes_32_bf16, bf16, vector = 8, lanes = 4, items = 8
);
gemv_lanes!(
    /// y = A·x for bf16 rows of up to 64 columns: 4 lanes per row, 8 rows a warp, two vectors
    /// of 8 a lane (0.038 ms at 1048576 × 64 on an H200, where 8 lanes of one vector took 0.044).
    gemv_lanes_64_bf16, bf16, vector = 8, lanes = 4, items = 16
);
gemv_lanes!(
    /// y = A·x for bf16 rows of up to 128 columns: 8 lanes per row, 4 rows a warp, two vectors
    /// of 8 a lane.
    gemv_lanes_128_bf16, bf16, vector = 8, lanes = 8, items = 16
);
gemv_lanes!(
    /// y = A·x for bf16 rows of up to 256 columns: 16 lanes per row, 2 rows a warp.
    gemv_lanes_256_bf16, bf16, vector = 8, lanes = 16, items = 16
);
gemv_lanes!(
    /// y = A·x for bf16 rows of up to 512 columns: 16 lanes per row, 2 rows a warp, four
    /// vectors of 8 a lane (2% ahead of a warp of two vectors a lane at 131072 × 512).
    gemv_lanes_512_bf16, bf16, vector = 8, lanes = 16, items = 32
);
gemv_lanes!(
    /// y = A·x for bf16 rows of up to 1024 columns: a warp per row, four vectors of 8 a lane.
    gemv_lanes_1024_bf16, bf16, vector = 8, lanes = 32, items = 32
);
gemv_lanes!(
    /// [`gemv_lanes_32_bf16`] on f16 data.
    gemv_lanes_32_f16, f16, vector = 8, lanes = 4, items = 8
);
gemv_lanes!(
    /// [`gemv_lanes_64_bf16`] on f16 data.
    gemv_lanes_64_f16, f16, vector = 8, lanes = 4, items = 16
);
gemv_lanes!(
    /// [`gemv_lanes_128_bf16`] on f16 data.
    gemv_lanes_128_f16, f16, vector = 8, lanes = 8, items = 16
);
gemv_lanes!(
    /// [`gemv_lanes_256_bf16`] on f16 data.
    gemv_lanes_256_f16, f16, vector = 8, lanes = 16, items = 16
);
gemv_lanes!(
    /// [`gemv_lanes_512_bf16`] on f16 data.
    gemv_lanes_512_f16, f16, vector = 8, lanes = 16, items = 32
);
gemv_lanes!(
    /// [`gemv_lanes_1024_bf16`] on f16 data.
    gemv_lanes_1024_f16, f16, vector = 8, lanes = 32, items = 32
);

/// f32 rows by width: (the most columns, the kernel); a row takes the first that holds it.
///
/// ```
/// use tessera::catalog::gemv::narrow::F32_WIDTHS;
/// let widest = F32_WIDTHS.last().map(|&(most, kernel)| (most, kernel.name()));
/// assert_eq!(widest, Some((512, "gemv_lanes_512_f32")));
/// ```
pub const F32_WIDTHS: &[(usize, &crate::KernelDefinition)] = &[
    (32, &gemv_lanes_32_f32::KERNEL),
    (64, &gemv_lanes_64_f32::KERNEL),
    (128, &gemv_lanes_128_f32::KERNEL),
    (256, &gemv_lanes_256_f32::KERNEL),
    (512, &gemv_lanes_512_f32::KERNEL),
];
/// bf16 rows by width.
pub const BF16_WIDTHS: &[(usize, &crate::KernelDefinition)] = &[
    (32, &gemv_lanes_32_bf16::KERNEL),
    (64, &gemv_lanes_64_bf16::KERNEL),
    (128, &gemv_lanes_128_bf16::KERNEL),
    (256, &gemv_lanes_256_bf16::KERNEL),
    (512, &gemv_lanes_512_bf16::KERNEL),
    (1024, &gemv_lanes_1024_bf16::KERNEL),
];
/// f16 rows by width.
pub const F16_WIDTHS: &[(usize, &crate::KernelDefinition)] = &[
    (32, &gemv_lanes_32_f16::KERNEL),
    (64, &gemv_lanes_64_f16::KERNEL),
    (128, &gemv_lanes_128_f16::KERNEL),
    (256, &gemv_lanes_256_f16::KERNEL),
    (512, &gemv_lanes_512_f16::KERNEL),
    (1024, &gemv_lanes_1024_f16::KERNEL),
];
