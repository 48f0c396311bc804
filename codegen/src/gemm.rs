//! Register fragments, `mma`, epilogues and pipelined k-loops: the GEMM half of codegen.

use askama::Template;
use tessera_dsl::{
    BinaryOp, CopyPlan, EpiloguePlan, Expr, Fragment, FragmentLayout, Kernel, Mma, MmaPlan, Operand, OperandPlan,
    PipelineLoop, Statement, TileCopy, TypeEnv, VectorWidth,
};

use crate::async_copy::MappedCopy;
use crate::operand::{plus, zero, OperandText};
use crate::statement::{
    declared_fragment, first_non_constant, indent, invalid, invalid_plan, item_coordinates, operand_kind,
    render_scoped, template_error,
};
use crate::{c_expr, RenderError};

#[derive(Template)]
#[template(path = "fragment.cu", escape = "none")]
struct FragmentSource<'a> {
    dsl: String,
    warp_layout: Option<(i64, i64)>,
    down: i64,
    across: i64,
    holds: String,
    cols: String,
    thread_rows: String,
    thread_cols: String,
    element: &'static str,
    name: &'a str,
    /// Whether `thread_row` and `thread_col` are declared here: by the kernel's first
    /// thread-tile fragment only (the others share its thread grid).
    declares_coordinates: bool,
}

#[derive(Template)]
#[template(path = "mma.cu", escape = "none")]
struct MmaSource {
    dsl: String,
    /// `.overwrite()`: the thread's tile zeroed before the first step (`mma_overwrite.cu`).
    overwrite: bool,
    k_name: String,
    unroll: Option<u32>,
    thread_rows: String,
    thread_cols: String,
    element: &'static str,
    loads: Vec<String>,
    acc: String,
}

#[derive(Template)]
#[template(path = "mma_double_buffered.cu", escape = "none")]
struct DoubleBufferedMmaSource {
    dsl: String,
    /// `.overwrite()`: the thread's tile zeroed before the first step (`mma_overwrite.cu`).
    overwrite: bool,
    k_name: String,
    unroll: Option<u32>,
    each_trip: Vec<String>,
    thread_rows: String,
    thread_cols: String,
    element: &'static str,
    first_loads: Vec<String>,
    next_loads: Vec<String>,
    acc: String,
}

#[derive(Template)]
#[template(path = "epilogue.cu", escape = "none")]
struct EpilogueSource {
    dsl: String,
    element_map: Option<String>,
    thread_rows: String,
    thread_cols: String,
    origins: Vec<(String, String)>,
    whole_tile: String,
    row_of_value: String,
    col_of_value: String,
    fast: Vec<String>,
    edge: Vec<String>,
}

#[derive(Template)]
#[template(path = "pipeline_single.cu", escape = "none")]
struct SinglePipelineSource {
    dsl: String,
    var: String,
    count: String,
    body: Vec<String>,
}

#[derive(Template)]
#[template(path = "pipeline_double.cu", escape = "none")]
struct DoublePipelineSource {
    dsl: String,
    var: String,
    count: String,
    staging: Vec<String>,
    prologue: Vec<String>,
    fetch_next: Vec<String>,
    compute: Vec<String>,
    stash_next: Vec<String>,
}

#[derive(Template)]
#[template(path = "pipeline_async.cu", escape = "none")]
struct AsyncPipelineSource {
    dsl: String,
    var: String,
    count: String,
    stages: u32,
    ahead: u32,
    /// The first k-tile when the loop runs over a range (stream-K), else 0.
    first: Option<String>,
    declarations: Vec<String>,
    spread: bool,
    /// Whether wgmma reads the tiles (through the async proxy): each thread's copies are then
    /// fenced for it before the barrier.
    proxy_fence: bool,
    /// wgmma groups still running when a k-tile's compute ends (0 or 1).
    in_flight: u32,
    prologue: Vec<String>,
    refill: Vec<String>,
    compute: Vec<String>,
    drain: Vec<String>,
}

#[derive(Template)]
#[template(path = "async_copy.cu", escape = "none")]
struct AsyncCopySource {
    dsl: String,
    what: String,
    buffer: String,
    bytes: i64,
    rows: String,
    cols: String,
    origins: Vec<(String, String)>,
    whole_tile: String,
    row_of_item: String,
    col_of_item: String,
    whole: Vec<String>,
    edge: Vec<String>,
}

#[derive(Template)]
#[template(path = "fetch.cu", escape = "none")]
struct FetchSource {
    dsl: String,
    what: String,
    rows: String,
    cols: String,
    origins: Vec<(String, String)>,
    whole_tile: String,
    row_of_item: String,
    col_of_item: String,
    staged: String,
    /// A staged value of zeros: `{}`, or `__nv_bfloat16(0.0f)` for one 16-bit value (whose
    /// assignment from `{}` is ambiguous).
    zero: String,
    load: String,
    guarded_load: Vec<String>,
}

#[derive(Template)]
#[template(path = "stash.cu", escape = "none")]
struct StashSource {
    dsl: String,
    buffer: String,
    stage: String,
    rows: String,
    cols: String,
    row_of_item: String,
    col_of_item: String,
    store: Vec<String>,
}

/// The names a fragment's sizes are written with: (BM, BN, TM, TN).
struct FragmentNames {
    rows: String,
    cols: String,
    thread_rows: String,
    thread_cols: String,
}

impl FragmentNames {
    fn of(fragment: &Fragment) -> Self {
        Self {
            rows: c_expr(&fragment.shape[0]),
            cols: c_expr(&fragment.shape[1]),
            thread_rows: c_expr(&fragment.thread_tile[0]),
            thread_cols: c_expr(&fragment.thread_tile[1]),
        }
    }
}

/// The C expression of the block-tile row (or column) of a thread's value `index`:
/// `thread_row * TM + 3`, or with a split, `BM / 2 + thread_row * (TM / 2) + 1`.
fn coordinate(
    index: &str,
    position: &str,
    block: &str,
    tile: &str,
    split: i64,
    sub: i64,
    literal: Option<i64>,
) -> String {
    if split == 1 {
        return match literal {
            Some(0) => format!("{position} * {tile}"),
            Some(i) => format!("{position} * {tile} + {i}"),
            None => format!("{position} * {tile} + {index}"),
        };
    }
    let per_thread = format!("{position} * ({tile} / {split})");
    match literal {
        Some(i) => {
            let (part, offset) = (i / sub, i % sub);
            let mut terms = Vec::new();
            match part {
                0 => {}
                1 => terms.push(format!("{block} / {split}")),
                p => terms.push(format!("{p} * ({block} / {split})")),
            }
            terms.push(per_thread);
            if offset > 0 {
                terms.push(offset.to_string());
            }
            terms.join(" + ")
        }
        None => {
            format!("{index} / ({tile} / {split}) * ({block} / {split}) + {per_thread} + {index} % ({tile} / {split})")
        }
    }
}

pub(crate) fn fragment_source(kernel: &Kernel, fragment: &Fragment) -> Result<String, RenderError> {
    let layout = FragmentLayout::of(fragment, kernel).ok_or_else(|| {
        let tiles = [&fragment.warp_tile, &fragment.warpgroup_tile].into_iter().flatten().flatten();
        let exprs = fragment.shape.iter().chain(&fragment.thread_tile).chain(tiles);
        let message = match first_non_constant(kernel, exprs) {
            Some(why) => format!("fragment `{}`'s layout `{fragment}` does not evaluate: {why}", fragment.name),
            None => {
                let wanted = "a 2-D shape with a 2-D thread tile, warp tile or warpgroup tile";
                format!("fragment `{}`'s layout `{fragment}` is not {wanted}", fragment.name)
            }
        };
        invalid(kernel, fragment.origin, &message)
    })?;
    if layout.warp_tile.is_some() {
        return crate::tensor_core::fragment_source(kernel, fragment, &layout);
    }
    let names = FragmentNames::of(fragment);
    // thread_row and thread_col name one grid of thread tiles per kernel (validation makes
    // every thread-tile fragment share it): the first such fragment declares them
    let declares_coordinates = kernel.thread_grid_fragment().is_some_and(|first| first.name == fragment.name);
    let holds = if layout.split == [1, 1] {
        format!("one {} × {} tile", layout.thread_rows, layout.thread_cols)
    } else {
        format!(
            "{} × {} sub-tiles of {} × {}, {} / {} and {} / {} apart",
            layout.split[0],
            layout.split[1],
            layout.sub_rows(),
            layout.sub_cols(),
            names.rows,
            layout.split[0],
            names.cols,
            layout.split[1]
        )
    };
    FragmentSource {
        dsl: format!("let mut {} = {};", fragment.name, fragment),
        warp_layout: layout.warp_layout.map(|[r, c]| (r, c)),
        down: layout.threads_down(),
        across: layout.threads_across(),
        holds,
        cols: names.cols,
        thread_rows: names.thread_rows,
        thread_cols: names.thread_cols,
        element: fragment.element.cuda_name(),
        name: &fragment.name,
        declares_coordinates,
    }
    .render()
    .map_err(template_error("fragment.cu"))
}

/// `mma` on shared (or, for the naive kernel, global) operands; `stage` picks the half of
/// double-buffered shared memory.
pub(crate) fn mma_source(kernel: &Kernel, mma: &Mma, stage: Option<&str>) -> Result<String, RenderError> {
    mma_source_with(kernel, mma, stage, Vec::new(), 0)
}

/// `mma` with `each_trip` issued at the start of every trip of its k loop (`.unroll(n)` with
/// double-buffered fragments): a pipeline's refill copies, spread over the trips. A wgmma
/// leaves `in_flight` commit groups running when it is done (its pipeline frees their stages
/// later and waits for them after the loop).
pub(crate) fn mma_source_with(
    kernel: &Kernel,
    mma: &Mma,
    stage: Option<&str>,
    each_trip: Vec<String>,
    in_flight: u32,
) -> Result<String, RenderError> {
    if let Some(tensor_core) = crate::tensor_core::mma_if_tensor_core(kernel, mma, stage, in_flight) {
        return tensor_core;
    }
    let plan = MmaPlan::new(kernel, mma, &kernel.constant_scope()).map_err(invalid_plan(kernel))?;
    let fragment = declared_fragment(kernel, &mma.acc, mma.origin)?;
    let names = FragmentNames::of(fragment);
    let layout = plan.layout;
    let element = layout.element;
    let vector_of =
        |width: i64| element.vector_type(VectorWidth::new(width as u32).unwrap_or(VectorWidth::W1)).unwrap_or("float");
    let a = OperandText::new(&plan.a).in_stage(kernel, stage);
    let b = OperandText::new(&plan.b).in_stage(kernel, stage);
    // The loads of step `kk` (a C expression) into `a_target` / `b_target`.
    let loads_at = |kk: &str, a_target: &str, b_target: &str| -> Vec<String> {
        let mut loads = Vec::new();
        for load in plan.a_loads() {
            let row = coordinate(
                "i",
                "thread_row",
                &names.rows,
                &names.thread_rows,
                layout.split[0],
                layout.sub_rows(),
                Some(load.first),
            );
            loads.push(fragment_load(a_target, load.first, load.width, &a, &row, kk, vector_of(load.width), element));
        }
        for load in plan.b_loads() {
            let col = coordinate(
                "j",
                "thread_col",
                &names.cols,
                &names.thread_cols,
                layout.split[1],
                layout.sub_cols(),
                Some(load.first),
            );
            loads.push(fragment_load(b_target, load.first, load.width, &b, kk, &col, vector_of(load.width), element));
        }
        loads
    };
    let k_name = k_extent_name(kernel, mma, &plan);
    let mut global_origins = a.origin_declarations();
    global_origins.extend(b.origin_declarations());
    // `.unroll(n)` with n = the whole extent is the plain unrolled loop
    let unroll = mma.unroll.filter(|steps| i64::from(*steps) < plan.k);
    let next = if unroll.is_some() { "(step + 1) % 2" } else { "(kk + 1) % 2" };
    let source = if mma.double_buffered_fragments {
        DoubleBufferedMmaSource {
            dsl: mma.to_string(),
            overwrite: mma.overwrite,
            k_name,
            unroll,
            each_trip,
            thread_rows: names.thread_rows.clone(),
            thread_cols: names.thread_cols.clone(),
            element: element.cuda_name(),
            first_loads: loads_at("0", "a_frag[0]", "b_frag[0]"),
            next_loads: loads_at("kk + 1", &format!("a_frag[{next}]"), &format!("b_frag[{next}]")),
            acc: mma.acc.clone(),
        }
        .render()
        .map_err(template_error("mma_double_buffered.cu"))?
    } else {
        MmaSource {
            dsl: mma.to_string(),
            overwrite: mma.overwrite,
            k_name,
            unroll,
            thread_rows: names.thread_rows.clone(),
            thread_cols: names.thread_cols.clone(),
            element: element.cuda_name(),
            loads: loads_at("kk", "a_frag", "b_frag"),
            acc: mma.acc.clone(),
        }
        .render()
        .map_err(template_error("mma.cu"))?
    };
    Ok(with_tile_origins(source, &global_origins))
}

/// The k extent of `mma` as the source names it (`BK`), else its value.
pub(crate) fn k_extent_name(kernel: &Kernel, mma: &Mma, plan: &MmaPlan) -> String {
    match &mma.b {
        Operand::Shared(view) => kernel
            .shared(&view.buffer)
            .map(|buffer| c_expr(&buffer.shape[usize::from(view.transposed)]))
            .unwrap_or_else(|| plan.k.to_string()),
        Operand::Global(tile) if !tile.transposed => c_expr(&tile.extent[0]),
        _ => plan.k.to_string(),
    }
}

/// `source` in a block that first names the tile origins of global operands (the kernels that
/// multiply straight from global memory), or as it is when there are none.
pub(crate) fn with_tile_origins(source: String, origins: &[(String, String)]) -> String {
    if origins.is_empty() {
        return source;
    }
    let declarations: Vec<String> =
        origins.iter().map(|(name, value)| format!("    const int {name} = {value};")).collect();
    format!("{{\n{}\n{}\n}}", declarations.join("\n"), indent(&source, 1))
}

#[allow(clippy::too_many_arguments)]
fn fragment_load(
    target: &str,
    first: i64,
    width: i64,
    operand: &OperandText<'_>,
    row: &str,
    col: &str,
    vector_type: &str,
    element: tessera_dsl::ElementType,
) -> String {
    let source = operand.element_at(row, col);
    if width > 1 {
        return format!("*reinterpret_cast<{vector_type}*>(&{target}[{first}]) = *reinterpret_cast<const {vector_type}*>(&{source});");
    }
    match operand.in_bounds_at(row, col) {
        Some(guard) => format!("{target}[{first}] = {guard} ? {source} : {};", zero(element)),
        None => format!("{target}[{first}] = {source};"),
    }
}

/// The C++ lambda of an epilogue's `.map(|v, row, col| ..)`, declared once before the
/// stores and called with each value and its place in the destination (then inlined).
pub(crate) fn element_map_source(kernel: &Kernel, plan: &EpiloguePlan) -> Result<Option<String>, RenderError> {
    element_map_lambda(kernel, plan, "element_map", &[])
}

/// The name the lambda of [`element_map_in_place_source`] gives the value of `tensor` at the
/// value's own place.
fn in_place_name(tensor: &str) -> String {
    format!("{tensor}_here")
}

/// `element_map_here`: the lambda of the map with its reads of `tensors` at each value's own
/// place ([`tessera_dsl::ElementMap::reads_in_place`]) taken as parameters after (v, row,
/// col), named by [`in_place_name`] — for an epilogue that loaded them beforehand.
pub(crate) fn element_map_in_place_source(
    kernel: &Kernel,
    plan: &EpiloguePlan,
    tensors: &[String],
) -> Result<Option<String>, RenderError> {
    element_map_lambda(kernel, plan, "element_map_here", tensors)
}

fn element_map_lambda(
    kernel: &Kernel,
    plan: &EpiloguePlan,
    name: &str,
    in_place: &[String],
) -> Result<Option<String>, RenderError> {
    let Some(map) = &plan.map else { return Ok(None) };
    let element = plan.layout.element;
    let mut env = tessera_dsl::element_map_env(kernel, map, element);
    let mut extra = Vec::new();
    for tensor in in_place {
        let Some(read) = kernel.param(tensor).and_then(|p| p.tensor()).map(|t| t.element) else { continue };
        env.bind_value(&in_place_name(tensor), tessera_dsl::ThreadType::Scalar(read), false);
        extra.push(format!(", const {} {}", read.cuda_name(), in_place_name(tensor)));
    }
    let body = if in_place.is_empty() {
        map.body.clone()
    } else {
        map.body_with_reads_in_place_named(in_place, in_place_name)
    };
    let body =
        crate::thread_code::expression_source(kernel, &body, &env, Some(tessera_dsl::ThreadType::Scalar(element)))?;
    let c_type = element.cuda_name();
    // `_` in the closure: an unnamed parameter
    let parameter = |c_type: &str, name: &str| {
        if name == "_" {
            format!("const {c_type}")
        } else {
            format!("const {c_type} {name}")
        }
    };
    let what = if in_place.is_empty() {
        format!("{map}: each value and its (row, col) in {}", plan.dst.tensor)
    } else {
        format!("{map}, the values of {} at (row, col) loaded beforehand", in_place.join(", "))
    };
    Ok(Some(format!(
        "// {what}\n\
         const auto {name} = [&]({}, {}, {}{}) -> {c_type} {{ return {body}; }};",
        parameter(c_type, &map.value),
        parameter("int", &map.row),
        parameter("int", &map.col),
        extra.concat()
    )))
}

/// The call of the epilogue's `.map(..)` on `value`, stored at column `col + offset` of the
/// thread's row of the destination tile.
pub(crate) fn element_map_call(plan: &EpiloguePlan, value: &str, offset: i64) -> String {
    let tensor = &plan.dst.tensor;
    format!("element_map({value}, {tensor}_row0 + row, {})", plus(&format!("{tensor}_col0 + col"), offset))
}

/// `copy(&acc, c.tile(..))`, optionally `.map(..)` and `.axpby(alpha, beta)`.
pub(crate) fn epilogue_source(kernel: &Kernel, copy: &TileCopy) -> Result<String, RenderError> {
    let plan = EpiloguePlan::new(kernel, copy, &kernel.constant_scope()).map_err(invalid_plan(kernel))?;
    if plan.layout.warp_tile.is_some() {
        return crate::tensor_core::epilogue_source(kernel, copy, &plan);
    }
    let fragment = declared_fragment(kernel, &plan.fragment, copy.origin)?;
    let names = FragmentNames::of(fragment);
    let layout = plan.layout;
    let element = layout.element;
    let width = plan.vector;
    let vector_type = element.vector_type(VectorWidth::new(width as u32).unwrap_or(VectorWidth::W1)).unwrap_or("float");
    let dst_plan = OperandPlan::Global(plan.dst.clone());
    let dst = OperandText::new(&dst_plan);
    let acc = &plan.fragment;
    let element_map = element_map_source(kernel, &plan)?;
    let value_of = |v: i64| {
        let value = if v == 0 { format!("{acc}[i][j]") } else { format!("{acc}[i][j + {v}]") };
        match &element_map {
            Some(_) => element_map_call(&plan, &value, v),
            None => value,
        }
    };
    let component = |v: i64| if width == 1 { String::new() } else { crate::operand::component(vector_type, v) };
    let mut fast = Vec::new();
    if width == 1 {
        fast.push(format!("{} value = {};", element.cuda_name(), value_of(0)));
    } else {
        let parts: Vec<String> = (0..width).map(value_of).collect();
        fast.push(format!("{vector_type} value = make_{vector_type}({});", parts.join(", ")));
    }
    let mut edge = Vec::new();
    match &plan.axpby {
        Some((alpha, beta)) => {
            let zero = zero(element);
            let scaled: Vec<String> =
                (0..width).map(|v| format!("value{0} = {alpha} * value{0};", component(v))).collect();
            let blended: Vec<String> =
                (0..width).map(|v| format!("value{0} = {alpha} * value{0} + {beta} * old{0};", component(v))).collect();
            fast.push(format!("if ({beta} == {zero}) {{"));
            fast.extend(scaled.iter().map(|l| format!("    {l}")));
            fast.push("} else {".into());
            fast.push(format!(
                "    const {} old = {};",
                if width == 1 { element.cuda_name() } else { vector_type },
                dst.load(width, vector_type)
            ));
            fast.extend(blended.iter().map(|l| format!("    {l}")));
            fast.push("}".into());
            for v in 0..width {
                let target = dst.element(v);
                edge.push(format!(
                    "if ({}) {target} = {beta} == {zero} ? {alpha} * {} : {alpha} * {} + {beta} * {target};",
                    dst.in_bounds(v).unwrap_or_default(),
                    value_of(v),
                    value_of(v)
                ));
            }
        }
        None => {
            for v in 0..width {
                edge.push(format!(
                    "if ({}) {} = {};",
                    dst.in_bounds(v).unwrap_or_default(),
                    dst.element(v),
                    value_of(v)
                ));
            }
        }
    }
    fast.extend(dst.store(width, vector_type, "value"));
    EpilogueSource {
        dsl: copy.to_string(),
        element_map,
        thread_rows: names.thread_rows.clone(),
        thread_cols: names.thread_cols.clone(),
        origins: dst.origin_declarations(),
        whole_tile: dst.whole_tile().unwrap_or_else(|| "true".into()),
        row_of_value: coordinate(
            "i",
            "thread_row",
            &names.rows,
            &names.thread_rows,
            layout.split[0],
            layout.sub_rows(),
            None,
        ),
        col_of_value: coordinate(
            "j",
            "thread_col",
            &names.cols,
            &names.thread_cols,
            layout.split[1],
            layout.sub_cols(),
            None,
        ),
        fast,
        edge,
    }
    .render()
    .map_err(template_error("epilogue.cu"))
}

/// `for k in pipeline(..) { .. }`; `env` holds the names its thread code sees (the locals
/// declared before the loop among them).
pub(crate) fn pipeline_source(kernel: &Kernel, pipeline: &PipelineLoop, env: &TypeEnv) -> Result<String, RenderError> {
    pipeline_range_source(kernel, pipeline, None, env)
}

/// The pipeline over k-tiles `range` = (first, end) instead of 0 .. count (a stream-K unit;
/// cp.async pipelines only).
pub(crate) fn pipeline_range_source(
    kernel: &Kernel,
    pipeline: &PipelineLoop,
    range: Option<(&str, &str)>,
    env: &TypeEnv,
) -> Result<String, RenderError> {
    let producers = pipeline.producers.map(|p| format!(", producers = {p}")).unwrap_or_default();
    let dsl =
        format!("for {} in pipeline(0..{}, stages = {}{producers})", pipeline.var, pipeline.count, pipeline.stages);
    if let Some(range) = range {
        if pipeline.stages < 3 {
            let message = format!(
                "only a cp.async pipeline (stages = 3 or more) runs over a range of k-tiles; this one has stages = {}",
                pipeline.stages
            );
            return Err(invalid(kernel, pipeline.origin, &message));
        }
        return async_pipeline_source(kernel, pipeline, dsl, Some(range), env);
    }
    if pipeline.stages < 2 {
        return SinglePipelineSource {
            dsl,
            var: pipeline.var.clone(),
            count: c_expr(&pipeline.count),
            body: render_scoped(kernel, &pipeline.body, 1, &mut env.clone())?,
        }
        .render()
        .map_err(template_error("pipeline_single.cu"));
    }
    if pipeline.stages > 2 {
        return async_pipeline_source(kernel, pipeline, dsl, None, env);
    }
    let scope = kernel.constant_scope();
    // the body's thread code sees the names declared before the loop and its own locals
    let mut scoped = env.clone();
    let (mut staging, mut prologue, mut fetch_next, mut compute, mut stash_next) =
        (vec![], vec![], vec![], vec![], vec![]);
    for statement in &pipeline.body {
        match statement {
            Statement::Copy(copy) => {
                let plan = CopyPlan::new(kernel, copy, &scope).map_err(invalid_plan(kernel))?;
                let OperandPlan::Shared(shared) = &plan.dst else {
                    let (src, dst) = (operand_kind(&copy.src), operand_kind(&copy.dst));
                    let wanted = "global tiles into shared buffers";
                    let message =
                        format!("a double-buffered pipeline copies {wanted}; `{copy}` copies {src} into {dst}");
                    return Err(invalid(kernel, copy.origin, &message));
                };
                let width = VectorWidth::new(plan.vector as u32).unwrap_or(VectorWidth::W1);
                let vector_type = plan.element.vector_type(width).unwrap_or("float");
                let staged = format!("{}_staged", shared.buffer);
                staging.push(format!(
                    "{vector_type} {staged}[{}];  // {}'s next tile, in flight",
                    plan.steps, shared.buffer
                ));
                prologue.push(indent(&fetch_source(copy, &plan, &staged, vector_type, None)?, 2));
                prologue.push(indent(&stash_source(copy, &plan, &staged, vector_type, "stage")?, 2));
                let (ahead, ahead_plan) = copy_ahead(kernel, copy, &pipeline.var, 1)?;
                fetch_next
                    .push(indent(&fetch_source(&ahead, &ahead_plan, &staged, vector_type, Some(&pipeline.var))?, 3));
                stash_next.push(indent(&stash_source(copy, &plan, &staged, vector_type, "stage ^ 1")?, 3));
            }
            Statement::Mma(mma) => compute.push(indent(&mma_source(kernel, mma, Some("stage"))?, 2)),
            Statement::Thread(_) => {
                compute.extend(render_scoped(kernel, std::slice::from_ref(statement), 2, &mut scoped)?)
            }
            other => {
                return Err(invalid(
                    kernel,
                    pipeline.origin,
                    &format!("a double-buffered pipeline holds copies, mma and thread code, not {other:?}"),
                ));
            }
        }
    }
    DoublePipelineSource {
        dsl,
        var: pipeline.var.clone(),
        count: c_expr(&pipeline.count),
        staging,
        prologue,
        fetch_next,
        compute,
        stash_next,
    }
    .render()
    .map_err(template_error("pipeline_double.cu"))
}

/// `copy` of the tile `distance` iterations of `var` later (`k + 1`, `k + 2`), and its plan.
fn copy_ahead(kernel: &Kernel, copy: &TileCopy, var: &str, distance: u32) -> Result<(TileCopy, CopyPlan), RenderError> {
    let later = Expr::binary(BinaryOp::Add, Expr::name(var.to_string()), Expr::int(i64::from(distance)));
    let mut ahead = copy.clone();
    if let Operand::Global(tile) = &mut ahead.src {
        tile.index = tile.index.iter().map(|e| e.substitute(var, &later)).collect();
        tile.at = tile.at.iter().map(|e| e.substitute(var, &later)).collect();
    }
    let plan = CopyPlan::new(kernel, &ahead, &kernel.constant_scope()).map_err(invalid_plan(kernel))?;
    Ok((ahead, plan))
}

/// `stages ≥ 3`: every copy of the body becomes cp.async copies into a ring of `stages`
/// shared tiles, `stages − 1` of them in flight while the oldest is computed.
/// The pieces of a cp.async pipeline's source: the copies' per-thread declarations, each copy
/// of tile `var` into `stage` (the prologue's), the refill of `stage_ahead` (whole, or its
/// set-up when it goes out in parts), and the mma blocks (with those parts in their trips).
pub(crate) struct AsyncPipelineParts {
    pub(crate) declarations: Vec<String>,
    pub(crate) prologue: Vec<String>,
    pub(crate) refill: Vec<String>,
    pub(crate) compute: Vec<String>,
    /// Whether the refill goes out in one part per trip of the mma's k loop.
    pub(crate) spread: bool,
    /// wgmma commit groups each k-tile's compute leaves running (1 with wgmma: the tensor
    /// cores start on tile k + 1 while tile k's multiply finishes), whose stages are freed a
    /// tile later — so the copies run `stages − 1 − in_flight` tiles ahead.
    pub(crate) in_flight: u32,
    /// What ends the loop: waiting for those groups, before anything reads the accumulators.
    pub(crate) drain: Vec<String>,
    /// What the compute threads declare before the loop (a `.deferred()` product's A
    /// registers, which outlive a k-tile).
    pub(crate) loop_declarations: Vec<String>,
}

fn async_pipeline_source(
    kernel: &Kernel,
    pipeline: &PipelineLoop,
    dsl: String,
    range: Option<(&str, &str)>,
    env: &TypeEnv,
) -> Result<String, RenderError> {
    let AsyncPipelineParts { mut declarations, loop_declarations, prologue, refill, compute, spread, in_flight, drain } =
        async_pipeline_parts(kernel, pipeline, env)?;
    if let Some(deferred) = tessera_dsl::DeferredMma::of(pipeline) {
        // validation refuses `.deferred()` without producers: this ring refills its stage
        let message = format!(
            "only a pipeline with producers defers a product; `{}` is deferred in one without (stages = {})",
            deferred.deferred, pipeline.stages
        );
        return Err(invalid(kernel, pipeline.origin, &message));
    }
    // (the registers a product keeps from one k-tile to the next live beside the ring's state)
    declarations.extend(loop_declarations);
    AsyncPipelineSource {
        dsl,
        var: pipeline.var.clone(),
        count: range.map_or_else(|| c_expr(&pipeline.count), |(_, end)| end.to_string()),
        stages: pipeline.stages,
        ahead: pipeline.stages - 1 - in_flight,
        first: range.map(|(first, _)| first.to_string()),
        declarations,
        spread,
        proxy_fence: crate::tensor_core::uses_wgmma(kernel),
        in_flight,
        prologue,
        refill,
        compute,
        drain,
    }
    .render()
    .map_err(template_error("pipeline_async.cu"))
}

/// [`AsyncPipelineParts`] of `pipeline` (stages ≥ 3). Its compute is the body's `mma`s and
/// thread code in source order (thread code sees `env` and the locals declared before it).
pub(crate) fn async_pipeline_parts(
    kernel: &Kernel,
    pipeline: &PipelineLoop,
    env: &TypeEnv,
) -> Result<AsyncPipelineParts, RenderError> {
    let scope = kernel.constant_scope();
    let in_flight = kernel.wgmma_groups_in_flight(pipeline);
    let ahead = pipeline.stages - 1 - in_flight;
    let var = &pipeline.var;
    let mut copies = Vec::new();
    let mut mmas = Vec::new();
    // what computes a tile, in source order: each mma (rendered below, once the refill's
    // parts are known) or thread code
    let mut computed = Vec::new();
    for statement in &pipeline.body {
        match statement {
            Statement::Copy(copy) => {
                let plan = CopyPlan::new(kernel, copy, &scope).map_err(invalid_plan(kernel))?;
                if !matches!((&plan.src, &plan.dst), (OperandPlan::Global(_), OperandPlan::Shared(_))) {
                    let message = format!(
                        "a cp.async pipeline copies global tiles into shared buffers; `{copy}` copies {} into {}",
                        operand_kind(&copy.src),
                        operand_kind(&copy.dst)
                    );
                    return Err(invalid(kernel, copy.origin, &message));
                }
                let (ahead_copy, ahead_plan) = copy_ahead(kernel, copy, var, ahead)?;
                copies.push((copy, plan, ahead_copy, ahead_plan));
            }
            Statement::Mma(mma) => {
                mmas.push(mma);
                computed.push(statement);
            }
            Statement::Thread(_) => computed.push(statement),
            other => {
                return Err(invalid(
                    kernel,
                    pipeline.origin,
                    &format!("a cp.async pipeline holds copies, mma and thread code, not {other:?}"),
                ));
            }
        }
    }
    let mapped: Vec<Option<MappedCopy<'_>>> =
        copies.iter().map(|(copy, plan, ..)| MappedCopy::new(copy, plan)).collect();
    // the refill goes out in one part per trip of the mma's k loop when there is one such loop,
    // every copy has a layout that divides into that many parts, and each reads its own tensor
    let trips = match mmas.as_slice() {
        // producers copy whole tiles; the compute threads' loop carries no copies
        _ if pipeline.producers.is_some() => None,
        [mma] if mma.double_buffered_fragments => {
            let plan = MmaPlan::new(kernel, mma, &scope).map_err(invalid_plan(kernel))?;
            mma.unroll.map(i64::from).filter(|u| *u < plan.k).map(|u| plan.k / u)
        }
        _ => None,
    };
    let mut tensors: Vec<&str> = mapped.iter().flatten().map(MappedCopy::tensor).collect();
    tensors.sort_unstable();
    tensors.dedup();
    let trips = trips.filter(|t| {
        tensors.len() == copies.len() && mapped.iter().all(|m| m.as_ref().is_some_and(|m| m.mapping.splits_into(*t)))
    });
    let (mut declarations, mut prologue, mut refill, mut compute) = (vec![], vec![], vec![], vec![]);
    let scoped = |setup: String, part: String| format!("{{\n{}\n{}\n}}", indent(&setup, 1), indent(&part, 1));
    for (m, (copy, plan, ahead_copy, ahead_plan)) in mapped.iter().zip(&copies) {
        let what = format!("tile {var} + {ahead}");
        match m {
            Some(m) => {
                declarations.extend(m.first_element());
                prologue.push(indent(&scoped(m.setup(copy, plan, "the tile", "stage")?, m.part(None)?), 3));
                let setup = m.setup(ahead_copy, ahead_plan, &what, "stage_ahead")?;
                match trips {
                    Some(_) => {
                        refill.push(indent(&setup, 2));
                        refill.push(indent(&m.running().join("\n"), 2));
                    }
                    None => refill.push(indent(&scoped(setup, m.part(None)?), 3)),
                }
            }
            None => {
                prologue.push(indent(&async_copy_source(kernel, copy, plan, "the tile", Some("stage"))?, 3));
                refill.push(indent(&async_copy_source(kernel, ahead_copy, ahead_plan, &what, Some("stage_ahead"))?, 3));
            }
        }
    }
    let mut scoped = env.clone();
    if let Some(deferred) = &tessera_dsl::DeferredMma::of(pipeline) {
        let rendered = crate::deferred_mma::compute(kernel, pipeline, deferred, &mut scoped)?;
        // the previous k-tile's stage is freed at each tile's end, the last after the drain
        return Ok(AsyncPipelineParts {
            declarations,
            loop_declarations: rendered.declarations,
            prologue,
            refill,
            compute: rendered.compute,
            spread: false,
            in_flight: 1,
            drain: rendered.drain,
        });
    }
    for statement in computed {
        let mma = match statement {
            Statement::Mma(mma) => mma,
            _ => {
                compute.extend(render_scoped(kernel, std::slice::from_ref(statement), 2, &mut scoped)?);
                continue;
            }
        };
        let mut each_trip = Vec::new();
        if let (Some(t), Some(u)) = (trips, mma.unroll) {
            each_trip.push("if (refill) {".to_string());
            for m in mapped.iter().flatten() {
                let part = indent(&m.part(Some((&format!("k0 / {u}"), t)))?, 1);
                each_trip.extend(part.lines().map(str::to_owned));
            }
            each_trip.push("}".into());
        }
        compute.push(indent(&mma_source_with(kernel, mma, Some("stage"), each_trip, in_flight)?, 2));
    }
    let drain = match in_flight {
        0 => Vec::new(),
        _ => crate::tensor_core::wgmma_drain(kernel, mmas.iter().map(|mma| mma.acc.as_str())),
    };
    let loop_declarations = mmas
        .iter()
        .filter_map(|mma| crate::tensor_core::stepwise_register_a_declaration(kernel, mma))
        .flat_map(|declaration| declaration.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    Ok(AsyncPipelineParts {
        declarations,
        loop_declarations,
        prologue,
        refill,
        compute,
        spread: trips.is_some(),
        in_flight,
        drain,
    })
}

/// One global → shared tile copy as cp.async: a `width`-element copy per item where both
/// sides are contiguous and aligned for it, else one copy per element (a transposed buffer).
/// On edge tiles a copy reads only the elements inside the tensor (`valid` bytes) and
/// zero-fills the rest.
pub(crate) fn async_copy_source(
    kernel: &Kernel,
    copy: &TileCopy,
    plan: &CopyPlan,
    what: &str,
    stage: Option<&str>,
) -> Result<String, RenderError> {
    let src = OperandText::new(&plan.src);
    let dst = OperandText::new(&plan.dst).with_stage(stage.map(str::to_string));
    let element_bytes = i64::from(plan.element.size_bytes());
    let base = match &plan.src {
        OperandPlan::Global(tile) => tile.tensor.clone(),
        OperandPlan::Shared(_) | OperandPlan::Fragment(_) => {
            let message =
                format!("cp.async copies from global memory, not from {} `{}`", operand_kind(&copy.src), copy.src);
            return Err(invalid(kernel, copy.origin, &message));
        }
    };
    let width = plan.vector;
    let vector_copy = width > 1 && plan.src.vector_ok(width) && plan.dst.vector_ok(width);
    let (mut whole, mut edge) = (vec![], vec![]);
    let bytes = if vector_copy {
        let bytes = width * element_bytes;
        whole.push(format!("tessera_async_copy<{bytes}>(&{}, &{}, {bytes});", dst.element(0), src.element(0)));
        let valid: Vec<String> =
            (0..width).map(|v| format!("({} ? {element_bytes} : 0)", src.in_bounds(v).unwrap_or_default())).collect();
        edge.push("{".into());
        edge.push(format!("    const int valid = {};  // the elements inside the tensor: a prefix", valid.join(" + ")));
        edge.push(format!(
            "    tessera_async_copy<{bytes}>(&{}, valid > 0 ? &{} : {base}, valid);",
            dst.element(0),
            src.element(0)
        ));
        edge.push("}".into());
        bytes
    } else {
        for v in 0..width {
            whole.push(format!(
                "tessera_async_copy<{element_bytes}>(&{}, &{}, {element_bytes});",
                dst.element(v),
                src.element(v)
            ));
            edge.push("{".into());
            edge.push(format!("    const bool inside = {};", src.in_bounds(v).unwrap_or_default()));
            edge.push(format!(
                "    tessera_async_copy<{element_bytes}>(&{}, inside ? &{} : {base}, inside ? {element_bytes} : 0);",
                dst.element(v),
                src.element(v)
            ));
            edge.push("}".into());
        }
        element_bytes
    };
    let (rows, cols) = shape_names(plan);
    let (row_of_item, col_of_item) = item_coordinates(plan);
    AsyncCopySource {
        dsl: copy.to_string(),
        what: what.into(),
        buffer: match stage {
            Some(stage) => format!("{}[{stage}]", copy.dst.name()),
            None => copy.dst.name().to_string(),
        },
        bytes,
        rows,
        cols,
        origins: src.origin_declarations(),
        whole_tile: src.whole_tile().unwrap_or_else(|| "true".into()),
        row_of_item,
        col_of_item,
        whole,
        edge,
    }
    .render()
    .map_err(template_error("async_copy.cu"))
}

fn fetch_source(
    copy: &TileCopy,
    plan: &CopyPlan,
    staged: &str,
    vector_type: &str,
    ahead_of: Option<&str>,
) -> Result<String, RenderError> {
    let src = OperandText::new(&plan.src);
    let (rows, cols) = shape_names(plan);
    let (row_of_item, col_of_item) = item_coordinates(plan);
    FetchSource {
        dsl: copy.to_string(),
        what: ahead_of.map(|var| format!("tile {var} + 1")).unwrap_or_else(|| "the tile".into()),
        rows,
        cols,
        origins: src.origin_declarations(),
        whole_tile: src.whole_tile().unwrap_or_else(|| "true".into()),
        row_of_item,
        col_of_item,
        staged: staged.into(),
        zero: match plan.element.size_bytes() {
            2 if plan.vector == 1 => zero(plan.element).to_string(),
            _ => "{}".to_string(),
        },
        load: src.load(plan.vector, vector_type),
        guarded_load: src.guarded_load(plan.vector, vector_type, &format!("{staged}[step]")),
    }
    .render()
    .map_err(template_error("fetch.cu"))
}

fn stash_source(
    copy: &TileCopy,
    plan: &CopyPlan,
    staged: &str,
    vector_type: &str,
    stage: &str,
) -> Result<String, RenderError> {
    let dst = OperandText::new(&plan.dst).with_stage(Some(stage.to_string()));
    let (rows, cols) = shape_names(plan);
    let (row_of_item, col_of_item) = item_coordinates(plan);
    let buffer = copy.dst.name().to_string();
    StashSource {
        dsl: copy.to_string(),
        buffer,
        stage: stage.into(),
        rows,
        cols,
        row_of_item,
        col_of_item,
        store: dst.store(plan.vector, vector_type, &format!("{staged}[step]")),
    }
    .render()
    .map_err(template_error("stash.cu"))
}

fn shape_names(plan: &CopyPlan) -> (String, String) {
    plan.dst
        .logical_shape_exprs()
        .map(|(r, c)| (c_expr(&r), c_expr(&c)))
        .unwrap_or_else(|| (plan.rows.to_string(), plan.cols.to_string()))
}
