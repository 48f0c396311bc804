//! `grid(..).stream_k()`: the body of a stream-K kernel — the schedule, a loop over this
//! block's units of work (a tile and a run of its k-tiles), the pipeline over that run, and
//! the epilogue behind the fix-up that sums a split tile's shares.

use askama::Template;
use tessera_dsl::{Expr, Fragment, GridBinding, Kernel, Operand, Statement, StreamKBody};

use crate::statement::{absent_parts, indent, invalid, render_body, template_error};
use crate::{c_expr, RenderError};

#[derive(Template)]
#[template(path = "stream_k.cu", escape = "none")]
struct ScheduleSource {
    dsl: String,
    extents: Vec<(String, String)>,
    tiles: String,
    k_tiles: String,
}

#[derive(Template)]
#[template(path = "stream_k_unit.cu", escape = "none")]
struct UnitSource {
    bindings: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "stream_k_epilogue.cu", escape = "none")]
struct FixupSource {
    dsl: String,
    element: &'static str,
    acc: String,
    epilogue: String,
}

/// The kernel body of a `.stream_k()` kernel (validation has checked its shape: the grid,
/// shared buffers, one fragment, one cp.async pipeline, one epilogue copy).
pub(crate) fn body(kernel: &Kernel, body: &[Statement]) -> Result<Vec<String>, RenderError> {
    let Some(StreamKBody { grid, pipeline, fragment }) = kernel.stream_k_body() else {
        let has = |pick: fn(&Statement) -> bool| kernel.body.iter().any(pick);
        let missing = absent_parts(&[
            (has(|s| matches!(s, Statement::Grid(grid) if grid.stream_k)), "`.stream_k()` grid"),
            (has(|s| matches!(s, Statement::Pipeline(_))), "pipeline"),
            (has(|s| matches!(s, Statement::Fragment(_))), "fragment"),
        ]);
        let message = format!(
            "a stream-K kernel has a `.stream_k()` grid, a pipeline and a fragment in its body; this one has {missing}"
        );
        return Err(invalid(kernel, kernel.origin, &message));
    };
    let mut lines = vec![indent(&schedule(kernel, grid, fragment, &pipeline.count)?, 1)];
    // shared buffers once, outside the loop; the rest per unit of work
    let (outside, inside): (Vec<Statement>, Vec<Statement>) = body
        .iter()
        .filter(|s| !matches!(s, Statement::Grid(_)))
        .cloned()
        .partition(|s| matches!(s, Statement::Shared(_)));
    lines.extend(render_body(kernel, &outside, 1)?);
    lines.push("    for (;;) {".into());
    lines.push(indent(&unit(kernel, grid)?, 2));
    for statement in &inside {
        let text = match statement {
            Statement::Pipeline(pipeline) => crate::gemm::pipeline_range_source(
                kernel,
                pipeline,
                Some(("k_begin", "k_end")),
                &tessera_dsl::TypeEnv::of_kernel_body(kernel),
            )?,
            Statement::Copy(copy) if matches!(copy.src, Operand::Fragment(_)) => fixup(kernel, fragment, copy)?,
            other => render_body(kernel, std::slice::from_ref(other), 0)?.join("\n"),
        };
        lines.push(indent(&text, 2));
    }
    lines.push("    }".into());
    Ok(lines)
}

fn schedule(kernel: &Kernel, grid: &GridBinding, fragment: &Fragment, k_tiles: &Expr) -> Result<String, RenderError> {
    let (extents, tiles) = crate::tiles::tile_counts(grid);
    let source = ScheduleSource { dsl: grid.to_string(), extents, tiles, k_tiles: c_expr(k_tiles) }
        .render()
        .map_err(template_error("stream_k.cu"))?;
    let values = thread_values(kernel, fragment)?;
    Ok(format!(
        "{source}\nconstexpr int THREAD_VALUES = {values};  // the values of a tile each thread holds\n\
         constexpr int TILE_VALUES = THREADS * THREAD_VALUES;  // values in one share of a tile"
    ))
}

/// How many values of the fragment each thread holds: a thread tile's TM × TN, a warp tile's
/// WM · WN / 32 (`mma.sync`'s accumulator layout), in the order of the register array.
fn thread_values(kernel: &Kernel, fragment: &Fragment) -> Result<String, RenderError> {
    if let Some([rows, cols]) = fragment.warp_tile.as_deref() {
        return Ok(format!("{} * {} / 32", c_expr(rows), c_expr(cols)));
    }
    let thread_tile = fragment.thread_tile.iter().map(c_expr).collect::<Vec<_>>().join(" * ");
    if thread_tile.is_empty() || fragment.warpgroup_tile.is_some() {
        let message =
            format!("stream-K takes a fragment with a thread tile or a warp tile; `{}` is `{fragment}`", fragment.name);
        return Err(invalid(kernel, fragment.origin, &message));
    }
    Ok(thread_tile)
}

fn unit(kernel: &Kernel, grid: &GridBinding) -> Result<String, RenderError> {
    let Some(coordinates) = crate::tiles::tile_coordinates(grid) else {
        let message = format!(
            "stream-K numbers the tiles of a 1-D, 2-D or 3-D grid (2-D when grouped), not those of the {}-D `{grid}`",
            grid.vars.len()
        );
        return Err(invalid(kernel, grid.origin, &message));
    };
    // a 2-D grid's tile count along x comes from the schedule in shared memory
    let mut bindings = Vec::new();
    if coordinates.len() == 2 {
        bindings.push(("tiles_x".to_string(), "stream_k[SK_TILES_X]".to_string()));
    }
    bindings.extend(coordinates);
    UnitSource { bindings }.render().map_err(template_error("stream_k_unit.cu"))
}

fn fixup(kernel: &Kernel, fragment: &Fragment, copy: &tessera_dsl::TileCopy) -> Result<String, RenderError> {
    let epilogue = crate::gemm::epilogue_source(kernel, copy)?;
    FixupSource {
        dsl: copy.to_string(),
        element: fragment.element.cuda_name(),
        acc: fragment.name.clone(),
        epilogue: indent(&epilogue, 2),
    }
    .render()
    .map_err(template_error("stream_k_epilogue.cu"))
}
