//! Matrix–vector products on f32, bf16 and f16 data ([`GemvElement`]; f32 sums, y rounded
//! once), memory-bound: every element of A is read once, coalesced.
//!
//! - [`gemv`], y = A·x: a warp per row (8 rows per block); each lane loads `ELEMENTS` elements
//!   a trip (16-byte loads, all in flight before any is used) into as many independent partial
//!   sums, then `warp_sum` adds the lanes up ([`gemv_f32`], [`gemv_bf16`], [`gemv_f16`]).
//!   Narrow rows (to 512 f32 or 1024 16-bit columns) take a group of lanes per row instead
//!   ([`narrow`]'s kernels; [`gemv_kernel_for`] names the one).
//! - [`gemv_t`], y = Aᵀ·x without transposing A ([`transposed`]'s kernels): a block per band of
//!   128 or 256 bytes of each row, the lanes side by side across it (f32 lanes on single
//!   columns, 16-bit lanes on vectors of 2 or 4); the block's warps take interleaved runs of
//!   `UNROLL` rows, and their sums are added from shared memory in warp order, so the result
//!   does not depend on timing. Where one pass would leave SMs idle or end on a thin wave
//!   ([`row_slices`]), [`gemv_t`] splits the rows into slices instead (the partials kernel,
//!   then the finishing one as its dependent, adding the slices in order; [`gemv_t_split_f32`]
//!   does both in one launch with `last_block_of`).

use crate::prelude::*;
use crate::{Input, Output};

pub mod narrow;
pub mod narrow_transposed;
pub mod transposed;
pub use narrow::*;
pub use narrow_transposed::*;
pub use transposed::*;

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

/// Element types y = A·x and y = Aᵀ·x take: f32, bf16 and f16 (f32 sums for all, y rounded
/// once).
pub trait GemvElement: crate::runtime::Element {
    /// This type's [`gemv`] kernel for rows wider than its narrow kernels take.
    const KERNEL: &'static crate::KernelDefinition;
    /// This type's narrow-row [`gemv`] kernels ([`narrow`]): (the most columns, the kernel), by
    /// width; a row takes the first that holds it.
    const WIDTHS: &'static [(usize, &'static crate::KernelDefinition)];
    /// This type's [`gemv_t`] kernels.
    const TRANSPOSED: TransposedKernels;
    /// This type's [`gemv_t`] kernels for narrow rows ([`narrow_transposed`]).
    const NARROW_TRANSPOSED: NarrowTransposed;
}

/// The kernels [`gemv_t`] picks from for one element type, by how many 128-byte bands a row of
/// A holds (32 f32 columns, 64 of 16 bits).
pub struct TransposedKernels {
    /// 512 threads, two blocks an SM, per 128-byte band (many bands, or sm_80), where its last
    /// wave is not a thin one ([`BUSY_WAVES`]).
    pub rows: &'static crate::KernelDefinition,
    /// 1024 threads per 128-byte band, from [`Unsplit`]'s bands to [`ONE_WAVE_BANDS`], and from
    /// 192 to 255 off sm_90.
    pub band: &'static crate::KernelDefinition,
    /// 1024 threads per 256-byte band, while those fill one wave (sm_90).
    pub band_pairs: &'static crate::KernelDefinition,
    /// Fewer bands than SMs: each slice of rows' column sums into f32 partials ..
    pub partials: &'static crate::KernelDefinition,
    /// .. then the slices added in order into y.
    pub finish: &'static crate::KernelDefinition,
    /// Where the band kernel runs alone rather than the rows split into slices.
    pub unsplit: Unsplit,
}

/// The 128-byte bands from which [`gemv_t`] runs the band kernel alone — one block a band, so
/// with fewer bands than SMs some SMs idle — rather than splitting the rows into slices (pass 1
/// into partials, pass 2 adding them): from `bands` on any A, from `short_bands` on A of at most
/// `short_rows` rows, where the partials and the second pass weigh more against the whole; in
/// both cases only while its blocks fit one wave ([`ONE_WAVE_BANDS`]).
///
/// ```
/// use tessera::catalog::gemv::{GemvElement, Unsplit};
/// assert_eq!(f32::TRANSPOSED.unsplit, Unsplit { bands: 104, short_rows: 8192, short_bands: 80 });
/// assert!(f32::TRANSPOSED.unsplit.runs_alone(8192, 80));
/// assert!(!f32::TRANSPOSED.unsplit.runs_alone(16384, 94));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unsplit {
    /// Bands from which the band kernel runs alone on any A.
    pub bands: usize,
    /// The most rows of an A on which it runs alone from `short_bands`.
    pub short_rows: usize,
    /// Bands from which it runs alone on A of at most `short_rows` rows.
    pub short_bands: usize,
}

impl Unsplit {
    /// Whether the band kernel runs alone on `rows` rows of `bands` 128-byte bands.
    pub fn runs_alone(&self, rows: usize, bands: usize) -> bool {
        bands <= ONE_WAVE_BANDS && (bands >= self.bands || (rows <= self.short_rows && bands >= self.short_bands))
    }
}

/// The 16-bit types' [`Unsplit`]: from 128 bands, one an SM, on any A, and from 94 on A of at
/// most 4096 rows. On an H200, % of the device copy, [`gemv_t_band_bf16`] (lanes on pairs, 24
/// rows a trip) alone against the row split at 80–120 bands (5120–7680 columns): at 4096 rows
/// 53–72% against 57–69% (the band kernel ahead by 2–3.5 points from 94 bands), at 8192 rows
/// 62–83% against 71–81% (behind to 94 bands, within 3 above), at 16384 rows 65–88% against
/// 83–89% (behind throughout).
const SIXTEEN_BIT_UNSPLIT: Unsplit = Unsplit { bands: 128, short_rows: 4096, short_bands: 94 };

impl GemvElement for f32 {
    const KERNEL: &'static crate::KernelDefinition = &gemv_f32::KERNEL;
    const WIDTHS: &'static [(usize, &'static crate::KernelDefinition)] = narrow::F32_WIDTHS;
    const TRANSPOSED: TransposedKernels = TransposedKernels {
        rows: &gemv_t_f32::KERNEL,
        band: &gemv_t_band_f32::KERNEL,
        band_pairs: &gemv_t_band_pairs_f32::KERNEL,
        partials: &gemv_t_partials_f32::KERNEL,
        finish: &gemv_t_finish_f32::KERNEL,
        // on an H200, [`gemv_t_band_f32`] alone against the row split, % of the device copy:
        // 4096 and 8192 rows, 80–120 bands (2560–3840 columns): 69–79 / 76–90% against 62–71 /
        // 72–85%; 16384 rows: 82–85% against 85–88% to 94 bands, 90–94% against 89–93% from 104
        unsplit: Unsplit { bands: 104, short_rows: 8192, short_bands: 80 },
    };
    const NARROW_TRANSPOSED: NarrowTransposed = narrow_transposed::F32_NARROW_TRANSPOSED;
}

impl GemvElement for bf16 {
    const KERNEL: &'static crate::KernelDefinition = &gemv_bf16::KERNEL;
    const WIDTHS: &'static [(usize, &'static crate::KernelDefinition)] = narrow::BF16_WIDTHS;
    const TRANSPOSED: TransposedKernels = TransposedKernels {
        rows: &gemv_t_bf16::KERNEL,
        band: &gemv_t_band_bf16::KERNEL,
        band_pairs: &gemv_t_band_pairs_bf16::KERNEL,
        partials: &gemv_t_partials_bf16::KERNEL,
        finish: &gemv_t_finish_bf16::KERNEL,
        unsplit: SIXTEEN_BIT_UNSPLIT,
    };
    const NARROW_TRANSPOSED: NarrowTransposed = narrow_transposed::BF16_NARROW_TRANSPOSED;
}

impl GemvElement for f16 {
    const KERNEL: &'static crate::KernelDefinition = &gemv_f16::KERNEL;
    const WIDTHS: &'static [(usize, &'static crate::KernelDefinition)] = narrow::F16_WIDTHS;
    const TRANSPOSED: TransposedKernels = TransposedKernels {
        rows: &gemv_t_f16::KERNEL,
        band: &gemv_t_band_f16::KERNEL,
        band_pairs: &gemv_t_band_pairs_f16::KERNEL,
        partials: &gemv_t_partials_f16::KERNEL,
        finish: &gemv_t_finish_f16::KERNEL,
        unsplit: SIXTEEN_BIT_UNSPLIT,
    };
    const NARROW_TRANSPOSED: NarrowTransposed = narrow_transposed::F16_NARROW_TRANSPOSED;
}

/// The kernel [`gemv`] takes for rows of `cols` elements of `T`: the narrowest group-of-lanes
/// kernel that holds the row ([`narrow`]), else the warp per row.
///
/// ```
/// use tessera::catalog::gemv::gemv_kernel_for;
/// assert_eq!(gemv_kernel_for::<f32>(64).name(), "gemv_lanes_64_f32");
/// assert_eq!(gemv_kernel_for::<f32>(65).name(), "gemv_lanes_128_f32");
/// assert_eq!(gemv_kernel_for::<f32>(1024).name(), "gemv_f32");
/// assert_eq!(gemv_kernel_for::<half::bf16>(1024).name(), "gemv_lanes_1024_bf16");
/// ```
pub fn gemv_kernel_for<T: GemvElement>(cols: usize) -> &'static crate::KernelDefinition {
    super::narrowest_holding(T::WIDTHS, cols).unwrap_or(T::KERNEL)
}

/// y = A·x (the kernel [`gemv_kernel_for`] names for A's row length and element type).
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
    let cols = a.shape().last().copied().unwrap_or(0);
    gemv_kernel_for::<T>(cols).launch(
        device,
        &mut [crate::Argument::input("a", a), crate::Argument::input("x", x), crate::Argument::output("y", y)],
    )
}

/// Pass-1 blocks (of 256 bytes a row) that fill an H200 about twice over (132 SMs, two blocks
/// of 512 threads each): 8 slices at 4097 × 4095 f32, which measured 85% of the device copy
/// against 83% with 16 (H100, `benchmarks/lab/rows/gemv_t.cu`).
const FILLING_BLOCKS: usize = 512;
/// Blocks of 512 threads an H100 or H200 runs at once, two an SM: a wave of the 512-thread
/// kernels (the one-pass kernel of many bands, and pass 1 of the split).
const TWO_BLOCK_SLOTS: usize = 2 * ONE_WAVE_BANDS;
/// The least share of their last wave a grid of 512-thread blocks keeps busy, on average over
/// its waves, before the rows are split (or split further) instead: a last wave of few blocks
/// cannot keep the DRAM busy. On an H200 the one-pass 512-thread kernel at 282, 313 and 375
/// bands (0.53, 0.59 and 0.71 of its waves busy) took 90.4, 93.5 and 97.6 µs at 8192 × 9000,
/// 8192 × 10000 and 8192 × 12000 f32, where the split's first pass took 74–76, 80–82 and 93 µs
/// (S = 3 to 8; S = 2 no faster than one pass at 8192 × 12000) and the finishing pass 3–4 µs.
/// Both passes against one: 8192 × 9000 f32 92.6 → 80.4 µs, 16384 × 10000 f32 189 → 165 µs,
/// 8192 × 20000 bf16 105 → 89 µs, 16384 × 24000 bf16 207 → 189 µs.
pub const BUSY_WAVES: f64 = 0.8;

/// The share of their waves `blocks` blocks keep busy on `slots` at once: 1 for whole waves,
/// less the emptier the last one.
fn busy_waves(blocks: usize, slots: usize) -> f64 {
    let waves = blocks as f64 / slots as f64;
    waves / waves.ceil().max(1.0)
}

/// The most 128-byte bands the band kernel's blocks (one an SM) run in one wave on an H100 or
/// H200; beyond, up to where the wider kernels take over (192 bands), the rows are
/// split: on an H200 at 160 and 188 bands the band kernel's second wave cost 4–26% against the
/// split (8192 × 5120 f32: 53.3 µs alone, 42.7 + 4 µs split; 8192 × 10000 bf16: 65.6 against
/// 43.7 + 4.8 µs; 16384 × 12000 bf16: 126.9 against 96.8 + 5 µs).
pub const ONE_WAVE_BANDS: usize = 132;
/// 128-byte bands from which the double-width bands take over from the band kernel (sm_90): at
/// 224 bands (H200) the bf16 ones ran at 90% of the device copy where [`gemv_t_band_bf16`] ran
/// at 74% (4096 × 14336), the f32 ones level with [`gemv_t_band_f32`] (4096 × 7168: 90%).
const PAIR_FROM_BANDS: usize = 192;
/// 128-byte bands from which the band kernel's blocks stop fitting the GPU in one wave (two an
/// SM at most), and the 512-thread kernel takes over where the double-width one does not:
/// [`gemv_t_band_f32`] at 8192² (256 bands) varied from 64 to 73 µs.
const SMALL_BLOCK_BANDS: usize = 256;
/// 256-byte bands the double-width band kernel takes in one wave, one block an SM: the SMs of
/// an H100 or H200.
const PAIR_BANDS: usize = 132;

/// The 128-byte bands (`bytes` = 128: 32 f32 or 64 16-bit columns) or 256-byte ones a row of
/// `cols` elements of `T` spans.
fn bands<T: GemvElement>(cols: usize, bytes: usize) -> usize {
    (cols * std::mem::size_of::<T>()).div_ceil(bytes)
}

/// The slices [`gemv_t`] splits the rows of a `rows × cols` A of `T` into: 1 (no split) where
/// one pass does — the band kernel alone (`T`'s [`Unsplit`]), the wider kernels from 192 bands
/// of 128 bytes, the 512-thread kernel while its last wave is not a thin one ([`BUSY_WAVES`]) or
/// A has too few rows for three slices —, else enough for the first pass's blocks of 256 bytes
/// a row to fill the GPU about twice, more where their own last wave would be a thin one; at
/// most 32 and at least 512 rows each.
///
/// ```
/// use tessera::catalog::gemv::row_slices;
/// use half::bf16;
/// assert_eq!(row_slices::<f32>(8192, 8192), 1);
/// assert_eq!(row_slices::<f32>(4097, 4095), 1);
/// assert_eq!(row_slices::<f32>(8192, 3000), 1);
/// assert_eq!(row_slices::<f32>(16384, 3000), 10);
/// assert_eq!(row_slices::<f32>(8192, 5120), 6); // 160 bands: two waves alone
/// assert_eq!(row_slices::<f32>(8192, 10000), 3); // 313 bands: 1.19 waves of 512 threads
/// assert_eq!(row_slices::<f32>(8192, 12000), 4); // not 2 or 3: 1.42 and 2.14 waves
/// assert_eq!(row_slices::<f32>(4096, 16384), 1); // 512 bands: 1.94 waves
/// assert_eq!(row_slices::<f32>(1024, 20000), 1); // 625 bands in 2.37 waves, but 1024 rows
/// assert_eq!(row_slices::<f32>(2049, 31), 5);
/// assert_eq!(row_slices::<bf16>(8192, 6000), 10);
/// assert_eq!(row_slices::<bf16>(8192, 8192), 1);
/// ```
pub fn row_slices<T: GemvElement>(rows: usize, cols: usize) -> usize {
    let bands_128 = bands::<T>(cols, 128);
    let one_pass = T::TRANSPOSED.unsplit.runs_alone(rows, bands_128)
        // the double-width bands while theirs fit one wave (sm_90), or off sm_90 the band
        // kernel and the 512-thread one as before
        || (PAIR_FROM_BANDS..=2 * PAIR_BANDS).contains(&bands_128)
        // the 512-thread kernel, while its last wave is not a thin one or the rows are too few
        // for three slices (at 1024 × 20000 f32 two slices took 28.0 µs, one pass 24.6 µs)
        || (bands_128 > 2 * PAIR_BANDS
            && (busy_waves(bands_128, TWO_BLOCK_SLOTS) >= BUSY_WAVES || rows.div_ceil(512) < 3));
    if one_pass {
        return 1;
    }
    let column_blocks = bands::<T>(cols, 256).max(1);
    let mut slices = (FILLING_BLOCKS / column_blocks).clamp(2, 32);
    while slices < 32 && busy_waves(column_blocks * slices, TWO_BLOCK_SLOTS) < BUSY_WAVES {
        slices += 1;
    }
    slices.min(rows.div_ceil(512).max(1))
}

/// The kernel [`gemv_t`] reports for a `rows × cols` A of `T` on `device` ([`TransposedKernels`]):
/// on sm_90 the double-width band kernel from 192 bands of 128 bytes while its bands fit one an
/// SM; the finishing pass of the row split where the rows are split ([`row_slices`]: the band
/// kernel would leave SMs idle or take two waves, the 512-thread one end on a thin wave); else
/// the 512-thread kernel from 256 bands, the 1024-thread band kernel below; on narrow rows
/// ([`narrow_transposed_pass`]) the finishing pass of their slices.
///
/// ```
/// use tessera::catalog::gemv::gemv_t_kernel_for;
/// # fn main() -> Result<(), tessera::Error> {
/// let simulator = tessera::Simulator::new()?;
/// assert_eq!(gemv_t_kernel_for::<f32>(&simulator, 4097, 4095).name(), "gemv_t_band_f32");
/// assert_eq!(gemv_t_kernel_for::<f32>(&simulator, 8192, 5120).name(), "gemv_t_finish_f32");
/// assert_eq!(gemv_t_kernel_for::<f32>(&simulator, 1 << 20, 64).name(), "gemv_t_lanes_finish_f32");
/// assert_eq!(gemv_t_kernel_for::<half::bf16>(&simulator, 4096, 14336).name(), "gemv_t_band_pairs_bf16");
/// assert_eq!(gemv_t_kernel_for::<half::bf16>(&simulator, 8192, 3000).name(), "gemv_t_finish_bf16");
/// # Ok(())
/// # }
/// ```
pub fn gemv_t_kernel_for<T: GemvElement>(
    device: &impl crate::Device,
    rows: usize,
    cols: usize,
) -> &'static crate::KernelDefinition {
    if narrow_transposed_pass::<T>(cols).is_some() {
        return T::NARROW_TRANSPOSED.finish;
    }
    let kernels = T::TRANSPOSED;
    let bands_128 = bands::<T>(cols, 128);
    // the double-width kernels are sm_90's (their registers spill on sm_80)
    if bands_128 >= PAIR_FROM_BANDS && super::runs_sm_90(device) && bands::<T>(cols, 256) <= PAIR_BANDS {
        kernels.band_pairs
    } else if row_slices::<T>(rows, cols) > 1 {
        kernels.finish
    } else if bands_128 >= SMALL_BLOCK_BANDS {
        kernels.rows
    } else {
        kernels.band
    }
}

/// The first pass [`gemv_t`] runs on rows of `cols` elements of `T` read whole, a group of
/// lanes per row ([`narrow_transposed`]): the narrowest that holds the row, or `None` for rows
/// wider than its widths, which take bands of columns.
///
/// ```
/// use tessera::catalog::gemv::narrow_transposed_pass;
/// assert_eq!(narrow_transposed_pass::<f32>(64).map(|k| k.name()), Some("gemv_t_lanes_64_f32"));
/// assert_eq!(narrow_transposed_pass::<half::bf16>(300).map(|k| k.name()), Some("gemv_t_lanes_512_bf16"));
/// assert!(narrow_transposed_pass::<f32>(4096).is_none());
/// ```
pub fn narrow_transposed_pass<T: GemvElement>(cols: usize) -> Option<&'static crate::KernelDefinition> {
    super::narrowest_holding(T::NARROW_TRANSPOSED.widths, cols)
}

/// The slices of rows [`gemv_t`]'s narrow-row first pass takes: one block each, at least 64
/// rows a slice, at most [`NARROW_SLICES`] (with 256 rows at least, 16384 rows took 64 blocks
/// for an H200's 132 SMs).
///
/// ```
/// use tessera::catalog::gemv::narrow_row_slices;
/// assert_eq!(narrow_row_slices(1_048_576), 512);
/// assert_eq!(narrow_row_slices(16384), 256);
/// assert_eq!(narrow_row_slices(1), 1);
/// ```
pub fn narrow_row_slices(rows: usize) -> usize {
    rows.div_ceil(64).clamp(1, NARROW_SLICES)
}

/// Blocks of 256 threads the narrow-row first pass fills an H100 or H200 with, about four an SM.
pub const NARROW_SLICES: usize = 512;

/// y = Aᵀ·x without transposing A: one launch of the kernel [`gemv_t_kernel_for`] names, or
/// the rows split into slices (the partials kernel into an f32 workspace, then the finishing
/// one as its dependent) — on narrow rows the rows read whole ([`narrow_transposed_pass`]).
/// Returns the last launch.
///
/// ```ignore
/// tessera::catalog::gemv::gemv_t(&backend, &a, &x, &mut y)?;   // a: [m, n], x: [m], y: [n]
/// ```
pub fn gemv_t<T: GemvElement>(
    device: &impl crate::Device,
    a: &impl Input<T>,
    x: &impl Input<T>,
    y: &mut impl Output<T>,
) -> Result<crate::Launched, Error> {
    let (rows, cols) = match a.shape() {
        &[rows, cols] => (rows, cols),
        _ => (1, 1),
    };
    // the last pass, and for two the first and its slices of rows
    let kernel = gemv_t_kernel_for::<T>(device, rows, cols);
    // y against A before any pass: a split's last pass would name its partials, not A
    if let (&[_, _], &[length]) = (a.shape(), y.shape()) {
        if length != cols {
            let source = crate::dsl::LaunchPlanError::ShapeMismatch {
                symbol: "N".into(),
                first_param: "a".into(),
                first_dim: 1,
                first_value: cols,
                param: "y".into(),
                dim: 0,
                value: length,
            };
            return Err(Error::Plan { kernel: kernel.name().to_string(), source });
        }
    }
    let (first_pass, slices) = match narrow_transposed_pass::<T>(cols) {
        Some(first_pass) => (first_pass, narrow_row_slices(rows)),
        None if std::ptr::eq(kernel, T::TRANSPOSED.finish) => (T::TRANSPOSED.partials, row_slices::<T>(rows, cols)),
        None => {
            return kernel.launch(
                device,
                &mut [crate::Argument::input("a", a), crate::Argument::input("x", x), crate::Argument::output("y", y)],
            )
        }
    };
    // every slice's partial sums written by pass 1 before pass 2 reads them: no zeroing (a
    // memset between the passes would also stand between pass 2 and its dependent launch)
    let mut partials: crate::DeviceTensor<f32> = device.device_ref().scratch([slices, cols])?;
    first_pass.launch(
        device,
        &mut [
            crate::Argument::input("a", a),
            crate::Argument::input("x", x),
            crate::Argument::output("partials", &mut partials),
        ],
    )?;
    kernel
        .launch_dependent(device, &mut [crate::Argument::input("partials", &partials), crate::Argument::output("y", y)])
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 51] = [
    &gemv_f32::KERNEL,
    &gemv_bf16::KERNEL,
    &gemv_f16::KERNEL,
    &gemv_lanes_32_f32::KERNEL,
    &gemv_lanes_64_f32::KERNEL,
    &gemv_lanes_128_f32::KERNEL,
    &gemv_lanes_256_f32::KERNEL,
    &gemv_lanes_512_f32::KERNEL,
    &gemv_lanes_32_bf16::KERNEL,
    &gemv_lanes_64_bf16::KERNEL,
    &gemv_lanes_128_bf16::KERNEL,
    &gemv_lanes_256_bf16::KERNEL,
    &gemv_lanes_512_bf16::KERNEL,
    &gemv_lanes_1024_bf16::KERNEL,
    &gemv_lanes_32_f16::KERNEL,
    &gemv_lanes_64_f16::KERNEL,
    &gemv_lanes_128_f16::KERNEL,
    &gemv_lanes_256_f16::KERNEL,
    &gemv_lanes_512_f16::KERNEL,
    &gemv_lanes_1024_f16::KERNEL,
    &gemv_t_f32::KERNEL,
    &gemv_t_band_f32::KERNEL,
    &gemv_t_band_pairs_f32::KERNEL,
    &gemv_t_partials_f32::KERNEL,
    &gemv_t_finish_f32::KERNEL,
    &gemv_t_split_f32::KERNEL,
    &gemv_t_bf16::KERNEL,
    &gemv_t_band_bf16::KERNEL,
    &gemv_t_band_pairs_bf16::KERNEL,
    &gemv_t_partials_bf16::KERNEL,
    &gemv_t_finish_bf16::KERNEL,
    &gemv_t_f16::KERNEL,
    &gemv_t_band_f16::KERNEL,
    &gemv_t_band_pairs_f16::KERNEL,
    &gemv_t_partials_f16::KERNEL,
    &gemv_t_finish_f16::KERNEL,
    &gemv_t_lanes_32_f32::KERNEL,
    &gemv_t_lanes_64_f32::KERNEL,
    &gemv_t_lanes_128_f32::KERNEL,
    &gemv_t_lanes_256_f32::KERNEL,
    &gemv_t_lanes_64_bf16::KERNEL,
    &gemv_t_lanes_128_bf16::KERNEL,
    &gemv_t_lanes_256_bf16::KERNEL,
    &gemv_t_lanes_512_bf16::KERNEL,
    &gemv_t_lanes_64_f16::KERNEL,
    &gemv_t_lanes_128_f16::KERNEL,
    &gemv_t_lanes_256_f16::KERNEL,
    &gemv_t_lanes_512_f16::KERNEL,
    &gemv_t_lanes_finish_f32::KERNEL,
    &gemv_t_lanes_finish_bf16::KERNEL,
    &gemv_t_lanes_finish_f16::KERNEL,
];
