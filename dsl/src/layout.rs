//! Where each element of a shared buffer lives: rows, padding, swizzle.

use crate::{ElementType, Kernel, Scope, SharedBuffer};

/// The resolved layout of a shared buffer (all sizes known at compile time).
///
/// ```
/// use tessera_dsl::{ElementType, SharedLayout};
/// let padded = SharedLayout {
///     rows: 32, cols: 32, pad: 1, swizzle: None, swizzle_bytes: None, panels: false, element: ElementType::F32,
/// };
/// assert_eq!(padded.offset(1, 0), 33);          // row 1 starts one element later
/// assert_eq!(padded.bytes(), 32 * 33 * 4);
/// let swizzled = SharedLayout { pad: 0, swizzle: Some(1), ..padded };
/// assert_eq!(swizzled.offset(3, 1), 3 * 32 + (1 ^ 3));
/// assert!(!padded.vector_ok(4) && swizzled.vector_ok(1));
/// // 64 × 32 bf16 (64-byte rows), 64-byte XOR swizzle: row 3 is the second half of line 1,
/// // so its chunks XOR with 1; chunk 0 of row 3 lands at chunk 1 (elements 8..16)
/// let bf16 = SharedLayout { rows: 64, cols: 32, pad: 0, swizzle_bytes: Some(64), element: ElementType::BF16, ..padded };
/// assert_eq!(bf16.physical_col(3, 0), 8);
/// assert_eq!(bf16.physical_col(3, 9), 1);
/// assert!(bf16.vector_ok(8));
/// // [64, 256] bf16 in 128-byte panels: column 70 of row 1 is column 6 of panel 1, whose
/// // chunk 0 row 1 swaps with chunk 1 (the hardware's Swizzle<3, 4, 3>)
/// let panels = SharedLayout { rows: 64, cols: 256, swizzle_bytes: Some(128), panels: true, ..bf16 };
/// assert_eq!(panels.panel_cols(), Some(64));
/// assert_eq!(panels.offset(1, 70), 64 * 64 + 64 + 14);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedLayout {
    pub rows: i64,
    pub cols: i64,
    pub pad: i64,
    pub swizzle: Option<i64>,
    /// The span of a byte XOR swizzle (`.swizzle_bytes(128)`), see [`crate::SharedBuffer`].
    pub swizzle_bytes: Option<i64>,
    /// `.panels()`: columns stored in panels `swizzle_bytes` wide, see [`crate::SharedBuffer`].
    pub panels: bool,
    pub element: ElementType,
}

impl SharedLayout {
    /// The layout of `buffer`, its shape evaluated with the kernel's constants.
    pub fn of(buffer: &SharedBuffer, kernel: &Kernel) -> Option<Self> {
        Self::with_scope(buffer, &kernel.constant_scope())
    }

    pub fn with_scope(buffer: &SharedBuffer, scope: &Scope) -> Option<Self> {
        let [rows, cols] = buffer.shape.as_slice() else { return None };
        Some(Self {
            rows: rows.eval(scope).ok()?,
            cols: cols.eval(scope).ok()?,
            pad: i64::from(buffer.pad),
            swizzle: buffer.swizzle.map(i64::from),
            swizzle_bytes: buffer.swizzle_bytes.map(i64::from),
            panels: buffer.panels,
            element: buffer.element,
        })
    }

    /// Elements from one row to the next.
    pub fn stride(&self) -> i64 {
        self.cols + self.pad
    }

    pub fn bytes(&self) -> i64 {
        self.rows * self.stride() * i64::from(self.element.size_bytes())
    }

    /// Column groups a swizzled row is permuted in.
    pub fn swizzle_groups(&self) -> Option<i64> {
        self.swizzle.map(|unit| self.cols / unit)
    }

    /// Bytes from one row to the next (within a panel, for `.panels()`).
    pub fn row_bytes(&self) -> i64 {
        match self.panel_cols() {
            Some(cols) => cols * i64::from(self.element.size_bytes()),
            None => self.stride() * i64::from(self.element.size_bytes()),
        }
    }

    /// Where the buffer must start: 1024 bytes for `.panels()` (the hardware swizzle's 8-row
    /// atoms), else 16 (every vector access aligned).
    pub fn alignment(&self) -> i64 {
        if self.panels {
            crate::shared_memory::PANEL_ALIGNMENT
        } else {
            crate::shared_memory::SHARED_ALIGNMENT
        }
    }

    /// Columns of one panel (`.panels()`): one swizzle span of elements.
    pub fn panel_cols(&self) -> Option<i64> {
        let span = self.swizzle_bytes.filter(|_| self.panels)?;
        Some(span / i64::from(self.element.size_bytes()))
    }

    /// Bytes of one panel: its rows × the span.
    pub fn panel_bytes(&self) -> Option<i64> {
        Some(self.rows * self.swizzle_bytes.filter(|_| self.panels)?)
    }

    /// The column where logical column `col` of row `row` is stored.
    pub fn physical_col(&self, row: i64, col: i64) -> i64 {
        if let Some(span) = self.swizzle_bytes {
            // rows sharing a 128-byte line count as one; a longer row repeats the pattern in
            // each of its 128-byte segments (TMA's swizzle where a row fits a line)
            let element = i64::from(self.element.size_bytes());
            let line = row / (128 / self.row_bytes()).max(1);
            return col ^ (line % (span / 16) * (16 / element));
        }
        match self.swizzle {
            Some(unit) => {
                let groups = self.cols / unit;
                ((col / unit) ^ (row % groups)) * unit + col % unit
            }
            None => col,
        }
    }

    /// The element offset of (row, col) from the start of the buffer.
    pub fn offset(&self, row: i64, col: i64) -> i64 {
        match self.panel_cols() {
            Some(cols) => col / cols * self.rows * cols + row * cols + self.physical_col(row, col % cols),
            None => row * self.stride() + self.physical_col(row, col),
        }
    }

    /// Whether `width` consecutive elements of a row, starting at a multiple of `width`,
    /// are contiguous and aligned for one vector access.
    pub fn vector_ok(&self, width: i64) -> bool {
        let bytes = width * i64::from(self.element.size_bytes());
        self.stride() % width == 0
            && self.swizzle.is_none_or(|unit| unit % width == 0)
            && self.swizzle_bytes.is_none_or(|_| bytes <= 16)
    }
}
