//! How the copies of a cp.async pipeline (`stages ≥ 3`) deal a tile to the threads.
//!
//! Each thread starts at one element of the tile and issues its copies at constant offsets
//! from it, so codegen hoists one source and one destination pointer per tile and every copy
//! is an immediate offset (or a multiple of the leading dimension) away. The layouts are
//! chosen so that each warp instruction reads whole 32-byte sectors of global memory and,
//! into a transposed buffer padded to a row stride of 4 mod 32 elements, stores to 32
//! distinct banks.

use crate::{CopyPlan, OperandPlan};

/// The copies one thread issues for a tile, relative to its first element.
///
/// ```
/// use tessera_dsl::{AsyncCopyLayout, AsyncCopyMapping};
/// // B's 32 × 256 tile, 16-byte copies, 256 threads: 8 threads cover a 128-byte row segment
/// let b = AsyncCopyMapping::new(32, 256, 4, 4, false, 256).unwrap();
/// assert_eq!(b.layout, AsyncCopyLayout::Rows { threads_per_row: 8 });
/// assert_eq!(b.first(9), (1, 4));
/// assert_eq!(b.offsets.len(), 8); // one pass of 32 rows, 8 chunks of 32 columns
/// // A's 128 × 32 tile into a transposed buffer, 4 bytes a copy: a warp copies 4 rows × 8 columns
/// let a = AsyncCopyMapping::new(128, 32, 1, 4, true, 256).unwrap();
/// assert_eq!(a.first(32 + 5), (4 + 1, 1));
/// assert_eq!(a.offsets[..2], [(0, 0), (0, 8)]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsyncCopyMapping {
    pub layout: AsyncCopyLayout,
    /// Elements per copy.
    pub width: i64,
    /// (row, column) of each copy from the thread's first element, in issue order: rows
    /// outermost, so a part of consecutive copies is whole rows or one row's columns.
    pub offsets: Vec<(i64, i64)>,
    /// Rows of the tile between consecutive row offsets (0 when there is one).
    pub row_step: i64,
    /// Copies per row offset.
    pub per_row: i64,
}

/// Where a thread's first element is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncCopyLayout {
    /// Thread t starts at row t / threads_per_row, column (t % threads_per_row) · width: a
    /// warp covers whole 128-byte row segments.
    Rows { threads_per_row: i64 },
    /// One element per copy into a transposed buffer: lane l of warp w starts at row
    /// 4w + l % 4, column l / 4, so a warp instruction reads 4 rows × 8 columns (four
    /// 32-byte sectors) and writes 8 rows of the buffer 4 apart.
    Quads,
}

impl AsyncCopyMapping {
    /// The mapping for a `rows × cols` tile copied `width` elements of `element_bytes` at a
    /// time by `threads` threads (`transposed`: into a transposed shared view, one element a
    /// copy), or `None` where the tile does not divide into it (the copy keeps
    /// [`CopyPlan::item`]'s order).
    pub fn new(rows: i64, cols: i64, width: i64, element_bytes: i64, transposed: bool, threads: i64) -> Option<Self> {
        if rows <= 0 || cols <= 0 || width <= 0 || threads <= 0 || threads % 32 != 0 {
            return None;
        }
        if transposed {
            let warps = threads / 32;
            if width != 1 || cols % 8 != 0 || rows % (4 * warps) != 0 {
                return None;
            }
            let row_step = 4 * warps;
            let offsets: Vec<(i64, i64)> =
                (0..rows / row_step).flat_map(|r| (0..cols / 8).map(move |c| (r * row_step, c * 8))).collect();
            return Some(Self { layout: AsyncCopyLayout::Quads, width, offsets, row_step, per_row: cols / 8 });
        }
        if cols % width != 0 {
            return None;
        }
        let vectors = cols / width;
        // a warp covers whole 128-byte row segments; more threads per row where the tile has
        // fewer rows than a pass of the block would cover
        let mut threads_per_row = (128 / (width * element_bytes)).clamp(1, vectors);
        while threads_per_row < vectors && threads_per_row < threads && rows % (threads / threads_per_row) != 0 {
            threads_per_row *= 2;
        }
        if threads % threads_per_row != 0 || vectors % threads_per_row != 0 {
            return None;
        }
        let rows_per_pass = threads / threads_per_row;
        if rows % rows_per_pass != 0 {
            return None;
        }
        let chunks = vectors / threads_per_row;
        let chunk = threads_per_row * width;
        let offsets: Vec<(i64, i64)> =
            (0..rows / rows_per_pass).flat_map(|p| (0..chunks).map(move |c| (p * rows_per_pass, c * chunk))).collect();
        Some(Self {
            layout: AsyncCopyLayout::Rows { threads_per_row },
            width,
            offsets,
            row_step: rows_per_pass,
            per_row: chunks,
        })
    }

    /// The mapping for `plan`'s copy, which a cp.async pipeline issues.
    pub fn of(plan: &CopyPlan) -> Option<Self> {
        let transposed_dst = matches!(&plan.dst, OperandPlan::Shared(s) if s.transposed);
        if matches!(&plan.dst, OperandPlan::Shared(s) if s.layout.swizzle.is_some() || s.layout.panels) {
            // a swizzled buffer (or one in panels) is not affine: its copies cannot sit at
            // constant offsets
            return None;
        }
        let vector_copy = plan.vector > 1 && plan.src.vector_ok(plan.vector) && plan.dst.vector_ok(plan.vector);
        let width = if vector_copy { plan.vector } else { 1 };
        if !vector_copy && !transposed_dst && plan.vector > 1 {
            // scalar copies of a vector plan into a non-transposed buffer (a padded one): keep the item order
            return None;
        }
        let mapping =
            Self::new(plan.rows, plan.cols, width, i64::from(plan.element.size_bytes()), transposed_dst, plan.threads)?;
        match &plan.dst {
            // a byte swizzle permutes chunks by the row's line: copies stay at constant offsets
            // where every offset moves whole periods of the pattern
            OperandPlan::Shared(s) if s.layout.swizzle_bytes.is_some() => {
                let layout = s.layout;
                let span = layout.swizzle_bytes.unwrap_or(128);
                let element = i64::from(layout.element.size_bytes());
                let rows_per_line = (128 / layout.row_bytes()).max(1);
                let (row_period, col_period) = (rows_per_line * span / 16, span / element);
                let affine = !transposed_dst
                    && width * element == 16
                    && mapping.offsets.iter().all(|&(row, col)| row % row_period == 0 && col % col_period == 0);
                affine.then_some(mapping)
            }
            _ => Some(mapping),
        }
    }

    /// The tile coordinates of thread `tid`'s first element.
    pub fn first(&self, tid: i64) -> (i64, i64) {
        match self.layout {
            AsyncCopyLayout::Rows { threads_per_row } => (tid / threads_per_row, tid % threads_per_row * self.width),
            AsyncCopyLayout::Quads => (tid / 32 * 4 + tid % 32 % 4, tid % 32 / 4),
        }
    }

    /// Whether `parts` equal parts of consecutive copies each start at a row offset or at a
    /// column offset within one row offset (what spreading the copies over an mma's k loop
    /// needs: each part's copies sit at the same offsets from its own start).
    pub fn splits_into(&self, parts: i64) -> bool {
        let copies = self.offsets.len() as i64;
        if parts <= 0 || copies % parts != 0 {
            return false;
        }
        let each = copies / parts;
        each % self.per_row == 0 || self.per_row % each == 0
    }
}
