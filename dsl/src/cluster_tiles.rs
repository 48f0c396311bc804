//! Thread-block clusters on a persistent, warp-specialised pipeline (`cluster = (1, 2)` with
//! `producers = ..` and `copies = tma`): a cluster's blocks take neighbouring tiles along one
//! axis of the tile grid, and a pipeline copy whose tile does not move along that axis — the
//! same tile for every block of the cluster — is read from global memory once per cluster: each
//! block's producer copies a share of its boxes by TMA multicast into the stage of every block.

use crate::{Expr, Kernel, Operand, Statement, TileCopy};

/// How a persistent kernel's clusters share tiles: `blocks` blocks along grid `axis` (0: x, the
/// tile grid's columns; 1: y, its rows) take one cluster tile, block r its r-th sub-tile.
///
/// ```
/// use tessera_dsl::ClusterTiles;
/// let rows = ClusterTiles { axis: 1, blocks: 2 };
/// // a cluster tile covers two tile rows: 17 rows of tiles make 9 cluster rows
/// assert_eq!(rows.cluster_extent(1, 17), 9);
/// assert_eq!(rows.cluster_extent(0, 16), 16);
/// assert_eq!(rows.launch_dims(), [2, 1, 1]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterTiles {
    pub axis: usize,
    pub blocks: u32,
}

impl ClusterTiles {
    /// The cluster tiles along grid dimension `dim` of `tiles` tiles: ⌈tiles / blocks⌉ along
    /// the clustered axis (its last cluster tile may hang past the grid), `tiles` elsewhere.
    pub fn cluster_extent(self, dim: usize, tiles: i64) -> i64 {
        if dim == self.axis {
            (tiles + i64::from(self.blocks) - 1) / i64::from(self.blocks)
        } else {
            tiles
        }
    }

    /// The launch's cluster: the persistent grid is 1-D, a cluster `blocks` consecutive blocks.
    pub fn launch_dims(self) -> [u32; 3] {
        [self.blocks, 1, 1]
    }
}

impl Kernel {
    /// `cluster = ..` on a persistent grid (a pipeline with producers): along which axis its
    /// blocks take neighbouring tiles. `None` without clusters, on other grids, or when more
    /// than one dimension of the cluster exceeds 1 (validation reports that).
    pub fn cluster_tiles(&self) -> Option<ClusterTiles> {
        let dims = self.config.cluster?;
        if self.producer_threads() == 0 {
            return None;
        }
        let clustered: Vec<usize> = (0..3).filter(|&d| dims[d] > 1).collect();
        match clustered.as_slice() {
            [axis] if *axis < 2 => Some(ClusterTiles { axis: *axis, blocks: dims[*axis] }),
            _ => None,
        }
    }

    /// The cluster dimensions the kernel is launched with: a persistent kernel's 1-D grid takes
    /// [`ClusterTiles::launch_dims`], any other `cluster = ..` as written.
    pub fn launch_cluster(&self) -> Option<[u32; 3]> {
        match self.cluster_tiles() {
            Some(tiles) => Some(tiles.launch_dims()),
            None => self.config.cluster,
        }
    }

    /// Whether the pipeline copy `copy` is multicast to the blocks of a cluster: a TMA copy of
    /// a global tile whose indices do not mention the clustered grid variable, so every block
    /// of the cluster copies the same tile.
    ///
    /// ```
    /// use tessera_dsl::Kernel;
    /// # fn check(kernel: &Kernel) {
    /// // `cluster = (1, 2)` around `copy(b.tile([k, bx], ..), &b_s)`: B is multicast, A is not
    /// for copy in kernel.pipeline_tile_copies() {
    ///     println!("{copy}: multicast {}", kernel.multicasts(copy));
    /// }
    /// # }
    /// ```
    pub fn multicasts(&self, copy: &TileCopy) -> bool {
        let (Some(cluster), true) = (self.cluster_tiles(), self.copies_by_tma()) else { return false };
        let Some(var) = self.grid_var(cluster.axis) else { return false };
        let Operand::Global(tile) = &copy.src else { return false };
        let mentions = |e: &Expr| e.names().iter().any(|(name, _)| *name == var);
        self.pipeline_tile_copies().any(|c| c == copy) && !tile.index.iter().chain(&tile.at).any(mentions)
    }

    /// The copies inside the pipeline with producers (each k-tile's), in order.
    pub fn pipeline_tile_copies(&self) -> impl Iterator<Item = &TileCopy> {
        self.body
            .iter()
            .filter_map(|s| match s {
                Statement::Pipeline(p) if p.producers.is_some() => Some(p.tile_copies()),
                _ => None,
            })
            .flatten()
    }

    /// The name the grid binds to dimension `axis` (`let (bx, by) = grid(..)`).
    fn grid_var(&self, axis: usize) -> Option<&str> {
        self.body.iter().find_map(|s| match s {
            Statement::Grid(grid) => grid.vars.get(axis).map(String::as_str),
            _ => None,
        })
    }
}
