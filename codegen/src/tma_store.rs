//! `copy(&acc, c.tile(..)).by_tma()`: a wgmma fragment stored through shared memory by TMA —
//! each compute warp stages its 16 rows one 128-byte panel at a time (two buffers a warp) and
//! one lane hands each panel to the copy engine, which writes the tensor while the warp goes on
//! to its next tile.

use askama::Template;
use tessera_dsl::{EpiloguePlan, Kernel, OperandPlan, TileCopy, TMA_STORE_STAGE_BYTES, TMA_STORE_STAGING};

use crate::operand::OperandText;
use crate::statement::{invalid, template_error};
use crate::RenderError;

#[derive(Template)]
#[template(path = "tma_store_epilogue.cu", escape = "none")]
struct TmaStoreSource {
    dsl: String,
    tensor: String,
    map: String,
    origins: Vec<(String, String)>,
    staging: &'static str,
    stage_bytes: i64,
    warp_cols: String,
    panel_cols: u32,
    element_bytes: u32,
    acc: String,
    /// The statements that leave the pair `value0`, `value1` (α, β applied) in `out`.
    values: Vec<String>,
    pair_type: &'static str,
    row0: String,
    col0: String,
}

/// The epilogue of a `.by_tma()` copy (the kernel's [`Kernel::tma_store_map`] exists).
pub(crate) fn epilogue_source(kernel: &Kernel, copy: &TileCopy, plan: &EpiloguePlan) -> Result<String, RenderError> {
    let map = kernel.tma_store_map().ok_or_else(|| {
        let why = match kernel.tma_store_copy() {
            None => "the kernel's pipeline does not copy by TMA".to_string(),
            Some(_) => format!("`{}` is not a tensor parameter", plan.dst.tensor),
        };
        invalid(kernel, copy.origin, &format!("no TMA store map for `{copy}`: {why}"))
    })?;
    let dst_plan = OperandPlan::Global(plan.dst.clone());
    let dst = OperandText::new(&dst_plan);
    let origins = dst.origin_declarations();
    let [(row0, _), (col0, _)] = origins.as_slice() else {
        let tensor = &plan.dst.tensor;
        let found = match plan.dst.is_batched() {
            true => format!("a batched tile of `{tensor}` (`.at([..])`)"),
            false => format!("a tile of `{tensor}` with {}", crate::statement::extents(plan.dst.extent_exprs.len())),
        };
        let message = format!("a TMA store writes an unbatched 2-D tile, not {found}");
        return Err(invalid(kernel, copy.origin, &message));
    };
    let element = map.element;
    let pair_type = crate::operand::pair_type(element);
    let component = |i: u32| element.vector_component(tessera_dsl::VectorWidth::W2, i);
    let to_float = |value: &str| crate::operand::widened(element, value);
    let from_float = |value: &str| crate::operand::narrowed(element, value);
    let mut values = Vec::new();
    if let Some((alpha, beta)) = &plan.axpby {
        values.push(format!("value0 = {alpha} * value0;"));
        values.push(format!("value1 = {alpha} * value1;"));
        // C read element by element where it lies inside the tensor (the box's edge is clipped)
        let column = format!("warp_col0 + panel * {} + col", map.box_cols);
        for v in 0..2u32 {
            let col = if v == 0 { column.clone() } else { format!("{column} + 1") };
            let inside = dst.in_bounds_at("warp_row0 + row", &col).unwrap_or_else(|| "true".into());
            let old = dst.element_at("warp_row0 + row", &col);
            values.push(format!("if ({beta} != 0.0f && {inside}) value{v} += {beta} * {};", to_float(&old)));
        }
    }
    values.push(format!("{pair_type} out;"));
    values.push(format!("out{} = {};", component(0), from_float("value0")));
    values.push(format!("out{} = {};", component(1), from_float("value1")));
    let [_, warp_cols] = plan.layout.warpgroup_tile.unwrap_or([64, 8]);
    let mut all_origins = crate::tensor_core::warp_origin_bindings(kernel, &plan.fragment);
    all_origins.extend(origins.clone());
    TmaStoreSource {
        dsl: copy.to_string(),
        tensor: map.tensor.clone(),
        map: map.param(),
        origins: all_origins,
        staging: TMA_STORE_STAGING,
        stage_bytes: TMA_STORE_STAGE_BYTES,
        warp_cols: warp_cols.to_string(),
        panel_cols: map.box_cols,
        element_bytes: element.size_bytes(),
        acc: plan.fragment.clone(),
        values,
        pair_type,
        row0: row0.clone(),
        col0: col0.clone(),
    }
    .render()
    .map_err(template_error("tma_store_epilogue.cu"))
}
