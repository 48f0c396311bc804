//! One template per statement kind; each renders to a block of CUDA lines that the caller
//! indents into place.

use askama::Template;
use tessera_dsl::{
    Barrier, BinaryOp, CopyPlan, Expr, GridBinding, GridStrideLoop, ItemOrder, Kernel, Operand, OperandPlan,
    SharedBuffer, SharedLayout, Statement, TileCopy, TypeEnv, VectorWidth,
};

use crate::operand::OperandText;
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
#[template(path = "shared.cu", escape = "none")]
struct SharedSource<'a> {
    dsl: String,
    note: Option<String>,
    element: &'static str,
    name: &'a str,
    /// 16, or 1024 for `.panels()`.
    align: i64,
    /// Where the buffer starts in dynamic shared memory, when the kernel uses it.
    offset: Option<i64>,
    /// `[2][BK][BM + 4]`: the array type's extents, for the dynamic declaration.
    dims: String,
}

#[derive(Template)]
#[template(path = "barrier.cu", escape = "none")]
struct BarrierSource<'a> {
    reason: Option<&'a str>,
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

#[derive(Template)]
#[template(path = "tile_copy_2d.cu", escape = "none")]
struct TileCopy2dSource {
    dsl: String,
    steps: i64,
    vector_type: &'static str,
    column_major: bool,
    rows: String,
    cols: String,
    origins: Vec<(String, String)>,
    whole_tile: Option<String>,
    fast_path: String,
    edge_path: String,
}

#[derive(Template)]
#[template(path = "tile_copy_2d_edge.cu", escape = "none")]
struct EdgePathSource {
    vector_type: &'static str,
    row_of_item: String,
    col_of_item: String,
    load: Vec<String>,
    store: Vec<String>,
}

#[derive(Template)]
#[template(path = "tile_copy_2d_fast.cu", escape = "none")]
struct FastPathSource {
    vector_type: &'static str,
    row_of_item: String,
    col_of_item: String,
    load: String,
    store: Vec<String>,
}

pub(crate) fn template_error(template: &'static str) -> impl FnOnce(askama::Error) -> RenderError {
    move |source| RenderError::Template { template, source }
}

/// Renders `body`, each statement indented by `depth` levels of four spaces.
pub(crate) fn render_body(kernel: &Kernel, body: &[Statement], depth: usize) -> Result<Vec<String>, RenderError> {
    render_scoped(kernel, body, depth, &mut TypeEnv::of_kernel_body(kernel))
}

/// Renders `body` with the names `env` holds, adding the thread-code locals it declares.
pub(crate) fn render_scoped(
    kernel: &Kernel,
    body: &[Statement],
    depth: usize,
    env: &mut TypeEnv,
) -> Result<Vec<String>, RenderError> {
    body.iter()
        .map(|statement| {
            let text = match statement {
                Statement::Thread(thread) => crate::thread_code::thread_source(kernel, thread, env),
                Statement::Grid(grid) => grid_source(grid),
                Statement::GridStride(stride) => grid_stride_source(kernel, stride, &mut env.clone()),
                Statement::Shared(buffer) => shared_source(kernel, buffer),
                Statement::Copy(copy) if matches!(copy.src, Operand::Fragment(_)) => {
                    crate::gemm::epilogue_source(kernel, copy)
                }
                Statement::Copy(copy) => tile_copy_source(kernel, copy),
                Statement::Sync(barrier) => barrier_source(barrier),
                Statement::Fragment(fragment) => crate::gemm::fragment_source(kernel, fragment),
                Statement::Pipeline(pipeline) => crate::gemm::pipeline_source(kernel, pipeline, env),
                Statement::Mma(mma) => crate::gemm::mma_source(kernel, mma, None),
            }?;
            Ok(indent(&text, depth))
        })
        .collect()
}

fn grid_source(grid: &GridBinding) -> Result<String, RenderError> {
    GridSource { dsl: grid.to_string(), bindings: grid.vars.iter().cloned().zip(['x', 'y', 'z']).collect() }
        .render()
        .map_err(template_error("grid.cu"))
}

fn grid_stride_source(kernel: &Kernel, stride: &GridStrideLoop, env: &mut TypeEnv) -> Result<String, RenderError> {
    GridStrideSource {
        dsl: format!("for {} in grid_stride({})", stride.var, stride.count),
        var: stride.var.clone(),
        count: c_expr(&stride.count),
        body: render_scoped(kernel, &stride.body, 1, env)?,
    }
    .render()
    .map_err(template_error("grid_stride.cu"))
}

fn shared_source(kernel: &Kernel, buffer: &SharedBuffer) -> Result<String, RenderError> {
    let layout = SharedLayout::of(buffer, kernel).ok_or_else(|| {
        let name = &buffer.name;
        let message = match first_non_constant(kernel, &buffer.shape) {
            Some(why) if buffer.shape.len() == 2 => {
                format!("shared buffer `{name}` = `{buffer}` does not evaluate: {why}")
            }
            _ => format!("a shared buffer is 2-D; `{name}` = `{buffer}` has {}", extents(buffer.shape.len())),
        };
        invalid(kernel, buffer.origin, &message)
    })?;
    let swizzle = layout.swizzle.map(|unit| {
        let groups = layout.cols / unit;
        if unit == 1 {
            format!("column c of row r is stored at c ^ (r % {groups})")
        } else {
            format!("{unit}-column group g of row r is stored at g ^ (r % {groups})")
        }
    });
    let plan = kernel.shared_memory();
    let slot = plan.slot(&buffer.name).filter(|_| plan.dynamic);
    let place = slot.map(|s| format!("bytes {} to {} of tessera_smem", s.offset, s.offset + s.bytes()));
    let note = match (swizzle, place) {
        (Some(swizzle), Some(place)) => Some(format!("{swizzle}; {place}")),
        (swizzle, place) => swizzle.or(place),
    };
    let stages = kernel.buffer_stages(&buffer.name);
    let (rows, cols) = (c_expr(&buffer.shape[0]), c_expr(&buffer.shape[1]));
    let mut dims = if stages > 1 { format!("[{stages}]") } else { String::new() };
    match layout.panel_cols() {
        // [panel][row][column within the panel]
        Some(panel_cols) => dims.push_str(&format!("[{cols} / {panel_cols}][{rows}][{panel_cols}]")),
        None if layout.pad > 0 => dims.push_str(&format!("[{rows}][{cols} + {}]", layout.pad)),
        None => dims.push_str(&format!("[{rows}][{cols}]")),
    }
    SharedSource {
        dsl: format!("let {} = {};", buffer.name, buffer),
        note,
        element: buffer.element.cuda_name(),
        name: &buffer.name,
        align: layout.alignment(),
        offset: slot.map(|s| s.offset),
        dims,
    }
    .render()
    .map_err(template_error("shared.cu"))
}

fn barrier_source(barrier: &Barrier) -> Result<String, RenderError> {
    BarrierSource { reason: barrier.reason.as_deref() }.render().map_err(template_error("barrier.cu"))
}

/// A plan's diagnostics as the kernel's render error: `CopyPlan::new(..).map_err(invalid_plan(kernel))`.
pub(crate) fn invalid_plan(kernel: &Kernel) -> impl FnOnce(Vec<tessera_dsl::Diagnostic>) -> RenderError + '_ {
    |errors| RenderError::Invalid { kernel: kernel.name.clone(), diagnostics: tessera_dsl::Diagnostics(errors) }
}

pub(crate) fn invalid(kernel: &Kernel, origin: tessera_dsl::Origin, message: &str) -> RenderError {
    RenderError::Invalid {
        kernel: kernel.name.clone(),
        diagnostics: tessera_dsl::Diagnostics(vec![tessera_dsl::Diagnostic::new(origin, message)]),
    }
}

/// The fragment named `name`, or an error at `origin` that lists the fragments the kernel
/// declares.
pub(crate) fn declared_fragment<'k>(
    kernel: &'k Kernel,
    name: &str,
    origin: tessera_dsl::Origin,
) -> Result<&'k tessera_dsl::Fragment, RenderError> {
    kernel.fragment(name).ok_or_else(|| {
        let declared: Vec<&str> = kernel.fragments().into_iter().map(|f| f.name.as_str()).collect();
        let declared = if declared.is_empty() { "none".to_string() } else { declared.join(", ") };
        invalid(kernel, origin, &format!("fragment `{name}` is not declared in this kernel (fragments: {declared})"))
    })
}

/// "no grid and no pipeline": the parts of a kernel's body that `parts` (present, name) says
/// are absent, for messages.
pub(crate) fn absent_parts(parts: &[(bool, &str)]) -> String {
    let absent: Vec<&str> = parts.iter().filter(|(present, _)| !present).map(|(_, part)| *part).collect();
    format!("no {}", absent.join(" and no "))
}

/// "1 extent", "3 extents": how many extents a shape or tile has, for messages.
pub(crate) fn extents(count: usize) -> String {
    match count {
        1 => "1 extent".to_string(),
        _ => format!("{count} extents"),
    }
}

/// Why not all of `exprs` are constants of the kernel (`` `PAD` has no value here ``): the
/// first that does not evaluate, if any.
pub(crate) fn first_non_constant<'e>(kernel: &Kernel, exprs: impl IntoIterator<Item = &'e Expr>) -> Option<String> {
    let scope = kernel.constant_scope();
    exprs.into_iter().find_map(|expr| expr.eval(&scope).err()).map(|error| error.to_string())
}

/// The message for `width` values of `element`, which no CUDA vector type holds.
pub(crate) fn no_vector_type(element: tessera_dsl::ElementType, width: VectorWidth) -> String {
    let bytes = width.get() * element.size_bytes();
    format!("no CUDA vector type holds {width} {element} values ({bytes} bytes; one access moves at most 16)")
}

/// "a global tile", "a shared buffer" or "a fragment": what an operand is, for messages.
pub(crate) fn operand_kind(operand: &Operand) -> &'static str {
    match operand {
        Operand::Global(_) => "a global tile",
        Operand::Shared(_) => "a shared buffer",
        Operand::Fragment(_) => "a fragment",
    }
}

fn tile_copy_source(kernel: &Kernel, copy: &TileCopy) -> Result<String, RenderError> {
    let plan = CopyPlan::new(kernel, copy, &kernel.constant_scope()).map_err(invalid_plan(kernel))?;
    let width = VectorWidth::new(plan.vector as u32).ok_or_else(|| {
        let message = format!("vector width {} is not one a 128-bit access splits into (1, 2, 4, 8)", plan.vector);
        invalid(kernel, copy.origin, &message)
    })?;
    let vector_type = plan
        .element
        .vector_type(width)
        .ok_or_else(|| invalid(kernel, copy.origin, &no_vector_type(plan.element, width)))?;
    match (&plan.src, &plan.dst) {
        (OperandPlan::Global(src), OperandPlan::Global(dst)) if src.extent.len() == 1 && dst.extent.len() == 1 => {
            linear_copy_source(kernel, copy, &plan, vector_type)
        }
        _ => tile_copy_2d_source(copy, &plan, vector_type),
    }
}

/// A 1-D tile copy: whole tiles move as vectors with no bounds checks, the last one element
/// by element.
fn linear_copy_source(
    kernel: &Kernel,
    copy: &TileCopy,
    plan: &CopyPlan,
    vector_type: &'static str,
) -> Result<String, RenderError> {
    let (OperandPlan::Global(src), OperandPlan::Global(dst)) = (&plan.src, &plan.dst) else {
        let message = format!(
            "a 1-D copy moves between two global tiles; `{copy}` copies {} into {}",
            operand_kind(&copy.src),
            operand_kind(&copy.dst)
        );
        return Err(invalid(kernel, copy.origin, &message));
    };
    let Some(extent) = src.extent_exprs.first() else {
        let message = format!("a 1-D tile has one extent; the tile of `{}` in `{copy}` has none", src.tensor);
        return Err(invalid(kernel, copy.origin, &message));
    };
    TileCopySource {
        dsl: copy.to_string(),
        src: &src.tensor,
        dst: &dst.tensor,
        extent: c_expr(extent),
        tile_start: c_expr(&Expr::binary(BinaryOp::Mul, src.index[0].clone(), extent.clone())),
        bound: &src.symbols[0],
        steps: plan.steps,
        vector_type,
        vector_bits: (plan.vector * i64::from(plan.element.size_bytes()) * 8) as u32,
        vectorized: plan.vector > 1,
    }
    .render()
    .map_err(template_error("tile_copy.cu"))
}

/// A 2-D tile copy between global tiles and shared buffers, either side possibly transposed.
fn tile_copy_2d_source(copy: &TileCopy, plan: &CopyPlan, vector_type: &'static str) -> Result<String, RenderError> {
    let src = OperandText::new(&plan.src);
    let dst = OperandText::new(&plan.dst);
    let (rows, cols) = plan
        .dst
        .logical_shape_exprs()
        .map(|(r, c)| (c_expr(&r), c_expr(&c)))
        .unwrap_or_else(|| (plan.rows.to_string(), plan.cols.to_string()));
    let (row_of_item, col_of_item) = item_coordinates(plan);
    let edge_path = EdgePathSource {
        vector_type,
        row_of_item: row_of_item.clone(),
        col_of_item: col_of_item.clone(),
        load: src.guarded_load(plan.vector, vector_type, "staged[step]"),
        store: dst.guarded_store(plan.vector, vector_type, "staged[step]"),
    }
    .render()
    .map_err(template_error("tile_copy_2d_edge.cu"))?;
    let fast_path = FastPathSource {
        vector_type,
        row_of_item,
        col_of_item,
        load: src.load(plan.vector, vector_type),
        store: dst.store(plan.vector, vector_type, "staged[step]"),
    }
    .render()
    .map_err(template_error("tile_copy_2d_fast.cu"))?;
    let mut origins = src.origin_declarations();
    origins.extend(dst.origin_declarations());
    let whole: Vec<String> = [src.whole_tile(), dst.whole_tile()].into_iter().flatten().collect();
    let guarded = !whole.is_empty();
    TileCopy2dSource {
        dsl: copy.to_string(),
        steps: plan.steps,
        vector_type,
        column_major: plan.order == ItemOrder::ColumnMajor,
        rows,
        cols,
        origins,
        whole_tile: guarded.then(|| whole.join(" && ")),
        fast_path: indent(&fast_path, if guarded { 2 } else { 1 }),
        edge_path: indent(&edge_path, 2),
    }
    .render()
    .map_err(template_error("tile_copy_2d.cu"))
}

/// The C expressions of an item's (row, col) in the destination tile.
pub(crate) fn item_coordinates(plan: &CopyPlan) -> (String, String) {
    let (row, col) = match (plan.order, plan.vector) {
        (ItemOrder::RowMajor, 1) => ("item / COLS", "item % COLS"),
        (ItemOrder::RowMajor, _) => ("item / (COLS / VECTOR)", "item % (COLS / VECTOR) * VECTOR"),
        (ItemOrder::ColumnMajor, 1) => ("item % ROWS", "item / ROWS"),
        (ItemOrder::ColumnMajor, _) => ("item % ROWS", "item / ROWS * VECTOR"),
    };
    (row.to_string(), col.to_string())
}

pub(crate) fn indent(text: &str, depth: usize) -> String {
    let pad = "    ".repeat(depth);
    text.lines()
        .map(|line| if line.is_empty() { String::new() } else { format!("{pad}{line}") })
        .collect::<Vec<_>>()
        .join("\n")
}
