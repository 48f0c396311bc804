//! Matrix–vector products, memory-bound: every element of A is read once, coalesced.
//!
//! - [`gemv_f32`], y = A·x: a warp per row (8 rows per block); each lane loads `ELEMENTS`
//!   elements a trip (16-byte loads, all in flight before any is used) into as many
//!   independent partial sums, then `warp_sum` adds the lanes up. [`gemv_bf16`] and
//!   [`gemv_f16`] do the same on 16-bit data ([`GemvElement`]); y = Aᵀ·x is f32 only.
//! - [`gemv_t_f32`], [`gemv_t_band_f32`] and [`gemv_t_band_pairs_f32`], y = Aᵀ·x: a block per
//!   band of 32 (or 64) columns, lane l on column l (and l + 32); the block's warps take
//!   interleaved runs of `UNROLL` rows, and their sums are added from shared memory in warp
//!   order, so the result does not depend on timing — 1024 threads a block for one to two bands
//!   an SM, 512 threads two blocks an SM beyond. With fewer bands than SMs (N under 4065
//!   columns) [`gemv_t`] splits the rows into slices instead ([`gemv_t_partials_f32`], 64
//!   columns a block, then [`gemv_t_finish_f32`], launched as its dependent, adds the slices in
//!   order; [`gemv_t_split_f32`] does both in one launch with `last_block_of`).

use crate::prelude::*;
use crate::{Input, Output};

// y = A·x is stamped for f32 and 16-bit data by a macro_rules!: the element type, its vector,
// the elements a lane loads a trip and the blocks an SM are the only differences (16-bit
// elements converted to f32 as they are loaded, f32 sums, y rounded once; `as f32` of an f32
// renders as nothing).
macro_rules! gemv {
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt, elements = $elements:tt, min_blocks = $min_blocks:tt) => {
        $(#[$doc])*
        #[tile_kernel(
            threads = 256,
            vector = $vector,
            min_blocks = $min_blocks,
            consts(WARP_ROWS = 8, ELEMENTS = $elements),
            require(WARP_ROWS * 32 == THREADS, ELEMENTS % VECTOR == 0)
        )]
        pub fn $name(a: Global<$t, (M, K)>, x: Global<$t, (K,)>, y: GlobalMut<$t, (M,)>) {
            let (bx,) = grid(cdiv(M, WARP_ROWS));
            let row = bx * WARP_ROWS + warp_index();
            if row < M {
                let mut s = [0.0f32; ELEMENTS];
                let vectors = K / VECTOR;
                for i0 in (0..vectors).step_by(32 * (ELEMENTS / VECTOR)) {
                    let mut w = [0.0f32; ELEMENTS];
                    let mut v = [0.0f32; ELEMENTS];
                    for u in 0..ELEMENTS / VECTOR {
                        let i = min(i0 + u * 32 + lane(), vectors - 1);
                        let row_vector = a.vector([row, i]);
                        let x_vector = x.vector(i);
                        for e in 0..VECTOR {
                            w[u * VECTOR + e] = row_vector[e] as f32;
                            v[u * VECTOR + e] = x_vector[e] as f32;
                        }
                    }
                    for u in 0..ELEMENTS / VECTOR {
                        if i0 + u * 32 + lane() < vectors {
                            for e in 0..VECTOR {
                                s[u * VECTOR + e] += w[u * VECTOR + e] * v[u * VECTOR + e];
                            }
                        }
                    }
                }
                for c in (vectors * VECTOR + lane()..K).step_by(32) {
                    s[0] += a[[row, c]] as f32 * x[c] as f32;
                }
                let mut total = 0.0f32;
                for e in 0..ELEMENTS {
                    total += s[e];
                }
                let row_total = warp_sum(total);
                if lane() == 0 {
                    y[row] = row_total as $t;
                }
            }
        }
    };
}
gemv!(
    /// y = A·x for A of M × K: a warp per row, each lane reading 16-byte vectors of the row and
    /// of x (`a.vector([row, i])`: columns 4i .. 4i + 3), so a load instruction moves four
    /// elements; rows whose leading dimension is not a multiple of 4 take single elements (the
    /// launch narrows `VECTOR` to 1). A lane loads its ELEMENTS elements of a trip (ELEMENTS /
    /// VECTOR loads, indices clamped into the row) before it multiplies any of them: the loads are
    /// straight-line code, all in flight at once, and only the products are guarded. The columns
    /// past the last whole vector come after, one element a lane. ELEMENTS = 32 and two blocks an
    /// SM are `tessera tune`'s winner at 8192 × 8192 on an H100 (5% over 16 and no hint).
    gemv_f32, f32, vector = 4, elements = 32, min_blocks = 2
);
gemv!(
    /// [`gemv_f32`] on bf16 A, x and y (f32 sums, y rounded once: what `torch.mv` does on bf16
    /// tensors): vectors of 8, trips of 16 elements a lane, four blocks an SM (on an H200 89% of
    /// the device copy at 8192² and 4096 × 14336, 83% at 14336 × 4096, where trips of 32 and
    /// two blocks gave 86, 88 and 81%; torch 88% at 8192²). Rows whose leading dimension is
    /// not a multiple of 8 take single elements (51% at 4097 × 4095; torch 43%).
    gemv_bf16, bf16, vector = 8, elements = 16, min_blocks = 4
);
gemv!(
    /// [`gemv_bf16`] on f16 data.
    gemv_f16, f16, vector = 8, elements = 16, min_blocks = 4
);

/// y = Aᵀ·x for A of M × N: a block per 32 columns (two blocks an SM: `tessera tune`'s winner
/// at 8192 × 8192 on an H100, 11% over one).
#[tile_kernel(threads = 512, vector = 1, min_blocks = 2, consts(WARPS = 16, UNROLL = 16), require(WARPS * 32 == THREADS))]
pub fn gemv_t_f32(a: Global<f32, (M, N)>, x: Global<f32, (M,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, 32));
    let partial = shared::<f32>([WARPS, 32]);
    let col = bx * 32 + lane();
    let mut s = [0.0f32; UNROLL];
    // loads clamped into A (straight-line: a lane's UNROLL loads all in flight), products guarded
    let column = min(col, N - 1);
    for r0 in (warp_index() * UNROLL..M).step_by(WARPS * UNROLL) {
        for u in 0..UNROLL {
            let r = min(r0 + u, M - 1);
            let product = a[[r, column]] * x[r];
            if r0 + u < M && col < N {
                s[u] += product;
            }
        }
    }
    let mut total = 0.0f32;
    for u in 0..UNROLL {
        total += s[u];
    }
    partial[[warp_index(), lane()]] = total;
    if warp_index() == 0 {
        let mut t = 0.0f32;
        for w in 0..WARPS {
            t += partial[[w, lane()]];
        }
        if col < N {
            y[col] = t;
        }
    }
}

// Aᵀ·x by bands of 32 · GROUPS columns: lane l of each warp takes columns l, l + 32, .. of its
// block's band, the warps take interleaved runs of UNROLL rows of the block's rows `begin ..
// end` (a lane's UNROLL · GROUPS loads all in flight before any is used), and the warps' sums
// are added in warp order, so the totals do not depend on timing. The kernels differ in the
// rows a block takes (all, or a slice of S), where the totals go (y, or a slice's partial
// row) and what follows (the last block of a band adding the slices): a macro_rules! of its
// own stamps them.
macro_rules! gemv_t_column_sums {
    (
        $(#[$doc:meta])*
        $name:ident,
        config = [$($config:tt)*],
        params = [$($params:tt)*],
        grid = [$($grid:tt)*],
        rows = [$($rows:tt)*],
        store = [$($store:tt)*],
        then = [$($then:tt)*]
    ) => {
        $(#[$doc])*
        #[tile_kernel($($config)*, require(WARPS * 32 == THREADS))]
        pub fn $name($($params)*) {
            $($grid)*
            let partial = shared::<f32>([WARPS, 32 * GROUPS]);
            let first_col = bx * 32 * GROUPS;
            $($rows)*
            let mut s = [0.0f32; GROUPS];
            // loads clamped into A, products guarded
            for r0 in (begin + warp_index() * UNROLL..end).step_by(WARPS * UNROLL) {
                let mut v = [0.0f32; UNROLL * GROUPS];
                let mut w = [0.0f32; UNROLL];
                for u in 0..UNROLL {
                    let r = min(r0 + u, M - 1);
                    w[u] = x[r];
                    for g in 0..GROUPS {
                        v[u * GROUPS + g] = a[[r, min(first_col + g * 32 + lane(), N - 1)]];
                    }
                }
                for u in 0..UNROLL {
                    if r0 + u < end {
                        for g in 0..GROUPS {
                            s[g] += v[u * GROUPS + g] * w[u];
                        }
                    }
                }
            }
            for g in 0..GROUPS {
                partial[[warp_index(), g * 32 + lane()]] = s[g];
            }
            let col = first_col + thread_index();
            if thread_index() < 32 * GROUPS {
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

gemv_t_column_sums!(
    /// y = Aᵀ·x in one launch, a block of 1024 threads per band of 32 columns, 32 rows a warp a
    /// trip; [`gemv_t`] takes it where the bands number one to two an SM. On an H200 (`tessera
    /// bench gemv`, BENCHMARKS.md) 80–83% of the device copy at 4097 × 4095 (128 bands) where the
    /// row-split passes reach 76%; at 8192² (256 bands, two blocks on most SMs) it measured 64 to
    /// 73 µs from run to run.
    gemv_t_band_f32,
    config = [threads = 1024, vector = 1, consts(WARPS = 32, UNROLL = 32, GROUPS = 1)],
    params = [a: Global<f32, (M, N)>, x: Global<f32, (M,)>, y: GlobalMut<f32, (N,)>],
    grid = [let (bx,) = grid(cdiv(N, 32 * GROUPS));],
    rows = [let begin = 0; let end = M;],
    store = [y[col] = t;],
    then = []
);
gemv_t_column_sums!(
    /// [`gemv_t_band_f32`] with bands of 64 columns (a lane on two, 32 apart), 16 rows a trip:
    /// where those bands number at most one an SM the grid is one even wave — at 8192² (128
    /// bands) 64.7 µs, 97.5% of the device copy, in two H200 runs, where [`gemv_t_f32`] holds
    /// 66–68 µs. sm_90: its 64 registers a thread (1024 threads' share) spill on sm_80.
    gemv_t_band_pairs_f32,
    config = [threads = 1024, vector = 1, target = sm_90, consts(WARPS = 32, UNROLL = 16, GROUPS = 2)],
    params = [a: Global<f32, (M, N)>, x: Global<f32, (M,)>, y: GlobalMut<f32, (N,)>],
    grid = [let (bx,) = grid(cdiv(N, 32 * GROUPS));],
    rows = [let begin = 0; let end = M;],
    store = [y[col] = t;],
    then = []
);
gemv_t_column_sums!(
    /// Pass 1 of y = Aᵀ·x split over row slices, for when one block per 32 columns is too few
    /// blocks to fill the GPU (fewer bands than SMs): block (bx, by) adds rows by·⌈M/S⌉ .. of
    /// columns bx·64 .. into `partials[by, ..]` (S = the rows of `partials`). Lane l of each
    /// warp takes columns l and l + 32 of the block's 64, so a warp reads 256 contiguous bytes of
    /// each of its rows (two 128-byte runs side by side: 85% of the device copy at 4097 × 4095 on
    /// an H100 where one run of 128 bytes gave 82%, `benchmarks/lab/rows/gemv_t.cu`); its 16 warps
    /// take interleaved runs of 8 rows, their loads all in flight before any is used, and the
    /// warps' partial sums are added in warp order. Two blocks an SM.
    gemv_t_partials_f32,
    config = [threads = 512, vector = 1, min_blocks = 2, consts(WARPS = 16, UNROLL = 8, GROUPS = 2)],
    params = [a: Global<f32, (M, N)>, x: Global<f32, (M,)>, partials: GlobalMut<f32, (S, N)>],
    grid = [let (bx, by) = grid(cdiv(N, 32 * GROUPS), S);],
    rows = [let slice = (M + S - 1) / S; let begin = by * slice; let end = min(begin + slice, M);],
    store = [partials[[by, col]] = t;],
    then = []
);
gemv_t_column_sums!(
    /// y = Aᵀ·x with the rows split into slices, in one launch: [`gemv_t_partials_f32`]'s blocks,
    /// each writing its slice's column sums into `partials[by, ..]`, and the last block of each
    /// band of 64 columns to finish (`last_block_of`) adds the band's S partials in slice order
    /// into y — the same sums, in the same order, as [`gemv_t_finish_f32`] after it, without the
    /// second launch. On an H200 the block's fence, count and read of the partials cost what the
    /// finishing pass's dependent launch does (23.4 µs against 23.1 µs at 4097 × 4095, 67.1 against
    /// 67.6 µs at 8192² in 4 slices), so [`gemv_t`] does not take it.
    gemv_t_split_f32,
    config = [threads = 512, vector = 1, min_blocks = 2, consts(WARPS = 16, UNROLL = 8, GROUPS = 2)],
    params = [
        a: Global<f32, (M, N)>,
        x: Global<f32, (M,)>,
        partials: GlobalMut<f32, (S, N)>,
        y: GlobalMut<f32, (N,)>
    ],
    grid = [let (bx, by) = grid(cdiv(N, 32 * GROUPS), S);],
    rows = [let slice = (M + S - 1) / S; let begin = by * slice; let end = min(begin + slice, M);],
    store = [partials[[by, col]] = t;],
    then = [
        if last_block_of(bx, S) {
            if thread_index() < 32 * GROUPS && col < N {
                let mut total = 0.0f32;
                for r in 0..S {
                    total += partials[[r, col]];
                }
                y[col] = total;
            }
        }
    ]
);

/// Pass 2: `y[c]` = the S partials of column c added in order (the result does not depend on
/// which block finished first).
#[tile_kernel(threads = 256, vector = 1, consts(COLUMNS = 256))]
pub fn gemv_t_finish_f32(partials: Global<f32, (S, N)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, COLUMNS));
    let col = bx * COLUMNS + thread_index();
    if col < N {
        let mut t = 0.0f32;
        for r in 0..S {
            t += partials[[r, col]];
        }
        y[col] = t;
    }
}

/// Element types y = A·x takes: f32, bf16 and f16 (f32 sums for all).
pub trait GemvElement: crate::runtime::Element {
    /// This type's [`gemv`] kernel.
    const KERNEL: &'static crate::KernelDefinition;
}

impl GemvElement for f32 {
    const KERNEL: &'static crate::KernelDefinition = &gemv_f32::KERNEL;
}

impl GemvElement for bf16 {
    const KERNEL: &'static crate::KernelDefinition = &gemv_bf16::KERNEL;
}

impl GemvElement for f16 {
    const KERNEL: &'static crate::KernelDefinition = &gemv_f16::KERNEL;
}

/// y = A·x ([`gemv_f32`], [`gemv_bf16`], [`gemv_f16`] by element type).
///
/// ```ignore
/// tessera::catalog::gemv::gemv(&backend, &a, &x, &mut y)?;   // a: [m, k], x: [k], y: [m]
/// ```
pub fn gemv<T: GemvElement>(
    device: &impl crate::Device,
    a: &impl Input<T>,
    x: &impl Input<T>,
    y: &mut impl Output<T>,
) -> Result<crate::Launched, Error> {
    T::KERNEL.launch(
        device,
        &mut [crate::Argument::input("a", a), crate::Argument::input("x", x), crate::Argument::output("y", y)],
    )
}

/// Pass-1 blocks (of 64 columns) that fill an H200 about twice over (132 SMs, two blocks of
/// 512 threads each): 8 slices at 4097 × 4095, which measured 85% of the device copy against
/// 83% with 16 (H100, `benchmarks/lab/rows/gemv_t.cu`).
const FILLING_BLOCKS: usize = 512;
/// Bands of 32 columns from which the rows are not split — about one an SM — and
/// [`gemv_t_band_f32`] runs alone: on an H200 at 4097 × 4095 (128 bands) it took 21.7–22.4 µs
/// where the row-split passes took 23.0 µs; at 8192 × 3000 (94 bands) 33.7 µs against 31.2 µs.
const UNSPLIT_COLUMN_BANDS: usize = 128;
/// Bands of 32 columns from which [`gemv_t_band_f32`]'s blocks stop fitting the GPU in one
/// wave (two an SM at most): at 8192² (256 bands) it varied from 64 to 73 µs.
const SMALL_BLOCK_BANDS: usize = 256;
/// Bands of 64 columns [`gemv_t_band_pairs_f32`] takes in one wave, one block an SM: the SMs
/// of an H100 or H200.
const PAIR_BANDS: usize = 132;

/// The slices [`gemv_t`] splits the rows of a `rows × cols` A into: 1 (no split) where
/// [`gemv_t_band_f32`]'s bands of 32 columns number one an SM or more, else enough for
/// [`gemv_t_partials_f32`]'s blocks of 64 columns to fill the GPU, at most 32 and at least
/// 512 rows each.
///
/// ```
/// use tessera::catalog::gemv::row_slices;
/// assert_eq!(row_slices(8192, 8192), 1);
/// assert_eq!(row_slices(4097, 4095), 1);
/// assert_eq!(row_slices(8192, 3000), 10);
/// assert_eq!(row_slices(2049, 31), 5);
/// ```
pub fn row_slices(rows: usize, cols: usize) -> usize {
    if cols.div_ceil(32) >= UNSPLIT_COLUMN_BANDS {
        1
    } else {
        let column_blocks = cols.div_ceil(64).max(1);
        (FILLING_BLOCKS / column_blocks).clamp(1, 32).min(rows.div_ceil(512).max(1))
    }
}

/// y = Aᵀ·x without transposing A: from 256 bands of 32 columns [`gemv_t_band_pairs_f32`]
/// while its bands of 64 fit one an SM (on sm_90), then [`gemv_t_f32`]; [`gemv_t_band_f32`]
/// from 128 bands (one an SM); below, the rows split into slices ([`gemv_t_partials_f32`] into a workspace,
/// then [`gemv_t_finish_f32`]). Returns the last launch.
pub fn gemv_t(
    device: &impl crate::Device,
    a: &impl Input<f32>,
    x: &impl Input<f32>,
    y: &mut impl Output<f32>,
) -> Result<crate::Launched, Error> {
    let (rows, cols) = match a.shape() {
        &[rows, cols] => (rows, cols),
        _ => return gemv_t_f32::launch(device, a, x, y),
    };
    if cols.div_ceil(32) >= SMALL_BLOCK_BANDS {
        // the pairs kernel is sm_90's (its registers spill on sm_80)
        return if super::runs_sm_90(device) && cols.div_ceil(64) <= PAIR_BANDS {
            gemv_t_band_pairs_f32::launch(device, a, x, y)
        } else {
            gemv_t_f32::launch(device, a, x, y)
        };
    }
    let slices = row_slices(rows, cols);
    if slices == 1 {
        return gemv_t_band_f32::launch(device, a, x, y);
    }
    // every slice's partial sums written by pass 1 before pass 2 reads them: no zeroing (a
    // memset between the passes would also stand between pass 2 and its dependent launch)
    let mut partials: crate::DeviceTensor<f32> = device.device_ref().scratch([slices, cols])?;
    gemv_t_partials_f32::launch(device, a, x, &mut partials)?;
    gemv_t_finish_f32::launch_dependent(device, &partials, y)
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 9] = [
    &gemv_f32::KERNEL,
    &gemv_bf16::KERNEL,
    &gemv_f16::KERNEL,
    &gemv_t_f32::KERNEL,
    &gemv_t_band_f32::KERNEL,
    &gemv_t_band_pairs_f32::KERNEL,
    &gemv_t_partials_f32::KERNEL,
    &gemv_t_finish_f32::KERNEL,
    &gemv_t_split_f32::KERNEL,
];
