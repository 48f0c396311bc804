use serde::{Deserialize, Serialize};

use crate::{
    leading_dimension_name, Config, Expr, GlobalTensor, MmaInstruction, MmaPlan, Origin, Param, PipelineLoop, Scope,
    SharedBuffer, SharedMemoryPlan, Statement, Target,
};

/// A whole tile kernel: its signature, its configuration and its body.
///
/// ```
/// use tessera_dsl::{Config, Kernel, Origin};
/// let kernel = Kernel {
///     name: "noop".into(),
///     doc: None,
///     params: vec![],
///     config: Config::default(),
///     body: vec![],
///     origin: Origin::default(),
/// };
/// assert!(kernel.grid_mapping().is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    pub name: String,
    /// The doc comment of the Rust function, repeated at the top of the CUDA source.
    pub doc: Option<String>,
    pub params: Vec<Param>,
    pub config: Config,
    pub body: Vec<Statement>,
    pub origin: Origin,
}

/// How the launch grid follows from the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GridMapping<'a> {
    /// `grid(e0, e1, ..)`: exactly these many blocks per dimension.
    Exact(&'a [Expr]),
    /// `grid_stride(count)`: at most `count` blocks, capped at what the device keeps resident.
    Strided(&'a Expr),
    /// `grid(e0, e1, ..).stream_k()`: as many blocks as the device keeps resident, at most one
    /// per k-tile of work (`tiles` × `k_tiles`, the count of the pipeline's loop).
    StreamK { tiles: &'a [Expr], k_tiles: &'a Expr },
    /// `grid(e0, e1, ..)` around a pipeline with producers: as many blocks as the device keeps
    /// resident, at most one per tile, each taking tiles blockIdx.x, + gridDim.x, .. (so the
    /// producers run on into a block's next tile while its compute threads finish this one).
    Persistent { tiles: &'a [Expr] },
}

/// The statements a `.stream_k()` kernel is built around: the grid of tiles, the pipeline whose
/// k loop the blocks share, and the fragment whose shares are summed.
#[derive(Clone, Copy, Debug)]
pub struct StreamKBody<'a> {
    pub grid: &'a crate::GridBinding,
    pub pipeline: &'a crate::PipelineLoop,
    pub fragment: &'a crate::Fragment,
}

/// What a kernel needs besides its arguments, for a grid of `grid` blocks, from the launch: a
/// `.stream_k()` kernel room for two partial tiles per block (the share that starts a tile and
/// the one that continues one) and one counter per tile the blocks may split (fewer than two
/// per block); a `.dynamic()` grid the one counter its blocks take tiles from (no partials); a
/// kernel that calls `last_block_of` a counter per block (a group has one block at least).
///
/// ```
/// use tessera_dsl::*;
/// let grid = GridBinding {
///     vars: vec!["bx".into()], extents: vec![Expr::int(1000)],
///     stream_k: false, grouped: None, zigzag: false, dynamic: true, origin: Origin::default(),
/// };
/// let kernel = Kernel {
///     name: "k".into(), doc: None, params: vec![], body: vec![Statement::Grid(grid)],
///     origin: Origin::default(), config: Config::default(),
/// };
/// // one counter, no partial tiles (so no `tessera_partials` parameter)
/// assert_eq!(
///     kernel.workspace([132, 1, 1]),
///     Some(Workspace { element: ElementType::I32, partials: 0, counters: 1, counters_left_zero: false })
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workspace {
    pub element: crate::ElementType,
    /// Elements of the partial tiles: 2 × blocks × the fragment's rows × columns; 0 where the
    /// kernel has none (and no `tessera_partials` parameter).
    pub partials: usize,
    /// Tile counters (`int`, the `tessera_tile_counters` parameter), zero before every launch.
    pub counters: usize,
    /// Whether the kernel leaves its counters zero as it ends — stream-K's: the block that
    /// finishes a split tile resets its counter — so that they need zeroing only where a
    /// kernel that does not (a dynamic grid's ends at the tile count) used them last.
    pub counters_left_zero: bool,
}

impl Kernel {
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The shape symbols in the order they first appear in the parameters; this is also
    /// the order in which the CUDA kernel receives them.
    pub fn shape_symbols(&self) -> Vec<&str> {
        let mut symbols: Vec<&str> = Vec::new();
        for tensor in self.params.iter().filter_map(Param::tensor) {
            for (symbol, _) in &tensor.shape {
                if !symbols.contains(&symbol.as_str()) {
                    symbols.push(symbol);
                }
            }
        }
        symbols
    }

    /// The `require(..)`s that name a shape symbol, checked at launch rather than by validation
    /// (and not emitted as `static_assert`s).
    ///
    /// ```
    /// use tessera_dsl::*;
    /// let requirement = |lhs, relation, rhs| Requirement { lhs, relation, rhs, origin: Origin::default() };
    /// let kernel = Kernel {
    ///     name: "k".into(), doc: None, body: vec![], origin: Origin::default(),
    ///     params: vec![Param {
    ///         name: "x".into(), origin: Origin::default(),
    ///         kind: ParamKind::Global(GlobalTensor {
    ///             element: ElementType::F32, access: Access::ReadOnly,
    ///             shape: vec![("N".into(), Origin::default())],
    ///         }),
    ///     }],
    ///     config: Config {
    ///         constants: vec![Constant::new("TILE", 64)],
    ///         requirements: vec![
    ///             requirement(Expr::name("TILE"), Relation::Ge, Expr::int(32)),
    ///             requirement(Expr::name("N"), Relation::Le, Expr::name("TILE")),
    ///         ],
    ///         ..Config::default()
    ///     },
    /// };
    /// let at_launch: Vec<String> = kernel.launch_requirements().iter().map(|r| r.to_string()).collect();
    /// assert_eq!(at_launch, ["N <= TILE"]);
    /// ```
    pub fn launch_requirements(&self) -> Vec<&crate::Requirement> {
        let symbols = self.shape_symbols();
        self.config.requirements.iter().filter(|r| r.names().iter().any(|name| symbols.contains(name))).collect()
    }

    /// The leading-dimension parameters (`a_ld`, ..), one per tensor parameter of rank 2 or more in
    /// parameter order; the CUDA kernel receives them after the shape symbols.
    pub fn leading_dimensions(&self) -> Vec<(&str, String)> {
        self.params
            .iter()
            .filter(|p| p.tensor().is_some_and(GlobalTensor::has_leading_dimension))
            .map(|p| (p.name.as_str(), leading_dimension_name(&p.name)))
            .collect()
    }

    /// The limits the kernel is validated against: those of `target = sm_XY`, else those
    /// every supported GPU shares. (An unknown target is a validation error; until then it
    /// counts as the portable one.)
    ///
    /// ```
    /// use tessera_dsl::{Config, Kernel, Origin, Target};
    /// let mut kernel = Kernel {
    ///     name: "k".into(), doc: None, params: vec![], body: vec![], config: Config::default(),
    ///     origin: Origin::default(),
    /// };
    /// assert_eq!(kernel.target(), Target::PORTABLE);
    /// kernel.config.target = Some(90);
    /// assert_eq!(kernel.target().opt_in_shared_memory_bytes, 227 * 1024);
    /// ```
    pub fn target(&self) -> Target {
        self.config.target.and_then(|cc| Target::from_compute_capability(cc / 10, cc % 10)).unwrap_or(Target::PORTABLE)
    }

    /// Where each shared buffer lives, and whether they need dynamic shared memory.
    pub fn shared_memory(&self) -> SharedMemoryPlan {
        SharedMemoryPlan::of(self)
    }

    /// The first grid mapping of the body (validation guarantees there is exactly one).
    pub fn grid_mapping(&self) -> Option<GridMapping<'_>> {
        self.body.iter().find_map(|statement| match statement {
            Statement::Grid(grid) if grid.stream_k => self
                .stream_k_body()
                .map(|body| GridMapping::StreamK { tiles: &grid.extents, k_tiles: &body.pipeline.count }),
            Statement::Grid(grid) if self.producer_threads() > 0 => {
                Some(GridMapping::Persistent { tiles: &grid.extents })
            }
            Statement::Grid(grid) => Some(GridMapping::Exact(&grid.extents)),
            Statement::GridStride(stride) => Some(GridMapping::Strided(&stride.count)),
            _ => None,
        })
    }

    /// The configuration's constants as a scope for evaluating expressions, with `THREADS`
    /// and `VECTOR` (the block's threads and the vector width), which every expression of the
    /// kernel may name.
    pub fn constant_scope(&self) -> Scope {
        let mut scope = Scope::default();
        for constant in &self.config.constants {
            scope.insert(constant.name.clone(), constant.value);
        }
        scope.insert("THREADS", self.config.threads.count() as i64);
        scope.insert("VECTOR", i64::from(self.config.vector.get()));
        scope
    }

    /// The shared buffer named `name`, wherever in the body it is declared.
    pub fn shared(&self, name: &str) -> Option<&SharedBuffer> {
        self.shared_buffers().into_iter().find(|b| b.name == name)
    }

    /// Every shared buffer the body declares, in source order.
    pub fn shared_buffers(&self) -> Vec<&SharedBuffer> {
        self.statements()
            .into_iter()
            .filter_map(|s| match s {
                Statement::Shared(buffer) => Some(buffer),
                _ => None,
            })
            .collect()
    }

    /// The fragment named `name`.
    pub fn fragment(&self, name: &str) -> Option<&crate::Fragment> {
        self.fragments().into_iter().find(|f| f.name == name)
    }

    /// Every fragment the body declares, in source order.
    pub fn fragments(&self) -> Vec<&crate::Fragment> {
        self.statements()
            .into_iter()
            .filter_map(|s| match s {
                Statement::Fragment(fragment) => Some(fragment),
                _ => None,
            })
            .collect()
    }

    /// The kernel's first thread-tile fragment (neither `.warp_tile(..)` nor
    /// `.warpgroup_tile(..)`): the one whose grid of threads `thread_row` and `thread_col`
    /// name, which every other thread-tile fragment shares.
    ///
    /// ```
    /// use tessera_dsl::{Config, Kernel, Origin};
    /// let kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(), config: Config::default() };
    /// assert!(kernel.thread_grid_fragment().is_none());
    /// ```
    pub fn thread_grid_fragment(&self) -> Option<&crate::Fragment> {
        self.statements().into_iter().find_map(|s| match s {
            Statement::Fragment(fragment) if fragment.warp_tile.is_none() && fragment.warpgroup_tile.is_none() => {
                Some(fragment)
            }
            _ => None,
        })
    }

    /// How many copies of each shared buffer the pipelines need: 2 for a buffer filled
    /// inside a `stages = 2` pipeline, else 1.
    pub fn buffer_stages(&self, buffer: &str) -> u32 {
        self.statements()
            .into_iter()
            .filter_map(|s| match s {
                Statement::Pipeline(p) => Some(p),
                _ => None,
            })
            .filter(|p| {
                p.body.iter().any(|s| matches!(s, Statement::Copy(c) if matches!(&c.dst, crate::Operand::Shared(d) if d.buffer == buffer)))
            })
            .map(|p| p.stages.max(1))
            .max()
            .unwrap_or(1)
    }

    /// Every intrinsic the thread code calls, with where, in source order.
    pub fn thread_calls(&self) -> Vec<(crate::Intrinsic, Origin)> {
        let mut calls = Vec::new();
        self.walk_thread_code(&mut |e| {
            if let crate::ThreadExprKind::Call { function, .. } = &e.kind {
                calls.push((*function, e.origin));
            }
        });
        calls
    }

    /// Visits every node of every expression of the body's thread code, in source order.
    fn walk_thread_code(&self, visit: &mut impl FnMut(&crate::ThreadExpr)) {
        for statement in self.statements() {
            if let Statement::Thread(thread) = statement {
                for expr in thread.expressions() {
                    expr.walk(visit);
                }
            }
        }
    }

    /// The tensor parameters whose rows must start aligned for a VECTOR-wide access: the launch
    /// narrows VECTOR until each of them is. Every tensor when the kernel moves tiles (copies,
    /// pipelines, `mma`, whose accesses are laid out by VECTOR); in a kernel of thread code
    /// alone, those read or written by `x.vector(..)`: an access by element (`x[[r, c]]`) is
    /// never misaligned, and `x.vector_at(..)` starts where `x.align_offset(..)` found.
    ///
    /// ```
    /// use tessera_dsl::{Config, Kernel, Origin};
    /// let kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(), config: Config::default() };
    /// assert!(kernel.row_aligned_tensors().is_empty());
    /// ```
    pub fn row_aligned_tensors(&self) -> Vec<&str> {
        let tensors = self.params.iter().filter(|p| p.tensor().is_some()).map(|p| p.name.as_str());
        let statements = self.statements();
        let moves_tiles = statements.iter().any(|s| {
            matches!(s, Statement::Copy(_) | Statement::Fragment(_) | Statement::Pipeline(_) | Statement::Mma(_))
        });
        if moves_tiles {
            return tensors.collect();
        }
        let mut indexed = Vec::new();
        self.walk_thread_code(&mut |e| {
            if let crate::ThreadExprKind::VectorLoad { tensor, start: crate::VectorStart::Vector, .. } = &e.kind {
                indexed.push(tensor.clone());
            }
        });
        tensors.filter(|name| indexed.iter().any(|t| t == name)).collect()
    }

    /// Every statement of the body, loops flattened, in source order.
    pub fn statements(&self) -> Vec<&Statement> {
        fn walk<'a>(body: &'a [Statement], out: &mut Vec<&'a Statement>) {
            for statement in body {
                out.push(statement);
                match statement {
                    Statement::GridStride(stride) => walk(&stride.body, out),
                    Statement::Pipeline(pipeline) => walk(&pipeline.body, out),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.body, &mut out);
        out
    }

    /// Threads a warp-specialised pipeline (`producers = n`) adds to each block: 0 without one.
    /// They come after the block's own (`tid ≥ THREADS`), so the fragment layout is unchanged.
    ///
    /// ```
    /// use tessera_dsl::{Config, Kernel, Origin};
    /// let kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(), config: Config::default() };
    /// assert_eq!(kernel.producer_threads(), 0);
    /// ```
    pub fn producer_threads(&self) -> u32 {
        self.body
            .iter()
            .find_map(|s| match s {
                Statement::Pipeline(p) => p.producers,
                _ => None,
            })
            .unwrap_or(0)
    }

    /// Groups of compute threads that each take tiles of their own (`consumers = n` on a
    /// pipeline with producers): 1 without.
    ///
    /// ```
    /// use tessera_dsl::{Config, Kernel, Origin};
    /// let kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(), config: Config::default() };
    /// assert_eq!(kernel.consumer_groups(), 1);
    /// ```
    pub fn consumer_groups(&self) -> u32 {
        self.body
            .iter()
            .find_map(|s| match s {
                Statement::Pipeline(p) => p.consumers,
                _ => None,
            })
            .unwrap_or(1)
            .max(1)
    }

    /// Threads a launch starts per block: the configured ones and any producers.
    ///
    /// ```
    /// use tessera_dsl::{Config, Kernel, Origin};
    /// let kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(), config: Config::default() };
    /// assert_eq!(kernel.launch_threads(), 256);
    /// ```
    pub fn launch_threads(&self) -> u64 {
        self.config.threads.count() + u64::from(self.producer_threads())
    }

    /// The grid, pipeline and fragment of a `.stream_k()` body (`None` for other kernels, or a
    /// body validation rejects for missing one of them).
    pub fn stream_k_body(&self) -> Option<StreamKBody<'_>> {
        let find = |pick: fn(&Statement) -> bool| self.body.iter().find(|s| pick(s));
        match (
            find(|s| matches!(s, Statement::Grid(g) if g.stream_k))?,
            find(|s| matches!(s, Statement::Pipeline(_)))?,
            find(|s| matches!(s, Statement::Fragment(_)))?,
        ) {
            (Statement::Grid(grid), Statement::Pipeline(pipeline), Statement::Fragment(fragment)) => {
                Some(StreamKBody { grid, pipeline, fragment })
            }
            _ => None,
        }
    }

    /// The kernel's `grid(..)` statement (`None` before validation has required one).
    ///
    /// ```
    /// use tessera_dsl::*;
    /// let grid = GridBinding {
    ///     vars: vec!["bx".into()], extents: vec![Expr::int(8)],
    ///     stream_k: false, grouped: None, zigzag: true, dynamic: false, origin: Origin::default(),
    /// };
    /// let kernel = Kernel {
    ///     name: "k".into(), doc: None, params: vec![], body: vec![Statement::Grid(grid)],
    ///     origin: Origin::default(), config: Config::default(),
    /// };
    /// assert!(kernel.grid().is_some_and(|g| g.zigzag));
    /// ```
    pub fn grid(&self) -> Option<&crate::GridBinding> {
        self.body.iter().find_map(|s| match s {
            Statement::Grid(grid) => Some(grid),
            _ => None,
        })
    }

    /// The workspace a kernel launched on a grid of `grid` blocks needs (`None` for most): a
    /// `.stream_k()` kernel's sized by the fragment its epilogue stores and its x blocks, a
    /// `.dynamic()` grid's tile counter, `last_block_of`'s counter a block.
    pub fn workspace(&self, grid: [u32; 3]) -> Option<Workspace> {
        if self.grid().is_some_and(|g| g.dynamic) {
            return Some(Workspace {
                element: crate::ElementType::I32,
                partials: 0,
                counters: 1,
                counters_left_zero: false,
            });
        }
        if self.thread_calls().iter().any(|(function, _)| *function == crate::Intrinsic::LastBlockOf) {
            // a counter for each group `last_block_of` counts: at most one a block
            let blocks = grid.iter().map(|&b| b.max(1) as usize).product();
            return Some(Workspace {
                element: crate::ElementType::I32,
                partials: 0,
                counters: blocks,
                counters_left_zero: true,
            });
        }
        let fragment = self.stream_k_body()?.fragment;
        let layout = crate::FragmentLayout::of(fragment, self)?;
        let tile = usize::try_from(layout.rows * layout.cols).ok()?;
        let blocks = grid[0].max(1) as usize;
        Some(Workspace {
            element: fragment.element,
            partials: 2 * blocks * tile,
            counters: 2 * blocks,
            counters_left_zero: true,
        })
    }

    /// The copies a pipeline with producers issues once a tile: those of global tiles into
    /// shared buffers before it (FlashAttention's Q), in order; none without producers.
    ///
    /// ```
    /// use tessera_dsl::{Config, Kernel, Origin};
    /// let kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(), config: Config::default() };
    /// assert!(kernel.producer_tile_copies().is_empty());
    /// ```
    pub fn producer_tile_copies(&self) -> Vec<&crate::TileCopy> {
        let Some(index) = self.body.iter().position(|s| matches!(s, Statement::Pipeline(p) if p.producers.is_some()))
        else {
            return Vec::new();
        };
        self.body[..index]
            .iter()
            .filter_map(|s| match s {
                Statement::Copy(copy) if matches!(copy.dst, crate::Operand::Shared(_)) => Some(copy),
                _ => None,
            })
            .collect()
    }

    /// Where the compute threads of a producers' pipeline give a tile's own buffers
    /// (FlashAttention's Q) back to the producers: right after the k loop when nothing after it
    /// reads them — so the producers copy the next tile's while this one's epilogue runs —
    /// unless a product the loop leaves in flight reads them (then once it is drained), else at
    /// the tile's end. `None` without such buffers.
    ///
    /// ```
    /// use tessera_dsl::{Config, Kernel, Origin};
    /// let kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(), config: Config::default() };
    /// assert_eq!(kernel.tile_buffers_freed(), None); // no pipeline, no tile copies
    /// ```
    pub fn tile_buffers_freed(&self) -> Option<TileBuffersFreed> {
        let index = self.body.iter().position(|s| matches!(s, Statement::Pipeline(p) if p.producers.is_some()))?;
        let Statement::Pipeline(pipeline) = &self.body[index] else { return None };
        let buffers: Vec<&str> = self.producer_tile_copies().iter().map(|copy| copy.dst.name()).collect();
        if buffers.is_empty() {
            return None;
        }
        let reads = |statement: &Statement| match statement {
            Statement::Thread(thread) => buffers.iter().any(|buffer| thread.mentions(buffer)),
            Statement::Copy(copy) => buffers.contains(&copy.src.name()) || buffers.contains(&copy.dst.name()),
            Statement::Mma(mma) => buffers.iter().any(|buffer| mma.reads(buffer)),
            // nothing else may follow a producers' pipeline (validation); assume the worst
            _ => true,
        };
        if self.body[index + 1..].iter().any(reads) {
            return Some(TileBuffersFreed::AtTileEnd);
        }
        // what the loop leaves in flight: a deferred product, or (without one) its wgmma
        let in_flight_reads = match crate::DeferredMma::of(pipeline) {
            Some(deferred) => buffers.iter().any(|buffer| deferred.deferred.reads(buffer)),
            None => {
                self.wgmma_groups_in_flight(pipeline) > 0
                    && pipeline.body.iter().any(|s| matches!(s, Statement::Mma(_)) && reads(s))
            }
        };
        Some(if in_flight_reads { TileBuffersFreed::AfterDrain } else { TileBuffersFreed::AfterLoop })
    }

    /// wgmma commit groups each tile of `pipeline` leaves running into the next: 1 where its
    /// body multiplies with wgmma from shared memory alone (the tensor cores start on tile
    /// k + 1 while tile k's finish, and its stage is freed a tile later), 0 otherwise — thread
    /// code between the `mma`s reads or writes their accumulators, and a register operand is
    /// another `mma`'s accumulator (and its registers must live until the wgmma is done), so
    /// each is waited for. (A TF32 A the lanes load from shared memory keeps a register set a
    /// k-step from one k-tile to the next, so its groups run on too.)
    ///
    /// ```
    /// use tessera_dsl::{Config, CopyMechanism, Expr, Kernel, Origin, PipelineLoop};
    /// let kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(), config: Config::default() };
    /// let pipeline = PipelineLoop { var: "k".into(), count: Expr::int(4), stages: 3, producers: None, copies: CopyMechanism::default(), consumers: None, body: vec![], origin: Origin::default() };
    /// assert_eq!(kernel.wgmma_groups_in_flight(&pipeline), 0);
    /// ```
    pub fn wgmma_groups_in_flight(&self, pipeline: &PipelineLoop) -> u32 {
        let scope = self.constant_scope();
        let wgmma = pipeline.body.iter().any(|s| {
            matches!(s, Statement::Mma(mma) if MmaPlan::new(self, mma, &scope)
                .is_ok_and(|plan| matches!(plan.instruction, MmaInstruction::Wgmma { .. })))
        });
        let thread_code = pipeline.body.iter().any(|s| matches!(s, Statement::Thread(_)));
        let register_operand = pipeline
            .body
            .iter()
            .any(|s| matches!(s, Statement::Mma(mma) if matches!(mma.a, crate::Operand::Fragment(_))));
        u32::from(wgmma && !thread_code && !register_operand)
    }

    /// The copies that cp.async pipelines (`stages ≥ 3`) issue, which deal their tiles to
    /// threads by [`crate::AsyncCopyMapping`].
    pub fn async_copies(&self) -> Vec<&crate::TileCopy> {
        self.statements()
            .into_iter()
            .filter_map(|s| match s {
                Statement::Pipeline(p) if p.stages >= 3 => Some(p.tile_copies()),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

/// Where a producers' pipeline frees a tile's own buffers ([`Kernel::tile_buffers_freed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileBuffersFreed {
    /// Right after the k loop, before what it left in flight is waited for.
    AfterLoop,
    /// After the k loop's products in flight are waited for (one of them reads the buffers).
    AfterDrain,
    /// At the tile's end (what follows the loop reads them).
    AtTileEnd,
}
