use askama::Template;
use tessera_dsl::{
    validate, with_barriers, Access, Config, Constant, Diagnostics, GridMapping, Kernel, MmaInstruction, ParamKind,
    SharedLayout, Statement,
};

use crate::c_expr;
use crate::statement::render_body;

/// Why a kernel could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("kernel `{kernel}` is invalid:\n{diagnostics}")]
    Invalid { kernel: String, diagnostics: Diagnostics },
    #[error("template `{template}` failed: {source}")]
    Template { template: &'static str, source: askama::Error },
}

#[derive(Template)]
#[template(path = "kernel.cu", escape = "none")]
struct KernelSource<'a> {
    name: &'a str,
    attribute: String,
    doc_lines: Vec<&'a str>,
    threads: u64,
    /// `threads` and a warp-specialised pipeline's producers: what a launch starts per block.
    launch_threads: u64,
    min_blocks: Option<u32>,
    /// `cluster = ..`: the blocks of a cluster along x, y, z (`__cluster_dims__`).
    cluster: Option<[u32; 3]>,
    /// Whether the thread code reduces across the cluster (`cluster_sum`, `cluster_max`,
    /// `cluster_softmax_scale`): their exchange's slots and mbarriers are declared in the kernel,
    /// where the simulator keeps them per block.
    cluster_slot: bool,
    /// The kernel waits for the grid before it (a programmatic dependent launch).
    waits_for_prior_grid: bool,
    vector: u32,
    vector_bits: u32,
    constants: &'a [Constant],
    /// `require(..)`, each as a C condition for a `static_assert`.
    requirements: Vec<String>,
    /// `require(..)`s on shapes, which the launch checks.
    launch_requirements: Vec<String>,
    params: Vec<String>,
    /// What the trailing `<param>_ld` parameters are (2-D tensors only).
    leading_dimension_note: Option<String>,
    thread_index: &'static str,
    /// Bytes of dynamic shared memory, when the buffers exceed the static limit.
    dynamic_shared: Option<i64>,
    /// The dynamic allocation's alignment: 1024 where a `.panels()` buffer lives in it.
    dynamic_align: i64,
    body: Vec<String>,
    /// Device functions the thread code calls (`warp_sum`, `.sum()`), defined before the kernel.
    helpers: Vec<String>,
}

/// Renders `kernel` to CUDA C after validating it against the limits every target shares.
///
/// ```
/// use tessera_dsl::*;
/// let tensor = |name: &str, access| Param {
///     name: name.into(), origin: Origin::default(),
///     kind: ParamKind::Global(GlobalTensor {
///         element: ElementType::F32, access, shape: vec![("N".into(), Origin::default())],
///     }),
/// };
/// let tile = |tensor: &str| Operand::Global(TileOperand {
///     tensor: tensor.into(), at: vec![], index: vec![Expr::name("bx")], extent: vec![Expr::name("TILE")],
///     transposed: false, origin: Origin::default(),
/// });
/// let kernel = Kernel {
///     name: "copy".into(), doc: None, origin: Origin::default(),
///     params: vec![tensor("x", Access::ReadOnly), tensor("y", Access::Writable)],
///     config: Config { vector: VectorWidth::W4, constants: vec![Constant::new("TILE", 1024)], ..Config::default() },
///     body: vec![
///         Statement::Grid(GridBinding {
///             vars: vec!["bx".into()],
///             extents: vec![Expr::ceil_div(Expr::name("N"), Expr::name("TILE"))],
///             stream_k: false, grouped: None, zigzag: false, dynamic: false,
///             origin: Origin::default(),
///         }),
///         Statement::Copy(TileCopy { src: tile("x"), dst: tile("y"), order: ItemOrder::RowMajor, axpby: None, map: None, by_tma: false, origin: Origin::default() }),
///     ],
/// };
/// let source = tessera_codegen::render(&kernel).unwrap();
/// assert!(source.contains("reinterpret_cast<const float4*>(x + tile_start)"));
/// ```
pub fn render(kernel: &Kernel) -> Result<String, RenderError> {
    validate(kernel, &kernel.target())
        .map_err(|diagnostics| RenderError::Invalid { kernel: kernel.name.clone(), diagnostics })?;
    // block reductions that can share a round through shared memory take one (the report counts
    // the same barriers)
    let kernel = &tessera_dsl::with_block_reduction_rounds(kernel);
    let launch_requirements = kernel.launch_requirements();
    // the widest element whose vector of VECTOR fits one access (bf16 operands of a kernel
    // with an f32 result: 8 × 16 bits)
    let element_bits = kernel
        .params
        .iter()
        .filter_map(|p| p.tensor())
        .filter(|t| t.element.vector_type(kernel.config.vector).is_some())
        .map(|t| t.element.size_bytes() * 8)
        .max()
        .unwrap_or(32);
    let source = KernelSource {
        name: &kernel.name,
        attribute: attribute_text(&kernel.config),
        doc_lines: kernel.doc.as_deref().map(|d| d.lines().collect()).unwrap_or_default(),
        threads: kernel.config.threads.count(),
        launch_threads: kernel.launch_threads(),
        // ptxas honours setmaxnreg's register budgets only under a minimum of one block per SM
        min_blocks: kernel.config.min_blocks.or((kernel.producer_threads() > 0).then_some(1)),
        cluster: kernel.launch_cluster(),
        cluster_slot: crate::thread_code::reduces_across_cluster(kernel),
        waits_for_prior_grid: kernel.waits_for_prior_grid(),
        vector: kernel.config.vector.get(),
        vector_bits: kernel.config.vector.get() * element_bits,
        constants: &kernel.config.constants,
        // a requirement on a shape is the launch's to check
        requirements: kernel
            .config
            .requirements
            .iter()
            .filter(|r| !launch_requirements.contains(r))
            .map(|r| format!("{} {} {}", c_expr(&r.lhs), r.relation.symbol(), c_expr(&r.rhs)))
            .collect(),
        launch_requirements: launch_requirements.iter().map(|r| r.to_string()).collect(),
        params: parameter_declarations(kernel),
        leading_dimension_note: leading_dimension_note(kernel),
        thread_index: thread_index(kernel),
        dynamic_shared: Some(kernel.shared_memory()).filter(|plan| plan.dynamic).map(|plan| plan.bytes),
        dynamic_align: kernel
            .shared_buffers()
            .into_iter()
            .filter_map(|buffer| SharedLayout::of(buffer, kernel))
            .map(|layout| layout.alignment())
            .max()
            .unwrap_or(tessera_dsl::SHARED_ALIGNMENT),
        body: match kernel.grid_mapping() {
            Some(GridMapping::StreamK { .. }) => crate::stream_k::body(kernel, &with_barriers(&kernel.body))?,
            Some(GridMapping::Persistent { .. }) => crate::warp_specialized::body(kernel, &kernel.body)?,
            _ => render_body(kernel, &with_barriers(&kernel.body), 1)?,
        },
        helpers: helpers(kernel)?,
    };
    source.render().map_err(|source| RenderError::Template { template: "kernel.cu", source })
}

/// The device functions defined before the kernel: the dependent launch's wait, cp.async for
/// pipelines of 3 or more stages, then those the thread code calls.
fn helpers(kernel: &Kernel) -> Result<Vec<String>, RenderError> {
    let async_copies = kernel.statements().iter().any(|s| matches!(s, Statement::Pipeline(p) if p.stages > 2));
    let mut helpers = Vec::new();
    if kernel.waits_for_prior_grid() {
        helpers.push(GRID_DEPENDENCY_HELPERS.trim_end());
    }
    if crate::tensor_core::uses_half(kernel) {
        helpers.push(HALF_TYPES.trim_end());
    }
    if kernel.statements().iter().any(|s| matches!(s, Statement::Shared(b) if b.swizzle_bytes.is_some())) {
        helpers.push(SWIZZLE_HELPERS.trim_end());
    }
    let tensor_core = crate::tensor_core::tensor_core_instructions(kernel);
    if !tensor_core.is_empty() {
        helpers.push(LDMATRIX_HELPERS.trim_end());
    }
    let wgmma = crate::tensor_core::wgmma_forms(kernel);
    if tensor_core
        .iter()
        .any(|instruction| matches!(instruction, MmaInstruction::MmaSync { .. }) && !instruction.is_tf32())
    {
        helpers.push(MMA_SYNC_HELPERS.trim_end());
    }
    if !wgmma.is_empty() {
        helpers.push(WGMMA_COMMON_HELPERS.trim_end());
    }
    if has_deferred_register_operand(kernel) {
        helpers.push(WGMMA_DEFERRED_HELPERS.trim_end());
    }
    if tensor_core
        .iter()
        .any(|instruction| matches!(instruction, MmaInstruction::MmaSync { .. }) && instruction.is_tf32())
    {
        helpers.push(MMA_SYNC_TF32_HELPERS.trim_end());
    }
    if async_copies {
        helpers.push(ASYNC_COPY_HELPERS.trim_end());
    }
    // a cluster reduction's exchange counts the pushes into each block on its mbarriers
    if kernel.producer_threads() > 0 || crate::thread_code::reduces_across_cluster(kernel) {
        helpers.push(MBARRIER_HELPERS.trim_end());
    }
    if kernel.copies_by_tma() {
        helpers.push(TMA_HELPERS.trim_end());
        if kernel.cluster_tiles().is_some() {
            helpers.push(TMA_MULTICAST_HELPERS.trim_end());
        }
    }
    if kernel.cluster_tiles().is_some() {
        helpers.push(CLUSTER_MBARRIER_HELPERS.trim_end());
    }
    if kernel.tma_store_copy().is_some() {
        helpers.push(TMA_STORE_HELPERS.trim_end());
    }
    if crate::tensor_core::uses_wide_stores(kernel) {
        helpers.push(WIDE_STORE_HELPERS.trim_end());
        if crate::tensor_core::uses_in_place_reads(kernel) {
            helpers.push(IN_PLACE_READ_HELPERS.trim_end());
        }
    }
    helpers.extend(crate::thread_code::helpers(kernel));
    let mut helpers: Vec<String> = helpers.into_iter().map(str::to_owned).collect();
    for (input, n, register_a, overwrite) in wgmma {
        helpers.push(crate::tensor_core::wgmma_helpers(input, n, register_a, overwrite)?);
    }
    Ok(helpers)
}

/// Whether a product of the kernel keeps A's registers fenced from one k-tile to the next: a
/// `.deferred()` one reading a register fragment, or one whose lanes load a TF32 A from shared
/// memory a k-step at a time.
fn has_deferred_register_operand(kernel: &Kernel) -> bool {
    kernel.statements().iter().any(|s| match s {
        tessera_dsl::Statement::Mma(mma) => {
            (mma.deferred && matches!(mma.a, tessera_dsl::Operand::Fragment(_)))
                || crate::tensor_core::stepwise_register_a_declaration(kernel, mma).is_some()
        }
        _ => false,
    })
}

const GRID_DEPENDENCY_HELPERS: &str = include_str!("../templates/grid_dependency_helpers.cu");
const SWIZZLE_HELPERS: &str = include_str!("../templates/swizzle_helpers.cu");
const HALF_TYPES: &str = include_str!("../templates/half_types.cu");
const LDMATRIX_HELPERS: &str = include_str!("../templates/ldmatrix_helpers.cu");
const MMA_SYNC_HELPERS: &str = include_str!("../templates/mma_sync_helpers.cu");
const WGMMA_COMMON_HELPERS: &str = include_str!("../templates/wgmma_common_helpers.cu");
const WGMMA_DEFERRED_HELPERS: &str = include_str!("../templates/wgmma_deferred_helpers.cu");
const MMA_SYNC_TF32_HELPERS: &str = include_str!("../templates/mma_sync_tf32_helpers.cu");
const ASYNC_COPY_HELPERS: &str = include_str!("../templates/async_copy_helpers.cu");
const MBARRIER_HELPERS: &str = include_str!("../templates/mbarrier_helpers.cu");
const TMA_HELPERS: &str = include_str!("../templates/tma_helpers.cu");
const TMA_MULTICAST_HELPERS: &str = include_str!("../templates/tma_multicast_helpers.cu");
const CLUSTER_MBARRIER_HELPERS: &str = include_str!("../templates/cluster_mbarrier_helpers.cu");
const TMA_STORE_HELPERS: &str = include_str!("../templates/tma_store_helpers.cu");
const WIDE_STORE_HELPERS: &str = include_str!("../templates/wide_store_helpers.cu");
const IN_PLACE_READ_HELPERS: &str = include_str!("../templates/in_place_read_helpers.cu");

/// The attribute as the user would write it: `threads = 256, vector = 4, consts(TILE = 1024)`.
///
/// ```
/// use tessera_dsl::{Config, Constant, VectorWidth};
/// let config = Config { vector: VectorWidth::W2, constants: vec![Constant::new("TILE", 512)], ..Config::default() };
/// assert_eq!(tessera_codegen::attribute_text(&config), "threads = 256, vector = 2, consts(TILE = 512)");
/// ```
pub fn attribute_text(config: &Config) -> String {
    let mut text = format!("threads = {}, vector = {}", config.threads, config.vector);
    if let Some(blocks) = config.min_blocks {
        text.push_str(&format!(", min_blocks = {blocks}"));
    }
    if let Some(cluster) = config.cluster_text() {
        text.push_str(&format!(", cluster = {cluster}"));
    }
    if let Some(target) = config.target {
        text.push_str(&format!(", target = sm_{target}{}", if config.arch_specific { "a" } else { "" }));
    }
    if config.precision != tessera_dsl::Precision::Exact {
        text.push_str(&format!(", precision = {}", config.precision));
    }
    for (keyword, fixed) in [("consts", false), ("fixed", true)] {
        let list: Vec<String> =
            config.constants.iter().filter(|c| c.fixed == fixed).map(|c| format!("{} = {}", c.name, c.value)).collect();
        if !list.is_empty() {
            text.push_str(&format!(", {keyword}({})", list.join(", ")));
        }
    }
    if !config.requirements.is_empty() {
        let list: Vec<String> = config.requirements.iter().map(|r| r.to_string()).collect();
        text.push_str(&format!(", require({})", list.join(", ")));
    }
    text
}

fn parameter_declarations(kernel: &Kernel) -> Vec<String> {
    let mut params: Vec<String> = kernel
        .params
        .iter()
        .map(|param| match &param.kind {
            ParamKind::Global(tensor) => {
                let constness = if tensor.access == Access::ReadOnly { "const " } else { "" };
                format!("{constness}{}* __restrict__ {}", tensor.element.cuda_name(), param.name)
            }
            ParamKind::Scalar(element) => format!("const {} {}", element.cuda_name(), param.name),
        })
        .collect();
    params.extend(kernel.shape_symbols().into_iter().map(|symbol| format!("const int {symbol}")));
    params.extend(kernel.leading_dimensions().into_iter().map(|(_, ld)| format!("const int {ld}")));
    if let Some(workspace) = kernel.workspace([1, 1, 1]) {
        // stream-K: the shares of split tiles, and how many k-tiles of each have arrived; a
        // dynamic grid: the count of tiles taken; `last_block_of`: the blocks of each group
        // that have arrived
        if workspace.partials > 0 {
            params.push(format!("{}* __restrict__ tessera_partials", workspace.element.cuda_name()));
        }
        params.push("int* __restrict__ tessera_tile_counters".into());
    }
    // TMA: the tensor maps the launch builds, read by the copy engine from parameter space
    params.extend(
        kernel.tensor_maps().iter().map(|map| format!("const __grid_constant__ tessera_tensor_map {}", map.param())),
    );
    params
}

/// The comment above the signature saying what the `<param>_ld` parameters are, if any:
/// `a_ld, b_ld, c_ld: the leading dimensions of a, b and c (..)`.
fn leading_dimension_note(kernel: &Kernel) -> Option<String> {
    let found = kernel.leading_dimensions();
    let names: Vec<&str> = found.iter().map(|(_, ld)| ld.as_str()).collect();
    let tensors: Vec<&str> = found.iter().map(|(tensor, _)| *tensor).collect();
    let what = "elements from one row to the next";
    let note = match (names.as_slice(), tensors.split_last()) {
        ([ld], Some((tensor, _))) => {
            Some(format!("{ld}: the leading dimension of {tensor}, {what} (its column count when dense)"))
        }
        (_, Some((last, rest))) if !rest.is_empty() => Some(format!(
            "{}: the leading dimensions of {} and {last}, {what} (the column count when dense)",
            names.join(", "),
            rest.join(", ")
        )),
        _ => None,
    };
    // a tensor of rank 3 or 4 is a batch of matrices, each rows · ld after the one before
    let batched: Vec<&str> = kernel
        .params
        .iter()
        .filter(|p| p.tensor().is_some_and(|t| t.batch_rank() > 0))
        .map(|p| p.name.as_str())
        .collect();
    match (note, batched.is_empty()) {
        (Some(note), false) => Some(format!("{note}; the matrices of {} lie rows · ld apart", batched.join(", "))),
        (note, _) => note,
    }
}

/// The linear thread index within the block, in the form the block's rank needs.
fn thread_index(kernel: &Kernel) -> &'static str {
    match kernel.config.threads.rank() {
        1 => "threadIdx.x",
        2 => "threadIdx.y * blockDim.x + threadIdx.x",
        _ => "(threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x",
    }
}
