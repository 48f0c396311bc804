//! How a pipeline moves its tiles from global to shared memory, and the TMA tensor maps a
//! kernel whose pipeline copies with the Tensor Memory Accelerator takes.
//!
//! With `copies = tma` one producer thread issues each k-tile as bulk tensor copies
//! (`cp.async.bulk.tensor`, sm_90): one box per panel of the destination buffer, read through
//! a tensor map the launch builds from the tensor (pointer, shape, leading dimension). The
//! hardware writes the panel's swizzle itself, zero-fills whatever lies outside the tensor (so
//! edge tiles need no guards) and counts the bytes that landed on the stage's mbarrier.

use serde::{Deserialize, Serialize};

use crate::{CopyPlan, ElementType, Kernel, OperandPlan, Statement};

/// How a pipeline's copies move tiles from global to shared memory.
///
/// ```
/// use tessera_dsl::CopyMechanism;
/// assert_eq!(CopyMechanism::default(), CopyMechanism::AsyncCopy);
/// assert_eq!(CopyMechanism::Tma.to_string(), "tma");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CopyMechanism {
    /// cp.async: every copying thread moves 16 bytes at a time (sm_80 and newer).
    #[default]
    AsyncCopy,
    /// The Tensor Memory Accelerator (sm_90): one thread issues a tile as boxes of a tensor
    /// map; the hardware swizzles, zero-fills the edges and counts the bytes on an mbarrier.
    Tma,
}

impl std::fmt::Display for CopyMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CopyMechanism::AsyncCopy => "cp_async",
            CopyMechanism::Tma => "tma",
        })
    }
}

/// The swizzle spans TMA writes (bytes): its 32-, 64- and 128-byte modes.
pub const TMA_SWIZZLE_SPANS: [i64; 3] = [32, 64, 128];

/// The largest box extent along either dimension.
pub const TMA_MAX_BOX: i64 = 256;

/// Rows of the box a warp stores by TMA (`.by_tma()`): its 16 rows of a wgmma fragment.
pub const TMA_STORE_ROWS: u32 = 16;

/// Bytes a warp stages for one TMA store: its 16 rows of one 128-byte panel of the tile. Each
/// compute warp has two such buffers, so one panel's store runs while the next is staged.
pub const TMA_STORE_STAGE_BYTES: i64 = 16 * 128;

/// One tensor map a kernel takes as `<tensor>_tensor_map` (a `const __grid_constant__`
/// parameter after the shape symbols and leading dimensions): the box each TMA copy of
/// `tensor` reads — one panel of the destination buffer.
///
/// ```
/// use tessera_dsl::{ElementType, TensorMap};
/// let a = TensorMap { tensor: "a".into(), element: ElementType::BF16, box_rows: 128, box_cols: 64, boxes: 1, row_slices: 1, swizzle_bytes: 128, batched: false };
/// assert_eq!(a.param(), "a_tensor_map");
/// assert_eq!(a.box_bytes(), 16384);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorMap {
    pub tensor: String,
    pub element: ElementType,
    /// Rows of one box: the tile's rows.
    pub box_rows: u32,
    /// Columns of one box: one panel of the buffer (the swizzle span of elements).
    pub box_cols: u32,
    /// Boxes per tile: the buffer's panels.
    pub boxes: u32,
    /// Boxes down each panel: 1, or the blocks of a cluster that share the tile and whose
    /// panels do not divide among them — each then copies one slice of every panel's rows.
    pub row_slices: u32,
    /// The swizzle span the box is written with (32, 64 or 128 bytes).
    pub swizzle_bytes: u32,
    /// A batched tile (`q.at([b, h]).tile(..)`): the map is 3-D — columns, rows, and the
    /// matrices of the leading dimensions one after another — so a box past a matrix's last
    /// row reads zeros, not the next matrix.
    pub batched: bool,
}

impl TensorMap {
    /// The kernel parameter that carries the map.
    pub fn param(&self) -> String {
        format!("{}_tensor_map", self.tensor)
    }

    /// Bytes one box writes to shared memory (what its copy counts on the mbarrier, edge
    /// boxes included: the zero-filled part counts too).
    pub fn box_bytes(&self) -> u32 {
        self.box_rows * self.box_cols * self.element.size_bytes()
    }

    /// Bytes of one whole tile: every box.
    pub fn tile_bytes(&self) -> u32 {
        self.box_bytes() * self.boxes * self.row_slices
    }

    /// The map of a tile multicast to `blocks` blocks of a cluster, each issuing an equal share
    /// of its boxes: the panels as they are where they divide among the blocks, else each
    /// panel cut into `blocks` slices of rows — whole 8-row atoms of the swizzle, so every
    /// slice starts where the swizzle pattern does.
    ///
    /// ```
    /// use tessera_dsl::{ElementType, TensorMap};
    /// let b = TensorMap { tensor: "b".into(), element: ElementType::F32, box_rows: 256, box_cols: 32, boxes: 1, row_slices: 1, swizzle_bytes: 128, batched: false };
    /// let shared = b.clone().shared_by(2).unwrap();
    /// assert_eq!((shared.box_rows, shared.row_slices, shared.tile_bytes()), (128, 2, b.tile_bytes()));
    /// assert!(TensorMap { box_rows: 8, ..b }.shared_by(2).is_err());
    /// ```
    pub fn shared_by(self, blocks: u32) -> Result<TensorMap, String> {
        if blocks <= 1 || self.boxes.is_multiple_of(blocks) {
            return Ok(self);
        }
        if !self.box_rows.is_multiple_of(8 * blocks) {
            return Err(format!(
                "its {} box(es) of {} × {} divide neither by panels nor in slices of whole 8-row swizzle atoms among the {blocks} blocks of a cluster",
                self.boxes, self.box_rows, self.box_cols
            ));
        }
        Ok(TensorMap { box_rows: self.box_rows / blocks, row_slices: blocks, ..self })
    }
}

impl Kernel {
    /// Whether the kernel's pipeline with producers copies by TMA: it asks for it (`copies =
    /// tma`) and the launch found the tensors it copies readable by TMA (rows 16-byte aligned;
    /// else [`crate::Config::tma_sources_unaligned`] and it copies with cp.async).
    pub fn copies_by_tma(&self) -> bool {
        !self.config.tma_sources_unaligned && self.asks_for_tma()
    }

    /// Whether the kernel's pipeline with producers says `copies = tma`, whatever a launch then
    /// finds of the tensors' alignment.
    pub fn asks_for_tma(&self) -> bool {
        self.body
            .iter()
            .any(|s| matches!(s, Statement::Pipeline(p) if p.producers.is_some() && p.copies == CopyMechanism::Tma))
    }

    /// The tensor maps the kernel takes, one per tensor its producers copy by TMA, in copy order
    /// (empty unless [`Kernel::copies_by_tma`]). Copies validation rejects are left out.
    pub fn tensor_maps(&self) -> Vec<TensorMap> {
        if !self.copies_by_tma() {
            return Vec::new();
        }
        let scope = self.constant_scope();
        let mut maps: Vec<TensorMap> = Vec::new();
        // the copies before a pipeline with producers (a tile's own, which the producers issue
        // once a tile), then the pipeline's
        let mut copies = self.producer_tile_copies();
        for statement in &self.body {
            if let Statement::Pipeline(pipeline) = statement {
                copies.extend(pipeline.tile_copies());
            }
        }
        for copy in copies {
            let Ok(plan) = CopyPlan::new(self, copy, &scope) else { continue };
            if let Ok(map) = self.copy_tensor_map(copy, &plan) {
                if !maps.iter().any(|m| m.tensor == map.tensor) {
                    maps.push(map);
                }
            }
        }
        if let Some(map) = self.tma_store_map() {
            if !maps.iter().any(|m| m.tensor == map.tensor) {
                maps.push(map);
            }
        }
        maps
    }

    /// The copy out that TMA stores (`.by_tma()`), where the kernel copies by TMA (a launch
    /// that renders it with cp.async stores it from the threads).
    pub fn tma_store_copy(&self) -> Option<&crate::TileCopy> {
        if !self.copies_by_tma() {
            return None;
        }
        self.statements().into_iter().find_map(|s| match s {
            Statement::Copy(copy) if copy.by_tma => Some(copy),
            _ => None,
        })
    }

    /// The map a `.by_tma()` copy stores through: a warp's 16 rows of one 128-byte panel of the
    /// destination, written from the 128-byte swizzle its staging buffer holds.
    pub fn tma_store_map(&self) -> Option<TensorMap> {
        let copy = self.tma_store_copy()?;
        let crate::Operand::Global(tile) = &copy.dst else { return None };
        let element = self.param(&tile.tensor)?.tensor()?.element;
        let box_cols = 128 / element.size_bytes();
        Some(TensorMap {
            tensor: tile.tensor.clone(),
            element,
            box_rows: TMA_STORE_ROWS,
            box_cols,
            boxes: 1,
            row_slices: 1,
            swizzle_bytes: 128,
            batched: false,
        })
    }

    /// Bytes of the compute warps' staging buffers for a `.by_tma()` copy (0 without one).
    pub fn tma_store_staging_bytes(&self) -> i64 {
        if self.tma_store_copy().is_none() {
            return 0;
        }
        let warps = (self.config.threads.count() / 32) as i64;
        warps * 2 * TMA_STORE_STAGE_BYTES
    }

    /// The tensor map `copy` (planned as `plan`) reads through in this kernel:
    /// [`tensor_map_of`], shared among the blocks of a cluster ([`TensorMap::shared_by`]) where
    /// the copy is multicast.
    pub fn copy_tensor_map(&self, copy: &crate::TileCopy, plan: &CopyPlan) -> Result<TensorMap, String> {
        let map = tensor_map_of(plan)?;
        match self.cluster_tiles() {
            Some(cluster) if self.multicasts(copy) => map.shared_by(cluster.blocks),
            _ => Ok(map),
        }
    }
}

/// The tensor map a pipeline copy reads through, or why TMA cannot make it.
pub fn tensor_map_of(plan: &CopyPlan) -> Result<TensorMap, String> {
    let (OperandPlan::Global(global), OperandPlan::Shared(shared)) = (&plan.src, &plan.dst) else {
        return Err("TMA copies a global tile into a shared buffer".into());
    };
    if global.transposed || shared.transposed {
        return Err("TMA copies a tile as it is stored: neither side may be transposed (`.t()`)".into());
    }
    let layout = &shared.layout;
    let (Some(span), true) = (layout.swizzle_bytes, layout.panels) else {
        return Err(format!(
            "TMA writes swizzled panels: `{}` must be `.swizzle_bytes(n).panels()` with n in 32, 64 or 128",
            shared.buffer
        ));
    };
    if !TMA_SWIZZLE_SPANS.contains(&span) || layout.pad != 0 {
        return Err(format!(
            "TMA writes 32-, 64- or 128-byte swizzled panels without padding; `{}` has a {span}-byte span and {} elements of padding",
            shared.buffer, layout.pad
        ));
    }
    let element_bytes = i64::from(plan.element.size_bytes());
    if element_bytes < 2 {
        return Err(format!("TMA boxes here hold 16- or 32-bit elements, not {}", plan.element));
    }
    let panel_cols = span / element_bytes;
    if global.extent.len() != 2 || layout.cols % panel_cols != 0 {
        return Err(format!(
            "TMA copies 2-D tiles whose columns are whole panels of {panel_cols}; `{}` has {} columns",
            shared.buffer, layout.cols
        ));
    }
    if layout.rows > TMA_MAX_BOX {
        return Err(format!(
            "a TMA box has at most {TMA_MAX_BOX} rows; the tile of `{}` has {}",
            shared.buffer, layout.rows
        ));
    }
    Ok(TensorMap {
        tensor: global.tensor.clone(),
        element: plan.element,
        box_rows: layout.rows as u32,
        box_cols: panel_cols as u32,
        boxes: (layout.cols / panel_cols) as u32,
        row_slices: 1,
        swizzle_bytes: span as u32,
        batched: global.is_batched(),
    })
}
