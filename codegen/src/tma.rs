//! A pipeline's copies as TMA bulk tensor copies (`copies = tma`): one box per panel of the
//! destination buffer, issued by one producer thread, landing on the stage's mbarrier.

use askama::Template;
use tessera_dsl::{CopyPlan, Kernel, OperandPlan, PipelineLoop, TileCopy};

use crate::operand::OperandText;
use crate::statement::{invalid, invalid_plan, operand_kind, template_error};
use crate::RenderError;

#[derive(Template)]
#[template(path = "tma_copy.cu", escape = "none")]
struct TmaCopySource<'a> {
    dsl: String,
    tensor: &'a str,
    /// The buffer a box lands in: `k_s[stage]` for a pipeline stage, `q_s` for a tile's own.
    destination: String,
    /// The mbarrier the bytes are counted on.
    barrier: &'static str,
    map: String,
    boxes: u32,
    /// Boxes down each panel (a multicast tile's rows sliced among the cluster's blocks).
    slices: u32,
    box_rows: u32,
    box_cols: u32,
    box_bytes: u32,
    swizzle: u32,
    origins: Vec<(String, String)>,
    row0: String,
    col0: String,
    /// The matrix of a batched tile (`b * H + h`): a 3-D box.
    batch: Option<String>,
    /// Multicast to the blocks of the cluster (`cluster = ..`), each issuing every
    /// CLUSTER_BLOCKS-th box from its rank on.
    multicast: bool,
}

/// The producer's copies of one k-tile into `stage` and the bytes they land: one block per
/// copy of `pipeline`.
pub(crate) fn stage_copies(kernel: &Kernel, pipeline: &PipelineLoop) -> Result<(Vec<String>, u32), RenderError> {
    let copies: Vec<&TileCopy> = pipeline.tile_copies().collect();
    copy_sources(kernel, &copies, true)
}

/// The producer's copies of a tile's own buffers (the copies before the pipeline), counted on
/// `tessera_tile_full`, and the bytes they land.
pub(crate) fn tile_copies(kernel: &Kernel, copies: &[&TileCopy]) -> Result<(Vec<String>, u32), RenderError> {
    copy_sources(kernel, copies, false)
}

fn copy_sources(kernel: &Kernel, copies: &[&TileCopy], staged: bool) -> Result<(Vec<String>, u32), RenderError> {
    let scope = kernel.constant_scope();
    let mut blocks = Vec::new();
    let mut bytes = 0;
    for copy in copies {
        let plan = CopyPlan::new(kernel, copy, &scope).map_err(invalid_plan(kernel))?;
        let map = kernel.copy_tensor_map(copy, &plan).map_err(|why| invalid(kernel, copy.origin, &why))?;
        let OperandPlan::Shared(shared) = &plan.dst else {
            let message =
                format!("a TMA copy lands in a shared buffer, not in {} `{}`", operand_kind(&copy.dst), copy.dst);
            return Err(invalid(kernel, copy.origin, &message));
        };
        let OperandPlan::Global(global) = &plan.src else {
            let message = format!("a TMA copy reads a global tile, not {} `{}`", operand_kind(&copy.src), copy.src);
            return Err(invalid(kernel, copy.origin, &message));
        };
        // a batched tile's box is addressed by (column, row, matrix): its element offset
        // (`q_batch0`) is the map's business
        let batch_name = crate::operand::batch_origin_name(&global.tensor);
        let origins: Vec<(String, String)> = OperandText::new(&plan.src)
            .origin_declarations()
            .into_iter()
            .filter(|(name, _)| *name != batch_name)
            .collect();
        let [(row0, _), (col0, _)] = origins.as_slice() else {
            let message = format!(
                "a TMA copy moves 2-D tiles; this one's tile of `{}` has {}",
                global.tensor,
                crate::statement::extents(global.extent_exprs.len())
            );
            return Err(invalid(kernel, copy.origin, &message));
        };
        bytes += map.tile_bytes();
        let (destination, barrier) = match staged {
            true => (format!("{}[stage]", shared.buffer), "&tessera_full[stage]"),
            false => (shared.buffer.clone(), "&tessera_tile_full"),
        };
        blocks.push(
            TmaCopySource {
                dsl: copy.to_string(),
                tensor: &map.tensor,
                destination,
                barrier,
                map: map.param(),
                boxes: map.boxes,
                slices: map.row_slices,
                box_rows: map.box_rows,
                box_cols: map.box_cols,
                box_bytes: map.box_bytes(),
                swizzle: map.swizzle_bytes,
                row0: row0.clone(),
                col0: col0.clone(),
                batch: global.batch_index().map(|index| crate::c_expr(&index)),
                origins: origins.clone(),
                multicast: staged && kernel.multicasts(copy),
            }
            .render()
            .map_err(template_error("tma_copy.cu"))?,
        );
    }
    Ok((blocks, bytes))
}
