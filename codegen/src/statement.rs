//! One template per statement kind; each renders to a block of CUDA lines that the caller
//! indents into place.

use askama::Template;
use tessera_dsl::{BinaryOp, Expr, GridBinding, GridStrideLoop, Kernel, Statement, TileCopy};

use crate::{c_expr, RenderError};

#[derive(Template)]
#[template(path = "grid.cu", escape = "none")]
struct GridSource {
    dsl: String,
    bindings: Vec<(String, char)>,
}

#[derive(Template)]
#[template(path = "grid_stride.cu", escape = "none")]
struct GridStrideSource {
    dsl: String,
    var: String,
    count: String,
    body: Vec<String>,
}

#[derive(Template)]
#[template(path = "tile_copy.cu", escape = "none")]
struct TileCopySource<'a> {
    dsl: String,
    src: &'a str,
    dst: &'a str,
    extent: String,
    tile_start: String,
    bound: &'a str,
    steps: i64,
    vector_type: &'static str,
    vector_bits: u32,
    vectorized: bool,
}

/// Renders `body`, each statement indented by `depth` levels of four spaces.
pub(crate) fn render_body(
    kernel: &Kernel,
    body: &[Statement],
    depth: usize,
) -> Result<Vec<String>, RenderError> {
    body.iter()
        .map(|statement| {
            let text = match statement {
                Statement::Grid(grid) => grid_source(grid),
                Statement::GridStride(stride) => grid_stride_source(kernel, stride),
                Statement::Copy(copy) => tile_copy_source(kernel, copy),
            }?;
            Ok(indent(&text, depth))
        })
        .collect()
}

fn grid_source(grid: &GridBinding) -> Result<String, RenderError> {
    let extents: Vec<String> = grid.extents.iter().map(Expr::to_string).collect();
    let vars = if grid.vars.len() == 1 {
        format!("({},)", grid.vars[0])
    } else {
        format!("({})", grid.vars.join(", "))
    };
    GridSource {
        dsl: format!("let {vars} = grid({});", extents.join(", ")),
        bindings: grid.vars.iter().cloned().zip(['x', 'y', 'z']).collect(),
    }
    .render()
    .map_err(|source| RenderError::Template {
        template: "grid.cu",
        source,
    })
}

fn grid_stride_source(kernel: &Kernel, stride: &GridStrideLoop) -> Result<String, RenderError> {
    GridStrideSource {
        dsl: format!("for {} in grid_stride({})", stride.var, stride.count),
        var: stride.var.clone(),
        count: c_expr(&stride.count),
        body: render_body(kernel, &stride.body, 1)?,
    }
    .render()
    .map_err(|source| RenderError::Template {
        template: "grid_stride.cu",
        source,
    })
}

/// A 1-D tile copy: validation guarantees rank 1, constant extent, matching element types
/// and a tile that is a whole number of `THREADS * VECTOR` passes.
fn tile_copy_source(kernel: &Kernel, copy: &TileCopy) -> Result<String, RenderError> {
    let invalid = |message: &str| RenderError::Invalid {
        kernel: kernel.name.clone(),
        diagnostics: tessera_dsl::Diagnostics(vec![tessera_dsl::Diagnostic::new(
            copy.origin,
            message,
        )]),
    };
    let tensor = kernel
        .param(&copy.src.tensor)
        .and_then(|p| p.tensor())
        .ok_or_else(|| invalid("unknown source tensor"))?;
    let bound = tensor
        .contiguous_symbol()
        .ok_or_else(|| invalid("source tensor has rank 0"))?;
    let extent = copy
        .src
        .extent
        .first()
        .ok_or_else(|| invalid("tile has no extent"))?;
    let index = copy
        .src
        .index
        .first()
        .ok_or_else(|| invalid("tile has no index"))?;
    let width = kernel.config.vector;
    let vector_type = tensor
        .element
        .vector_type(width)
        .ok_or_else(|| invalid("no vector type for this width"))?;
    let elements = extent
        .eval(&kernel.constant_scope())
        .map_err(|_| invalid("tile extent is not constant"))?;
    let per_pass = kernel.config.threads.count() as i64 * i64::from(width.get());
    TileCopySource {
        dsl: copy.to_string(),
        src: &copy.src.tensor,
        dst: &copy.dst.tensor,
        extent: c_expr(extent),
        tile_start: c_expr(&Expr::binary(BinaryOp::Mul, index.clone(), extent.clone())),
        bound,
        steps: elements / per_pass,
        vector_type,
        vector_bits: width.get() * tensor.element.size_bytes() * 8,
        vectorized: width.get() > 1,
    }
    .render()
    .map_err(|source| RenderError::Template {
        template: "tile_copy.cu",
        source,
    })
}

fn indent(text: &str, depth: usize) -> String {
    let pad = "    ".repeat(depth);
    text.lines()
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("{pad}{line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
