//! Where each accumulator of a register fragment lives: which thread holds it, and which
//! row and column of the block tile it is.

use crate::{ElementType, Fragment, Kernel, Scope};

/// The resolved geometry of a fragment.
///
/// Threads form a `threads_down × threads_across` grid (thread t sits at row t / across,
/// column t % across). Each holds `thread_rows × thread_cols` values, cut into `split`
/// sub-tiles spaced `rows / split[0]` (`cols / split[1]`) apart.
///
/// ```
/// use tessera_dsl::{ElementType, FragmentLayout};
/// let v2 = FragmentLayout {
///     rows: 128, cols: 128, thread_rows: 8, thread_cols: 8, split: [2, 2], warp_layout: None, warp_tile: None,
///     warpgroup_tile: None, element: ElementType::F32,
/// };
/// assert_eq!(v2.threads(), 256);
/// assert_eq!(v2.row(3, 0), 12);        // thread row 3, first value: 3 × 4
/// assert_eq!(v2.row(3, 4), 64 + 12);   // its second sub-tile, half a block further
/// let v1 = FragmentLayout { split: [1, 1], ..v2 };
/// assert_eq!(v1.row(3, 4), 28);
/// let tiled = FragmentLayout { warp_layout: Some([4, 8]), ..v2 };
/// assert_eq!(tiled.thread_position(9), (1, 1));     // lane 9 of warp 0: row 1, column 1
/// assert_eq!(tiled.thread_position(32), (0, 8));    // warp 1 sits beside warp 0
/// // tensor cores: 64 × 32 per warp, so 2 × 4 warps; each lane holds 8 rows × 8 columns of it
/// let tc = FragmentLayout { thread_rows: 8, thread_cols: 8, split: [1, 1], warp_tile: Some([64, 32]), ..v2 };
/// assert_eq!(tc.threads(), 256);
/// assert_eq!(tc.warp_origin(5), (64, 32));          // warp 5: second row of warps, second column
/// assert_eq!(tc.lane_value_position(9, [1, 2, 3]), (16 + 2 + 8, 16 + 2 * 1 + 1));
/// // wgmma: warpgroups of 64 × 64 side by side in a 128 × 128 tile; warp 5 is warp 1 of group 1
/// let wg = FragmentLayout { thread_cols: 16, warp_tile: Some([16, 64]), warpgroup_tile: Some([64, 64]), ..tc };
/// assert_eq!(wg.threads(), 4 * 128);
/// assert_eq!(wg.warp_origin(5), (16, 64));
/// assert_eq!(wg.warp_origin(9), (64 + 16, 0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragmentLayout {
    pub rows: i64,
    pub cols: i64,
    pub thread_rows: i64,
    pub thread_cols: i64,
    pub split: [i64; 2],
    /// Thread tiles per warp as [rows, columns], when warps hold 2-D blocks of them.
    pub warp_layout: Option<[i64; 2]>,
    /// [WM, WN] of a tensor-core fragment (`.warp_tile(..)`): each warp holds that tile in
    /// `mma.sync`'s accumulator layout, and `thread_rows × thread_cols` (WM / 8 × WN / 4) are
    /// the values of it each lane holds.
    pub warp_tile: Option<[i64; 2]>,
    /// [64 · m, WN] of a wgmma fragment (`.warpgroup_tile(..)`): each warpgroup holds that tile
    /// as m m64 tiles one below the other, warp w of it rows 16w .. 16w + 15 of each (so
    /// `warp_tile` is [16 · m, WN], its m-tiles 64 rows apart); warpgroups fill rows first.
    pub warpgroup_tile: Option<[i64; 2]>,
    pub element: ElementType,
}

impl FragmentLayout {
    pub fn of(fragment: &Fragment, kernel: &Kernel) -> Option<Self> {
        Self::with_scope(fragment, &kernel.constant_scope())
    }

    pub fn with_scope(fragment: &Fragment, scope: &Scope) -> Option<Self> {
        let [rows, cols] = fragment.shape.as_slice() else { return None };
        if let Some([group_rows, group_cols]) = fragment.warpgroup_tile.as_deref() {
            let (group_rows, group_cols) = (group_rows.eval(scope).ok()?, group_cols.eval(scope).ok()?);
            // one 16-row slice of each m64 tile a warp
            let m_tiles = (group_rows / 64).max(1);
            return Some(Self {
                rows: rows.eval(scope).ok()?,
                cols: cols.eval(scope).ok()?,
                thread_rows: 2 * m_tiles,
                thread_cols: group_cols / 4,
                split: [1, 1],
                warp_layout: None,
                warp_tile: Some([16 * m_tiles, group_cols]),
                warpgroup_tile: Some([group_rows, group_cols]),
                element: fragment.element,
            });
        }
        if let Some([warp_rows, warp_cols]) = fragment.warp_tile.as_deref() {
            let (warp_rows, warp_cols) = (warp_rows.eval(scope).ok()?, warp_cols.eval(scope).ok()?);
            return Some(Self {
                rows: rows.eval(scope).ok()?,
                cols: cols.eval(scope).ok()?,
                // two rows of each 16-row mma tile and two columns of each 8-column one
                thread_rows: warp_rows / 8,
                thread_cols: warp_cols / 4,
                split: [1, 1],
                warp_layout: None,
                warp_tile: Some([warp_rows, warp_cols]),
                warpgroup_tile: None,
                element: fragment.element,
            });
        }
        let [thread_rows, thread_cols] = fragment.thread_tile.as_slice() else { return None };
        Some(Self {
            rows: rows.eval(scope).ok()?,
            cols: cols.eval(scope).ok()?,
            thread_rows: thread_rows.eval(scope).ok()?,
            thread_cols: thread_cols.eval(scope).ok()?,
            split: [i64::from(fragment.split[0]), i64::from(fragment.split[1])],
            warp_layout: fragment.warp_layout.map(|[r, c]| [i64::from(r), i64::from(c)]),
            warp_tile: None,
            warpgroup_tile: None,
            element: fragment.element,
        })
    }

    pub fn threads_down(&self) -> i64 {
        self.rows / self.thread_rows.max(1)
    }

    pub fn threads_across(&self) -> i64 {
        self.cols / self.thread_cols.max(1)
    }

    /// Threads the layout needs.
    pub fn threads(&self) -> i64 {
        match self.warp_tile {
            Some(_) => self.warps_down() * self.warps_across() * 32,
            None => self.threads_down() * self.threads_across(),
        }
    }

    /// Warps stacked down the block tile (a `.warp_tile(..)` fragment; 0 otherwise).
    pub fn warps_down(&self) -> i64 {
        self.warp_tile.map_or(0, |[warp_rows, _]| self.rows / warp_rows.max(1))
    }

    /// Warps side by side across the block tile (a `.warp_tile(..)` fragment; 0 otherwise).
    pub fn warps_across(&self) -> i64 {
        self.warp_tile.map_or(0, |[_, warp_cols]| self.cols / warp_cols.max(1))
    }

    /// The block-tile (row, column) where warp `warp`'s tile starts (warps fill rows first).
    pub fn warp_origin(&self, warp: i64) -> (i64, i64) {
        if let Some([group_rows, group_cols]) = self.warpgroup_tile {
            let (group, across) = (warp / 4, (self.cols / group_cols.max(1)).max(1));
            return (group / across * group_rows + warp % 4 * 16, group % across * group_cols);
        }
        let [warp_rows, warp_cols] = self.warp_tile.unwrap_or([0, 0]);
        let across = self.warps_across().max(1);
        (warp / across * warp_rows, warp % across * warp_cols)
    }

    /// Rows between a warp's consecutive 16-row m-tiles: 16 for mma.sync's warp tiles (stacked),
    /// 64 for a warpgroup tile of several m64 tiles (warp w holds rows 16w .. of each). A
    /// fragment whose warps hold one m-tile never steps, and says 16.
    ///
    /// ```
    /// use tessera_dsl::{ElementType, FragmentLayout};
    /// let two = FragmentLayout { rows: 128, cols: 128, thread_rows: 4, thread_cols: 32, split: [1, 1], warp_layout: None,
    ///     warp_tile: Some([32, 128]), warpgroup_tile: Some([128, 128]), element: ElementType::F32 };
    /// assert_eq!(two.m_tile_spacing(), 64);
    /// assert_eq!(two.lane_value_position(9, [1, 0, 0]), (64 + 2, 2));  // warp 0's slice of the second m64 tile
    /// assert_eq!(two.slot_row(32 + 9, 2), 64 + 16 + 2);                 // warp 1, lane 9, row slot 2
    /// assert_eq!(two.threads(), 128);
    /// ```
    pub fn m_tile_spacing(&self) -> i64 {
        if self.warpgroup_m_tiles() > 1 {
            64
        } else {
            16
        }
    }

    /// The m64 tiles each warpgroup of a `.warpgroup_tile([64 · m, N])` fragment holds — one
    /// wgmma each a k-step — (m; 1 for any other fragment).
    pub fn warpgroup_m_tiles(&self) -> i64 {
        self.warpgroup_tile.map_or(1, |[rows, _]| (rows / 64).max(1))
    }

    /// The columns one lane's 16-byte store holds on the 16-byte path of this fragment's
    /// epilogue into `element` values — 8 16-bit values, or 4 f32 — where the path applies: a
    /// `.warpgroup_tile(..)` fragment whose warps' columns are whole groups of the lanes'
    /// 8-column chunks (32 columns of 16-bit values: a row's four lanes trade their pairs of
    /// four chunks; 16 of f32: neighbouring lanes trade one pair of two). Whole tiles of rows
    /// 16-byte aligned take it; the rest store pairs.
    ///
    /// ```
    /// use tessera_dsl::{ElementType, FragmentLayout};
    /// let acc = FragmentLayout { rows: 128, cols: 256, thread_rows: 2, thread_cols: 64, split: [1, 1], warp_layout: None,
    ///     warp_tile: Some([16, 256]), warpgroup_tile: Some([64, 256]), element: ElementType::F32 };
    /// assert_eq!(acc.wide_store_columns(ElementType::BF16), Some(8));
    /// assert_eq!(acc.wide_store_columns(ElementType::F32), Some(4));
    /// // mma.sync's warp tiles store pairs
    /// assert_eq!(FragmentLayout { warpgroup_tile: None, ..acc }.wide_store_columns(ElementType::BF16), None);
    /// ```
    pub fn wide_store_columns(&self, element: ElementType) -> Option<i64> {
        let columns = self.warp_tile.map_or(0, |[_, cols]| cols);
        let (group, stored) = match element {
            ElementType::F16 | ElementType::BF16 => (32, 8),
            ElementType::F32 => (16, 4),
            _ => return None,
        };
        (self.warpgroup_tile.is_some() && columns % group == 0).then_some(stored)
    }

    /// Where `lane` stores on the 16-byte path ([`FragmentLayout::wide_store_columns`]) in its
    /// warp's tile: the row and first column of m-tile `mi`, half `half` (rows lane / 4 or
    /// lane / 4 + 8), group of chunks `group`.
    pub fn wide_store_position(&self, element: ElementType, lane: i64, [mi, half, group]: [i64; 3]) -> (i64, i64) {
        let row = mi * self.m_tile_spacing() + half * 8 + lane / 4;
        if element.is_half() {
            (row, (group * 4 + lane % 4) * 8)
        } else {
            (row, (group * 2 + lane % 2) * 8 + lane % 4 / 2 * 4)
        }
    }

    /// Where accumulator `[mi, ni, v]` of `lane` (mma tile mi down, ni across, value v of
    /// four) sits in its warp's tile (m-tiles [`Self::m_tile_spacing`] rows apart): mma.sync's
    /// m16n8 accumulator layout, lane l holding rows l / 4 and l / 4 + 8, columns 2 · (l % 4)
    /// and the next.
    pub fn lane_value_position(&self, lane: i64, [mi, ni, v]: [i64; 3]) -> (i64, i64) {
        (mi * self.m_tile_spacing() + lane / 4 + v / 2 * 8, ni * 8 + lane % 4 * 2 + v % 2)
    }

    /// The block-tile row of row slot `i` of thread `tid` (`acc.row(i)` in thread code): for a
    /// tensor-core fragment, row slot i is m-tile i / 2, half i % 2 (rows lane / 4 and
    /// lane / 4 + 8); for a thread tile, value row i of the thread's tile.
    ///
    /// ```
    /// use tessera_dsl::{ElementType, FragmentLayout};
    /// // 64 × 64 in warp tiles of 16 × 64: warp w holds rows 16w .., each lane 2 × 16 values
    /// let s = FragmentLayout {
    ///     rows: 64, cols: 64, thread_rows: 2, thread_cols: 16, split: [1, 1], warp_layout: None,
    ///     warp_tile: Some([16, 64]), warpgroup_tile: None, element: ElementType::F32,
    /// };
    /// assert_eq!(s.slot_row(32 + 9, 1), 16 + 8 + 2);   // warp 1, lane 9: its second row
    /// assert_eq!(s.slot_col(32 + 9, 5), 16 + 2 + 1);   // n-tile 2, lane 9 % 4 = 1, second column
    /// assert_eq!(s.slot_register(1, 5), [0, 2, 3]);
    /// ```
    pub fn slot_row(&self, tid: i64, i: i64) -> i64 {
        match self.warp_tile {
            Some(_) => self.warp_origin(tid / 32).0 + i / 2 * self.m_tile_spacing() + i % 2 * 8 + tid % 32 / 4,
            None => self.row(self.thread_position(tid).0, i),
        }
    }

    /// The block-tile column of column slot `j` of thread `tid` (`acc.col(j)`): n-tile j / 2,
    /// column 2 · (lane % 4) + j % 2 of it, for a tensor-core fragment.
    pub fn slot_col(&self, tid: i64, j: i64) -> i64 {
        match self.warp_tile {
            Some(_) => self.warp_origin(tid / 32).1 + j / 2 * 8 + tid % 32 % 4 * 2 + j % 2,
            None => self.col(self.thread_position(tid).1, j),
        }
    }

    /// The accumulator `[mi, ni, v]` of a tensor-core fragment that holds value slot (i, j):
    /// `acc[i / 2][j / 2][i % 2 * 2 + j % 2]` (see [`Self::lane_value_position`]).
    pub fn slot_register(&self, i: i64, j: i64) -> [i64; 3] {
        [i / 2, j / 2, i % 2 * 2 + j % 2]
    }

    /// (thread row, thread column) of thread `tid`.
    pub fn thread_position(&self, tid: i64) -> (i64, i64) {
        match self.warp_layout {
            Some([rows, cols]) => {
                let (warp, lane) = (tid / 32, tid % 32);
                let warps_across = (self.threads_across() / cols).max(1);
                ((warp / warps_across) * rows + lane / cols, (warp % warps_across) * cols + lane % cols)
            }
            None => (tid / self.threads_across(), tid % self.threads_across()),
        }
    }

    /// Rows of one sub-tile.
    pub fn sub_rows(&self) -> i64 {
        self.thread_rows / self.split[0]
    }

    /// Columns of one sub-tile.
    pub fn sub_cols(&self) -> i64 {
        self.thread_cols / self.split[1]
    }

    /// The block-tile row of value `i` (0..thread_rows) of the thread at `thread_row`.
    pub fn row(&self, thread_row: i64, i: i64) -> i64 {
        let sub = self.sub_rows();
        (i / sub) * (self.rows / self.split[0]) + thread_row * sub + i % sub
    }

    /// The block-tile column of value `j` (0..thread_cols) of the thread at `thread_col`.
    pub fn col(&self, thread_col: i64, j: i64) -> i64 {
        let sub = self.sub_cols();
        (j / sub) * (self.cols / self.split[1]) + thread_col * sub + j % sub
    }
}
