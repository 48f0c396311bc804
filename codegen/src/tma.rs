//! A pipeline's copies as TMA bulk tensor copies (`copies = tma`): one box per panel of the
//! destination buffer, issued by one producer thread, landing on the stage's mbarrier.

use askama::Template;
use tessera_dsl::{tensor_map_of, CopyPlan, Kernel, OperandPlan, PipelineLoop};

use crate::operand::OperandText;
use crate::statement::{invalid, invalid_plan, template_error};
use crate::RenderError;

#[derive(Template)]
#[template(path = "tma_copy.cu", escape = "none")]
struct TmaCopySource<'a> {
    dsl: String,
    tensor: &'a str,
    buffer: &'a str,
    map: String,
    boxes: u32,
    box_rows: u32,
    box_cols: u32,
    box_bytes: u32,
    swizzle: u32,
    origins: Vec<(String, String)>,
    row0: String,
    col0: String,
}

/// The producer's copies of one k-tile into `stage` and the bytes they land: one block per
/// copy of `pipeline`.
pub(crate) fn stage_copies(kernel: &Kernel, pipeline: &PipelineLoop) -> Result<(Vec<String>, u32), RenderError> {
    let scope = kernel.constant_scope();
    let mut blocks = Vec::new();
    let mut bytes = 0;
    for copy in pipeline.tile_copies() {
        let plan = CopyPlan::new(kernel, copy, &scope).map_err(invalid_plan(kernel))?;
        let map = tensor_map_of(&plan).map_err(|why| invalid(kernel, copy.origin, &why))?;
        let OperandPlan::Shared(shared) = &plan.dst else {
            return Err(invalid(kernel, copy.origin, "TMA copies into a shared buffer"));
        };
        let src = OperandText::new(&plan.src);
        let origins = src.origin_declarations();
        let [(row0, _), (col0, _)] = origins.as_slice() else {
            return Err(invalid(kernel, copy.origin, "TMA copies 2-D tiles"));
        };
        bytes += map.tile_bytes();
        blocks.push(
            TmaCopySource {
                dsl: copy.to_string(),
                tensor: &map.tensor,
                buffer: &shared.buffer,
                map: map.param(),
                boxes: map.boxes,
                box_rows: map.box_rows,
                box_cols: map.box_cols,
                box_bytes: map.box_bytes(),
                swizzle: map.swizzle_bytes,
                row0: row0.clone(),
                col0: col0.clone(),
                origins: origins.clone(),
            }
            .render()
            .map_err(template_error("tma_copy.cu"))?,
        );
    }
    Ok((blocks, bytes))
}
