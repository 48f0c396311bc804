//! Fragments: the thread, warp and warpgroup tiles an accumulator is laid out in, and the
//! registers they take.

use super::*;

/// The f32 accumulators a thread of a warpgroup fragment may hold: m64n256's 128.
const MAX_WARPGROUP_ACCUMULATORS: i64 = 128;

impl Checker<'_> {
    /// A thread-tile fragment after the kernel's first: `thread_row` and `thread_col` name one
    /// grid of thread tiles per kernel, so every such fragment must spread over the same one.
    pub(super) fn same_thread_grid(&mut self, fragment: &Fragment, layout: &FragmentLayout, scope: &Scope) {
        let grid = |l: &FragmentLayout| (l.warp_layout, l.threads_down(), l.threads_across(), l.thread_cols);
        let Some(first) = self.kernel.thread_grid_fragment() else { return };
        let Some(first_layout) = FragmentLayout::with_scope(first, scope) else { return };
        if first.name != fragment.name && grid(&first_layout) != grid(layout) {
            self.error(
                fragment.origin,
                format!(
                    "`{}` spreads {} × {} thread tiles over {} × {} threads, `{}` {} × {} over {} × {}: a kernel's thread-tile fragments share one grid of threads (`thread_row`, `thread_col`)",
                    fragment.name,
                    layout.thread_rows,
                    layout.thread_cols,
                    layout.threads_down(),
                    layout.threads_across(),
                    first.name,
                    first_layout.thread_rows,
                    first_layout.thread_cols,
                    first_layout.threads_down(),
                    first_layout.threads_across()
                ),
                Some(format!("give `{}` the shape and thread tile of `{}`", fragment.name, first.name)),
            );
        }
    }

    pub(super) fn fragment(&mut self, fragment: &Fragment, scope: &Scope) {
        let tensor_core_tiles = fragment.warp_tile.iter().flatten().chain(fragment.warpgroup_tile.iter().flatten());
        for extent in fragment.shape.iter().chain(&fragment.thread_tile).chain(tensor_core_tiles) {
            match extent.eval(scope) {
                Ok(value) if value > 0 => {}
                Ok(value) => self.error(
                    extent.origin,
                    format!("fragment extent `{extent}` is {value}; it must be positive"),
                    None,
                ),
                Err(_) => self.error(
                    extent.origin,
                    format!("fragment extent `{extent}` is not a compile-time constant"),
                    Some("use a constant from consts(..)".into()),
                ),
            }
        }
        let Some(layout) = FragmentLayout::with_scope(fragment, scope) else { return };
        if let Some(group_tile) = layout.warpgroup_tile {
            return self.warpgroup_fragment(fragment, &layout, group_tile);
        }
        if let Some(warp_tile) = layout.warp_tile {
            return self.warp_fragment(fragment, &layout, warp_tile);
        }
        if layout.rows <= 0 || layout.cols <= 0 || layout.thread_rows <= 0 || layout.thread_cols <= 0 {
            return;
        }
        self.same_thread_grid(fragment, &layout, scope);
        if layout.rows % layout.thread_rows != 0 || layout.cols % layout.thread_cols != 0 {
            let (what, extent, tile) = if layout.rows % layout.thread_rows != 0 {
                ("rows", layout.rows, layout.thread_rows)
            } else {
                ("columns", layout.cols, layout.thread_cols)
            };
            let divisors: Vec<String> =
                (1..=16).filter(|d| extent % d == 0 && (d - tile).abs() <= 4).map(|d| d.to_string()).collect();
            self.error(
                fragment.origin,
                format!(
                    "a {}×{} block tile is not divisible by the {}×{} thread tile: its {extent} {what} are not a multiple of {tile}",
                    layout.rows, layout.cols, layout.thread_rows, layout.thread_cols
                ),
                Some(format!(
                    "make each block-tile extent a multiple of the thread-tile extent (thread tiles of {} divide {extent})",
                    divisors.join(", ")
                )),
            );
            return;
        }
        let [split_rows, split_cols] = layout.split;
        if split_rows < 1
            || split_cols < 1
            || layout.thread_rows % split_rows != 0
            || layout.thread_cols % split_cols != 0
            || layout.rows % split_rows != 0
            || layout.cols % split_cols != 0
        {
            self.error(
                fragment.origin,
                format!(
                    "split([{split_rows}, {split_cols}]) does not divide the {}×{} thread tile and the block tile",
                    layout.thread_rows, layout.thread_cols
                ),
                None,
            );
            return;
        }
        let threads = self.kernel.config.threads.count() as i64;
        if let Some([rows, cols]) = layout.warp_layout {
            let warp = i64::from(self.target.warp_size);
            if threads % warp != 0 {
                self.error(
                    self.kernel.config.threads_origin,
                    format!(
                        "threads = {}: `{}` has `.warp_layout([{rows}, {cols}])`, which arranges whole warps of {warp} threads, but {threads} threads are {} warp{} and {} thread{}",
                        self.kernel.config.threads,
                        fragment.name,
                        threads / warp,
                        if threads / warp == 1 { "" } else { "s" },
                        threads % warp,
                        if threads % warp == 1 { "" } else { "s" }
                    ),
                    Some(format!(
                        "use a multiple of {warp} threads (e.g. threads = {}) with a fragment to match, or drop `.warp_layout(..)`",
                        ((threads + warp - 1) / warp * warp).max(warp)
                    )),
                );
                return;
            }
            if rows * cols != 32 || layout.threads_down() % rows != 0 || layout.threads_across() % cols != 0 {
                self.error(
                    fragment.origin,
                    format!(
                        "warp_layout([{rows}, {cols}]) must hold 32 threads and tile the {} × {} grid of thread tiles",
                        layout.threads_down(),
                        layout.threads_across()
                    ),
                    Some("use [4, 8], [8, 4], [2, 16] or [16, 2] where the grid allows".into()),
                );
            }
        }
        if layout.threads() != threads {
            // at the fragment: the thread tile is what the message is about (either side may change)
            self.error(
                fragment.origin,
                format!(
                    "the {}×{} fragment `{}` with {}×{} thread tiles needs {} × {} = {} threads, but threads = {}",
                    layout.rows,
                    layout.cols,
                    fragment.name,
                    layout.thread_rows,
                    layout.thread_cols,
                    layout.threads_down(),
                    layout.threads_across(),
                    layout.threads(),
                    self.kernel.config.threads
                ),
                Some(format!("use threads = {} in the attribute, or change the thread tile", layout.threads())),
            );
        }
        let registers = layout.thread_rows * layout.thread_cols + layout.thread_rows + layout.thread_cols;
        if registers > MAX_FRAGMENT_REGISTERS {
            self.error(
                fragment.origin,
                format!(
                    "a {}×{} thread tile needs {} accumulators + {} + {} operand registers = {registers}, over the {MAX_FRAGMENT_REGISTERS} a thread can spare of its 255",
                    layout.thread_rows,
                    layout.thread_cols,
                    layout.thread_rows * layout.thread_cols,
                    layout.thread_rows,
                    layout.thread_cols
                ),
                Some("use a smaller thread tile, e.g. thread_tile([8, 8])".into()),
            );
        }
    }

    /// A `.warpgroup_tile([64 · m, WN])` fragment: m of wgmma's m64nNk16 accumulators a
    /// warpgroup (N a multiple of 8 up to 256, at most [`MAX_WARPGROUP_ACCUMULATORS`] values a
    /// thread), tiling the block tile with as many warpgroups as the block has, on sm_90a.
    pub(super) fn warpgroup_fragment(
        &mut self,
        fragment: &Fragment,
        layout: &FragmentLayout,
        [group_rows, group_cols]: [i64; 2],
    ) {
        if layout.rows <= 0 || layout.cols <= 0 || group_rows <= 0 || group_cols <= 0 {
            return;
        }
        let config = &self.kernel.config;
        if config.target != Some(90) || !config.arch_specific {
            let written = config.target.map_or("no target".to_string(), |cc| {
                format!("target = sm_{cc}{}", if config.arch_specific { "a" } else { "" })
            });
            let origin = if config.target.is_some() { config.target_origin } else { fragment.origin };
            self.error(
                origin,
                format!("`.warpgroup_tile(..)` multiplies with wgmma, which only sm_90a has ({written})"),
                Some("add `target = sm_90a` to #[tile_kernel(..)], or use `.warp_tile(..)` (mma.sync, every GPU since sm_80)".into()),
            );
        }
        if fragment.element != ElementType::F32 {
            self.error(
                fragment.origin,
                format!(
                    "a `.warpgroup_tile(..)` fragment accumulates in f32 (wgmma's .f32 accumulators); `{}` is {}",
                    fragment.name, fragment.element
                ),
                Some("declare it `fragment::<f32>(..)` and convert when storing it".into()),
            );
            return;
        }
        if group_rows % 64 != 0 || group_cols % 8 != 0 || group_cols > 256 {
            let bad = if group_rows % 64 != 0 {
                format!("{group_rows} rows, where a warpgroup's wgmma covers 64 (a tile of 64 · m rows is m of them)")
            } else {
                format!("{group_cols} columns, where wgmma takes N = 8, 16, .., 256")
            };
            self.error(
                fragment.origin,
                format!("a {group_rows}×{group_cols} warpgroup tile is not made of wgmma m64nNk16 accumulators: {bad}"),
                Some(format!(
                    "use warpgroup_tile([{}, {}])",
                    (group_rows / 64).max(1) * 64,
                    (group_cols / 8).clamp(1, 32) * 8
                )),
            );
            return;
        }
        // the accumulators stay live in registers across every asynchronous wgmma: m64n256's
        // 128 a thread is the most a consumer warpgroup can hold beside its addresses
        let accumulators = group_rows * group_cols / 128;
        if accumulators > MAX_WARPGROUP_ACCUMULATORS {
            self.error(
                fragment.origin,
                format!(
                    "a {group_rows}×{group_cols} warpgroup tile holds {accumulators} f32 accumulators a thread ({group_rows} × {group_cols} / 128), more than the {MAX_WARPGROUP_ACCUMULATORS} a thread keeps live across wgmma (m64n256's)"
                ),
                Some(format!(
                    "use warpgroup_tile([64, {group_cols}]) or warpgroup_tile([{group_rows}, {}])",
                    MAX_WARPGROUP_ACCUMULATORS * 128 / group_rows
                )),
            );
            return;
        }
        if layout.rows % group_rows != 0 || layout.cols % group_cols != 0 {
            self.error(
                fragment.origin,
                format!(
                    "the {}×{} block tile is not divisible by the {group_rows}×{group_cols} warpgroup tile",
                    layout.rows, layout.cols
                ),
                Some("make each block-tile extent a multiple of the warpgroup-tile extent".into()),
            );
            return;
        }
        // with `consumers = n` each group of compute threads holds a whole tile's fragment
        let groups = i64::from(self.kernel.consumer_groups());
        if layout.threads() * groups != self.kernel.config.threads.count() as i64 {
            let warpgroups = layout.threads() / 128;
            let plural = if warpgroups == 1 { "" } else { "s" };
            let holders = if groups > 1 {
                format!(
                    "{warpgroups} warpgroup{plural} of 128 threads in each of the {groups} consumer groups (`consumers = {groups}`: each group holds the whole fragment) = {}",
                    layout.threads() * groups
                )
            } else {
                format!("{warpgroups} warpgroup{plural} of 128 threads = {}", layout.threads())
            };
            self.error(
                self.kernel.config.threads_origin,
                format!(
                    "the {}×{} fragment `{}` with {group_rows}×{group_cols} warpgroup tiles needs {holders}, but threads = {}",
                    layout.rows, layout.cols, fragment.name, self.kernel.config.threads
                ),
                Some(format!("use threads = {} or change the warpgroup tile", layout.threads() * groups)),
            );
        }
    }

    /// A `.warp_tile([WM, WN])` fragment: warp tiles that split into mma.sync's 16 × 8 tiles,
    /// tile the block tile, and take as many warps as the block has.
    pub(super) fn warp_fragment(
        &mut self,
        fragment: &Fragment,
        layout: &FragmentLayout,
        [warp_rows, warp_cols]: [i64; 2],
    ) {
        if layout.rows <= 0 || layout.cols <= 0 || warp_rows <= 0 || warp_cols <= 0 {
            return;
        }
        if fragment.element != ElementType::F32 {
            self.error(
                fragment.origin,
                format!(
                    "a `.warp_tile(..)` fragment accumulates in f32 (mma.sync's .f32 accumulators); `{}` is {}",
                    fragment.name, fragment.element
                ),
                Some("declare it `fragment::<f32>(..)` and convert when storing it".into()),
            );
            return;
        }
        if warp_rows % 16 != 0 || warp_cols % 8 != 0 {
            let bad = if warp_rows % 16 != 0 {
                format!("{warp_rows} rows are not a multiple of 16")
            } else {
                format!("{warp_cols} columns are not a multiple of 8")
            };
            self.error(
                fragment.origin,
                format!("a {warp_rows}×{warp_cols} warp tile does not split into mma.sync's m16n8 tiles: {bad}"),
                Some(format!(
                    "use a warp tile of 16·i × 8·j, e.g. warp_tile([{}, {}])",
                    (warp_rows / 16).max(1) * 16,
                    (warp_cols / 8).max(1) * 8
                )),
            );
            return;
        }
        if layout.rows % warp_rows != 0 || layout.cols % warp_cols != 0 {
            self.error(
                fragment.origin,
                format!(
                    "the {}×{} block tile is not divisible by the {warp_rows}×{warp_cols} warp tile",
                    layout.rows, layout.cols
                ),
                Some("make each block-tile extent a multiple of the warp-tile extent".into()),
            );
            return;
        }
        // with `consumers = n` each group of compute threads holds a whole tile's fragment
        let groups = i64::from(self.kernel.consumer_groups());
        if layout.threads() * groups != self.kernel.config.threads.count() as i64 {
            self.error(
                self.kernel.config.threads_origin,
                format!(
                    "the {}×{} fragment `{}` with {warp_rows}×{warp_cols} warp tiles needs {} × {} warps = {} threads, but threads = {}",
                    layout.rows,
                    layout.cols,
                    fragment.name,
                    layout.warps_down(),
                    layout.warps_across(),
                    layout.threads(),
                    self.kernel.config.threads
                ),
                Some(format!("use threads = {} or change the warp tile", layout.threads() * groups)),
            );
        }
        // each lane: WM/16 · WN/8 · 4 accumulators, 4 registers of A per 16 rows, 2 of B per 8 columns
        let accumulators = layout.thread_rows * layout.thread_cols;
        let operands = warp_rows / 16 * 4 + warp_cols / 8 * 2;
        if accumulators + operands > MAX_FRAGMENT_REGISTERS {
            self.error(
                fragment.origin,
                format!(
                    "a {warp_rows}×{warp_cols} warp tile needs {accumulators} accumulators + {operands} operand registers per lane = {}, over the {MAX_FRAGMENT_REGISTERS} a thread can spare of its 255",
                    accumulators + operands
                ),
                Some("use a smaller warp tile, e.g. warp_tile([64, 64])".into()),
            );
        }
    }
}
