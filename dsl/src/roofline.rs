//! What a kernel must do at a given shape — floating-point operations of its `mma`s and
//! bytes of global memory its copies, mma operands and epilogues move — and the least time
//! that takes on a GPU of given DRAM bandwidth and arithmetic peak (the roofline).

use serde::{Deserialize, Serialize};

use crate::{
    validate, CopyPlan, Diagnostics, ElementType, EpiloguePlan, GridMapping, Kernel, MmaInstruction, MmaPlan, Operand,
    OperandPlan, Scope, Statement, Target,
};

/// The peak figures of one GPU, from its data sheet: assumptions, not measurements.
///
/// ```
/// use tessera_dsl::{GpuSpec, Target};
/// assert_eq!(GpuSpec::default_for(&Target::SM_90).name, "H100 SXM");
/// assert_eq!(GpuSpec::find("h200").map(|g| g.dram_bytes_per_second), Some(4.8e12));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GpuSpec {
    pub name: &'static str,
    /// Compute capability as `major * 10 + minor`.
    pub compute_capability: u32,
    pub dram_bytes_per_second: f64,
    /// FP32 FMA throughput (non-tensor), 2 FLOPs per FMA.
    pub fp32_flops_per_second: f64,
    pub fp64_flops_per_second: f64,
    /// Dense tensor-core throughput on 16-bit inputs with f32 accumulation (TF32 is half).
    pub tensor_flops_per_second: f64,
}

impl GpuSpec {
    /// One GPU per architecture (the first of each is its default), and the H200.
    pub const KNOWN: [GpuSpec; 5] = [
        GpuSpec::new("A100 SXM", 80, 2.0e12, [19.5e12, 9.7e12, 312.0e12]),
        GpuSpec::new("A40", 86, 0.696e12, [37.4e12, 0.585e12, 149.7e12]),
        GpuSpec::new("L40S", 89, 0.864e12, [91.6e12, 1.43e12, 362.0e12]),
        GpuSpec::new("H100 SXM", 90, 3.35e12, [67.0e12, 34.0e12, 989.4e12]),
        GpuSpec::new("H200", 90, 4.8e12, [67.0e12, 34.0e12, 989.4e12]),
    ];

    /// `[fp32, fp64, tensor]`: FLOP/s of FFMA, DFMA and dense 16-bit tensor-core math.
    const fn new(name: &'static str, compute_capability: u32, dram: f64, [fp32, fp64, tensor]: [f64; 3]) -> Self {
        Self {
            name,
            compute_capability,
            dram_bytes_per_second: dram,
            fp32_flops_per_second: fp32,
            fp64_flops_per_second: fp64,
            tensor_flops_per_second: tensor,
        }
    }

    /// The table's GPU for `target`'s architecture (the H100 SXM for an unknown one).
    pub fn default_for(target: &Target) -> GpuSpec {
        Self::KNOWN.into_iter().find(|g| g.compute_capability == target.compute_capability).unwrap_or(Self::KNOWN[3])
    }

    /// The GPU named `name`, ignoring case, spaces and dashes (`h100`, `H100 SXM`, `a100`).
    pub fn find(name: &str) -> Option<GpuSpec> {
        let squash = |s: &str| s.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_lowercase();
        let wanted = squash(name);
        Self::KNOWN
            .into_iter()
            .find(|g| squash(g.name) == wanted || squash(g.name).strip_suffix("sxm") == Some(&wanted))
    }

    /// The names of the table, for messages.
    pub fn known_names() -> String {
        Self::KNOWN.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
    }

    /// The arithmetic peak of an `mma` by `instruction` into `element` accumulators: the dense
    /// tensor-core rate for `mma.sync` and wgmma (half of it for TF32), else FP64 for f64 and
    /// FP32 for everything else.
    ///
    /// ```
    /// use tessera_dsl::{ElementType, GpuSpec, MmaInstruction};
    /// let h100 = GpuSpec::find("h100").unwrap();
    /// let bf16 = MmaInstruction::MmaSync { input: ElementType::BF16, k: 16 };
    /// assert_eq!(h100.peak_flops_per_second(bf16, ElementType::F32), 989.4e12);
    /// assert_eq!(h100.peak_flops_per_second(MmaInstruction::Ffma, ElementType::F32), 67.0e12);
    /// ```
    pub fn peak_flops_per_second(&self, instruction: MmaInstruction, element: ElementType) -> f64 {
        match instruction {
            MmaInstruction::MmaSync { input: ElementType::F32, .. }
            | MmaInstruction::Wgmma { input: ElementType::F32, .. } => self.tensor_flops_per_second / 2.0,
            MmaInstruction::MmaSync { .. } | MmaInstruction::Wgmma { .. } => self.tensor_flops_per_second,
            MmaInstruction::Ffma if element == ElementType::F64 => self.fp64_flops_per_second,
            MmaInstruction::Ffma => self.fp32_flops_per_second,
        }
    }
}

/// The work of one launch at one shape, and the least time it can take.
///
/// `issued_bytes` counts every global load and store as the code issues it, whole tiles,
/// no cache reuse — an A tile read by every block of its row counts every time.
/// `compulsory_bytes` counts each tensor once (read, written, or both for `.axpby` with
/// β ≠ 0): no kernel moves less, so `bound_seconds` (from it) is a true lower bound.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Roofline {
    pub gpu: GpuSpec,
    /// The value of each shape symbol.
    pub shape: Vec<(String, i64)>,
    /// Blocks per grid dimension (for a grid-stride kernel: the tiles it walks).
    pub grid: Vec<i64>,
    /// Blocks launched (for a grid-stride kernel: tiles processed).
    pub blocks: i64,
    /// Two per multiply-add of every `mma`, over every block.
    pub flops: f64,
    pub issued_bytes: f64,
    pub compulsory_bytes: f64,
    /// The peak `flops` is measured against (the tensor cores' for `mma.sync` and wgmma, FP32,
    /// or FP64 for f64 fragments).
    pub peak_flops_per_second: f64,
    pub compute_seconds: f64,
    /// `compulsory_bytes` at the DRAM bandwidth.
    pub memory_seconds: f64,
    /// `issued_bytes` at the DRAM bandwidth: the time if no access were served by a cache.
    pub issued_memory_seconds: f64,
    /// `max(compute_seconds, memory_seconds)`.
    pub bound_seconds: f64,
    pub bound_by: Bound,
}

/// Which side of the roofline a kernel sits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Compute,
    Memory,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        })
    }
}

impl Roofline {
    /// FLOPs per byte of `compulsory_bytes`.
    pub fn intensity(&self) -> f64 {
        self.flops / self.compulsory_bytes.max(1.0)
    }

    /// FLOPs per byte of `issued_bytes`.
    pub fn issued_intensity(&self) -> f64 {
        self.flops / self.issued_bytes.max(1.0)
    }
}

/// Why a roofline could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum RooflineError {
    #[error("the kernel is invalid:\n{0}")]
    Invalid(Diagnostics),
    #[error("the shape gives no value for `{symbol}`; the kernel's shape symbols are {known}")]
    MissingSymbol { symbol: String, known: String },
    #[error("`{symbol}` is not a shape symbol of the kernel; its shape symbols are {known}")]
    UnknownSymbol { symbol: String, known: String },
    #[error("{symbol} = {value}: a shape symbol is a positive extent")]
    NotPositive { symbol: String, value: i64 },
    #[error("`{expr}` ({what}) cannot be evaluated at this shape")]
    NotEvaluable { what: &'static str, expr: String },
}

/// The roofline of `kernel` at `shape` (a value for every shape symbol) on `gpu`.
///
/// ```
/// # use tessera_dsl::*;
/// # let tensor = |name: &str, access| Param { name: name.into(), origin: Origin::default(),
/// #     kind: ParamKind::Global(GlobalTensor { element: ElementType::F32, access,
/// #         shape: vec![("N".into(), Origin::default())] }) };
/// # let tile = |tensor: &str| Operand::Global(TileOperand { tensor: tensor.into(), at: vec![],
/// #     index: vec![Expr::name("bx")], extent: vec![Expr::name("TILE")], transposed: false, origin: Origin::default() });
/// # let copy = Kernel { name: "copy".into(), doc: None, origin: Origin::default(),
/// #     params: vec![tensor("x", Access::ReadOnly), tensor("y", Access::Writable)],
/// #     config: Config { vector: VectorWidth::W4, constants: vec![Constant::new("TILE", 1024)], ..Config::default() },
/// #     body: vec![
/// #         Statement::Grid(GridBinding { vars: vec!["bx".into()], stream_k: false, grouped: None, zigzag: false, dynamic: false,
/// #             extents: vec![Expr::ceil_div(Expr::name("N"), Expr::name("TILE"))], origin: Origin::default() }),
/// #         Statement::Copy(TileCopy { src: tile("x"), dst: tile("y"), order: ItemOrder::RowMajor, axpby: None, map: None, by_tma: false, origin: Origin::default() }),
/// #     ] };
/// // y = x of 2²⁴ floats: 64 MiB read, 64 MiB written, no FLOPs
/// let r = roofline(&copy, &[("N".into(), 1 << 24)], &GpuSpec::find("h100").unwrap()).unwrap();
/// assert_eq!((r.blocks, r.compulsory_bytes, r.flops), (1 << 14, 2.0 * 4.0 * (1 << 24) as f64, 0.0));
/// assert_eq!(r.bound_by, Bound::Memory);
/// ```
pub fn roofline(kernel: &Kernel, shape: &[(String, i64)], gpu: &GpuSpec) -> Result<Roofline, RooflineError> {
    validate(kernel, &kernel.target()).map_err(RooflineError::Invalid)?;
    let symbols = kernel.shape_symbols();
    let known = symbols.join(", ");
    for (symbol, value) in shape {
        if !symbols.contains(&symbol.as_str()) {
            return Err(RooflineError::UnknownSymbol { symbol: symbol.clone(), known });
        }
        if *value <= 0 {
            return Err(RooflineError::NotPositive { symbol: symbol.clone(), value: *value });
        }
    }
    let mut scope = kernel.constant_scope();
    let mut values = Vec::new();
    for symbol in &symbols {
        let value = shape
            .iter()
            .find(|(s, _)| s == symbol)
            .map(|(_, v)| *v)
            .ok_or_else(|| RooflineError::MissingSymbol { symbol: symbol.to_string(), known: known.clone() })?;
        scope.insert(symbol.to_string(), value);
        values.push((symbol.to_string(), value));
    }
    let evaluate = |expr: &crate::Expr, what: &'static str| {
        expr.eval(&scope).map_err(|_| RooflineError::NotEvaluable { what, expr: expr.to_string() })
    };
    let (grid, body) = match kernel.grid_mapping() {
        // stream-K runs each tile's k loop once in all, split or not: the work of one block per tile
        Some(GridMapping::Exact(extents))
        | Some(GridMapping::StreamK { tiles: extents, .. })
        | Some(GridMapping::Persistent { tiles: extents }) => {
            let grid = extents.iter().map(|e| evaluate(e, "a grid extent")).collect::<Result<Vec<_>, _>>()?;
            (grid, kernel.body.as_slice())
        }
        Some(GridMapping::Strided(count)) => {
            let body = kernel
                .body
                .iter()
                .find_map(|s| match s {
                    Statement::GridStride(stride) => Some(stride.body.as_slice()),
                    _ => None,
                })
                .unwrap_or(&[]);
            (vec![evaluate(count, "the grid-stride count")?], body)
        }
        None => (vec![0], kernel.body.as_slice()),
    };
    let blocks: i64 = grid.iter().map(|g| (*g).max(0)).product();
    let mut work = Work::default();
    work.add(kernel, body, &scope, 1.0)?;
    let flops = work.flops * blocks as f64;
    let compulsory_bytes = compulsory_bytes(kernel, &scope, &work);
    let mut issued_bytes = work.bytes * blocks as f64;
    if work.thread_code {
        issued_bytes = issued_bytes.max(compulsory_bytes);
    }
    let peak = gpu.peak_flops_per_second(
        work.instruction.unwrap_or(MmaInstruction::Ffma),
        work.element.unwrap_or(ElementType::F32),
    );
    let compute_seconds = flops / peak;
    let memory_seconds = compulsory_bytes / gpu.dram_bytes_per_second;
    let (bound_seconds, bound_by) = if compute_seconds >= memory_seconds {
        (compute_seconds, Bound::Compute)
    } else {
        (memory_seconds, Bound::Memory)
    };
    Ok(Roofline {
        gpu: *gpu,
        shape: values,
        grid,
        blocks,
        flops,
        issued_bytes,
        compulsory_bytes,
        peak_flops_per_second: peak,
        compute_seconds,
        memory_seconds,
        issued_memory_seconds: issued_bytes / gpu.dram_bytes_per_second,
        bound_seconds,
        bound_by,
    })
}

/// The mean of `expr` over every block of the kernel's grid (the block indices it names bound
/// in turn), or `None` where it cannot be evaluated or those indices take over 2^20 values.
fn mean_over_blocks(kernel: &Kernel, expr: &crate::Expr, scope: &crate::Scope) -> Option<f64> {
    let grid = kernel.grid()?;
    let named: Vec<&str> = expr.names().into_iter().map(|(name, _)| name).collect();
    let mut indices = Vec::new();
    for (var, extent) in grid.vars.iter().zip(&grid.extents) {
        if named.contains(&var.as_str()) {
            indices.push((var, extent.eval(scope).ok()?.max(0)));
        }
    }
    let combinations: i64 = indices.iter().map(|(_, extent)| *extent).product();
    if combinations == 0 || combinations > 1 << 20 {
        return None;
    }
    let mut total = 0.0;
    let mut scope = scope.clone();
    for combination in 0..combinations {
        let mut rest = combination;
        for (var, extent) in &indices {
            scope.insert(var.as_str(), rest % extent);
            rest /= extent;
        }
        total += expr.eval(&scope).ok()?.max(0) as f64;
    }
    Some(total / combinations as f64)
}

/// One block's work, and which tensors it reads and writes.
#[derive(Default)]
struct Work {
    flops: f64,
    bytes: f64,
    element: Option<ElementType>,
    instruction: Option<MmaInstruction>,
    read: Vec<String>,
    written: Vec<String>,
    /// Whether the body has per-thread code, whose traffic is not counted block by block.
    thread_code: bool,
}

impl Work {
    fn add(&mut self, kernel: &Kernel, body: &[Statement], scope: &Scope, times: f64) -> Result<(), RooflineError> {
        let constants = kernel.constant_scope();
        let invalid = |errors: Vec<crate::Diagnostic>| RooflineError::Invalid(Diagnostics(errors));
        for statement in body {
            match statement {
                Statement::Copy(copy) if matches!(copy.src, Operand::Fragment(_)) => {
                    let plan = EpiloguePlan::new(kernel, copy, &constants).map_err(invalid)?;
                    let tile =
                        (plan.layout.rows * plan.layout.cols) as f64 * f64::from(plan.layout.element.size_bytes());
                    // β ≠ 0 reads C before writing it; the code skips the read only when β = 0.
                    let reads = if plan.axpby.is_some() { 2.0 } else { 1.0 };
                    self.bytes += times * tile * reads;
                    self.note(&plan.dst.tensor, plan.axpby.is_some(), true);
                    // An element map's tensors: a 2-D one (a residual) read tile for tile, a
                    // 1-D one (a bias) a row or column of the tile.
                    if let Some(map) = &plan.map {
                        let mut tensors = Vec::new();
                        map.body.walk(&mut |e| {
                            if let crate::ThreadExprKind::Index { base, indices } = &e.kind {
                                if !tensors.contains(&(base.clone(), indices.len())) {
                                    tensors.push((base.clone(), indices.len()));
                                }
                            }
                        });
                        for (tensor, rank) in tensors {
                            let Some(global) = kernel.param(&tensor).and_then(|p| p.tensor()) else { continue };
                            let size = f64::from(global.element.size_bytes());
                            let elements = if rank == 2 {
                                plan.layout.rows * plan.layout.cols
                            } else {
                                plan.layout.rows.max(plan.layout.cols)
                            };
                            self.bytes += times * elements as f64 * size;
                            self.note(&tensor, true, false);
                        }
                    }
                }
                Statement::Copy(copy) => {
                    let plan = CopyPlan::new(kernel, copy, &constants).map_err(invalid)?;
                    let tile = (plan.rows * plan.cols) as f64 * f64::from(plan.element.size_bytes());
                    if let OperandPlan::Global(g) = &plan.src {
                        self.bytes += times * tile;
                        self.note(&g.tensor, true, false);
                    }
                    if let OperandPlan::Global(g) = &plan.dst {
                        self.bytes += times * tile;
                        self.note(&g.tensor, false, true);
                    }
                }
                Statement::Mma(mma) => {
                    let plan = MmaPlan::new(kernel, mma, &constants).map_err(invalid)?;
                    let layout = &plan.layout;
                    self.flops += times * 2.0 * (layout.rows * layout.cols * plan.k) as f64;
                    self.element = Some(layout.element);
                    self.instruction = Some(plan.instruction);
                    let element = f64::from(layout.element.size_bytes());
                    // A global operand is read by every thread for its own values, k times.
                    let threads = layout.threads() as f64;
                    for (operand, values) in [(&plan.a, layout.thread_rows), (&plan.b, layout.thread_cols)] {
                        if let OperandPlan::Global(g) = operand {
                            self.bytes += times * threads * (values * plan.k) as f64 * element;
                            self.note(&g.tensor, true, false);
                        }
                    }
                }
                Statement::Pipeline(pipeline) => {
                    // a count that depends on the block (a causal attention's key tiles) counts
                    // as its mean over the blocks
                    let count = match pipeline.count.eval(scope) {
                        Ok(count) => count.max(0) as f64,
                        Err(_) => mean_over_blocks(kernel, &pipeline.count, scope).ok_or_else(|| {
                            RooflineError::NotEvaluable {
                                what: "the pipeline's count",
                                expr: pipeline.count.to_string(),
                            }
                        })?,
                    };
                    self.add(kernel, &pipeline.body, scope, times * count)?;
                }
                Statement::GridStride(stride) => self.add(kernel, &stride.body, scope, times)?,
                Statement::Thread(thread) => {
                    // Per-thread code's traffic depends on its loops and guards, which are
                    // not evaluated here: each tensor it touches counts once per direction
                    // (the compulsory traffic), and the issued traffic is taken to be that.
                    self.thread_code = true;
                    let (read, written) = thread.indexed();
                    for tensor in read.iter().filter(|t| kernel.param(t).is_some_and(|p| p.tensor().is_some())) {
                        self.note(tensor, true, false);
                    }
                    for tensor in written.iter().filter(|t| kernel.param(t).is_some_and(|p| p.tensor().is_some())) {
                        self.note(tensor, false, true);
                    }
                }
                Statement::Grid(_) | Statement::Shared(_) | Statement::Fragment(_) | Statement::Sync(_) => {}
            }
        }
        Ok(())
    }

    fn note(&mut self, tensor: &str, read: bool, written: bool) {
        if read && !self.read.iter().any(|t| t == tensor) {
            self.read.push(tensor.to_string());
        }
        if written && !self.written.iter().any(|t| t == tensor) {
            self.written.push(tensor.to_string());
        }
    }
}

/// Each tensor's bytes once per direction it is used in.
fn compulsory_bytes(kernel: &Kernel, scope: &Scope, work: &Work) -> f64 {
    kernel
        .params
        .iter()
        .filter_map(|p| Some((p.name.as_str(), p.tensor()?)))
        .map(|(name, tensor)| {
            let elements: f64 = tensor.shape.iter().map(|(s, _)| scope.get(s).unwrap_or(0) as f64).product();
            let directions =
                work.read.iter().filter(|t| *t == name).count() + work.written.iter().filter(|t| *t == name).count();
            elements * f64::from(tensor.element.size_bytes()) * directions as f64
        })
        .sum()
}
