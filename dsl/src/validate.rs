//! The checks a kernel must pass before any code is rendered. Each failure is a
//! [`Diagnostic`] at the offending source position, with the numbers and a fix.

use std::collections::{BTreeMap, BTreeSet};

/// The deepest `pipeline(.., stages = n)`: n − 1 tiles in flight through cp.async.
pub const MAX_PIPELINE_STAGES: u32 = 8;

use crate::{
    CopyPlan, Diagnostic, Diagnostics, ElementType, EpiloguePlan, Expr, ExprKind, Fragment, FragmentLayout, Kernel,
    Mma, MmaInstruction, MmaPlan, Operand, OperandPlan, Origin, Param, PipelineLoop, Scope, SharedBuffer, SharedLayout,
    Statement, Target, ThreadStatement, ThreadStatementKind, TileCopy, TypeEnv,
};

/// Registers a thread may give its accumulators and one row of each operand; the rest of
/// its 255 hold addresses, indices and prefetched tiles.
const MAX_FRAGMENT_REGISTERS: i64 = 200;

/// Names the generated CUDA uses itself; a parameter or constant may not take them.
const RESERVED: [&str; 14] = [
    "THREADS",
    "VECTOR",
    "STEPS",
    "ROWS",
    "COLS",
    "tid",
    "tile_start",
    "staged",
    "item",
    "thread_row",
    "thread_col",
    "stage",
    "a_frag",
    "b_frag",
];

/// Checks `kernel` against the limits of `target`; every problem found is reported, not
/// only the first.
///
/// ```
/// use tessera_dsl::{validate, Config, Kernel, Origin, Target, ThreadBlock};
/// let mut kernel = Kernel {
///     name: "too_wide".into(), doc: None, params: vec![], body: vec![],
///     config: Config { threads: ThreadBlock::linear(2048), ..Config::default() },
///     origin: Origin::default(),
/// };
/// let errors = validate(&kernel, &Target::SM_90).unwrap_err();
/// assert!(errors.to_string().contains("2048 threads per block exceed the limit of 1024"));
/// ```
pub fn validate(kernel: &Kernel, target: &Target) -> Result<(), Diagnostics> {
    let mut check = Checker {
        kernel,
        target,
        diagnostics: Diagnostics::default(),
        declared: Vec::new(),
        shared_bytes: 0,
        shared_reported: false,
        buffers: BTreeMap::new(),
    };
    check.target();
    check.threads();
    check.names();
    check.body();
    check.stream_k();
    check.pipeline_bodies();
    for error in crate::deferred_mma::deferred_mma_errors(kernel) {
        check.diagnostics.push(error);
    }
    check.staged_buffers_in_thread_code();
    check.producers();
    check.tma_copies();
    check.tma_stores();
    check.tile_order();
    check.consumers_need_producers();
    check.min_blocks();
    check.clusters();
    check.requirements();
    if check.diagnostics.is_empty() {
        Ok(())
    } else {
        Err(check.diagnostics)
    }
}

/// A tile index (one of `grid_vars`) that `pipeline`'s count names, and where: blocks that take
/// tiles by number (stream-K, producers) run the same k loop for every tile.
fn tile_index_in_count<'p>(pipeline: &'p PipelineLoop, grid_vars: &[String]) -> Option<(&'p str, Origin)> {
    pipeline.count.names().into_iter().find(|(name, _)| grid_vars.iter().any(|v| v == name))
}

struct Checker<'a> {
    kernel: &'a Kernel,
    target: &'a Target,
    diagnostics: Diagnostics,
    /// Shared buffers declared so far, in body order.
    declared: Vec<String>,
    shared_bytes: i64,
    /// Whether the shared-memory limit has been reported (once, at the buffer that crosses it).
    shared_reported: bool,
    /// buffer → ((row symbol, column symbol) of its layout, the tensor it was filled from)
    buffers: BTreeMap<String, ((String, String), String)>,
}

impl Checker<'_> {
    fn error(&mut self, origin: Origin, message: String, hint: Option<String>) {
        let mut diagnostic = Diagnostic::new(origin, message);
        diagnostic.hint = hint;
        self.diagnostics.push(diagnostic);
    }

    /// `target = sm_XY` must name an architecture tessera has limits for.
    fn target(&mut self) {
        let Some(cc) = self.kernel.config.target else { return };
        if Target::from_compute_capability(cc / 10, cc % 10).is_none() {
            self.error(
                self.kernel.config.target_origin,
                format!("target = sm_{cc}: tessera knows the limits of {} only", Target::known_names()),
                Some("name one of them, or leave `target` out to validate against every supported GPU".into()),
            );
        } else if self.kernel.config.arch_specific && cc != 90 {
            self.error(
                self.kernel.config.target_origin,
                format!("target = sm_{cc}a: only sm_90 has architecture-specific features (sm_90a: wgmma, setmaxnreg)"),
                Some(format!("write `target = sm_{cc}`")),
            );
        }
    }

    /// `producers = n`: a warpgroup-aligned set of copying threads beside a 1-D block, a
    /// cp.async ring, sm_90's `setmaxnreg`, and nothing after the loop but the fragment's
    /// copies out (the producers are gone by then: a barrier there would wait for them).
    fn producers(&mut self) {
        let Some((index, pipeline, producers)) = self.kernel.body.iter().enumerate().find_map(|(i, s)| match s {
            Statement::Pipeline(p) => p.producers.map(|n| (i, p, n)),
            _ => None,
        }) else {
            return;
        };
        let threads = self.kernel.config.threads;
        // one producer warp is enough where a single thread issues TMA copies; it keeps its
        // registers (setmaxnreg moves whole warpgroups' registers), so every thread of the
        // block gets an even share of them
        let single_warp = producers == 32 && pipeline.copies == crate::CopyMechanism::Tma;
        if !single_warp && (producers == 0 || !producers.is_multiple_of(128)) {
            let hint =
                if producers == 32 { "add `copies = tma`, or use producers = 128" } else { "use producers = 128" };
            self.error(
                pipeline.origin,
                format!("producers = {producers}: producer threads come in warpgroups of 128 (setmaxnreg applies to whole warpgroups), or as one warp of 32 when `copies = tma` (one thread issues the copies)"),
                Some(hint.into()),
            );
        }
        if threads.y != 1 || threads.z != 1 || !threads.x.is_multiple_of(128) {
            self.error(
                self.kernel.config.threads_origin,
                format!("threads = {threads} beside producers: the compute threads must be whole warpgroups along x (a multiple of 128, 1-D)"),
                Some("use threads = 256".into()),
            );
        }
        let launched = threads.count() + u64::from(producers);
        if launched > u64::from(self.target.max_threads_per_block) {
            self.error(
                pipeline.origin,
                format!("{} threads and {producers} producers make {launched} threads a block, over the {} a block may have", threads.count(), self.target.max_threads_per_block),
                None,
            );
        }
        if let Some(consumers) = pipeline.consumers {
            let per_group = threads.count() / u64::from(consumers.max(1));
            if consumers == 0 || !threads.count().is_multiple_of(u64::from(consumers)) || !per_group.is_multiple_of(128)
            {
                self.error(
                    pipeline.origin,
                    format!("consumers = {consumers} with threads = {threads}: each consumer group is whole warpgroups (a multiple of 128 threads), the same for every group"),
                    Some(format!("use threads = {}", 128 * consumers.max(1))),
                );
            }
        }
        if pipeline.stages < 3 {
            self.error(
                pipeline.origin,
                format!(
                    "producers with stages = {}: producers fill a cp.async ring, which takes 3 or more stages",
                    pipeline.stages
                ),
                Some("use stages = 3".into()),
            );
        }
        if self.kernel.config.target != Some(90) {
            self.error(
                pipeline.origin,
                "producers hand their registers to the compute threads with setmaxnreg, which sm_90 has".into(),
                Some("add `target = sm_90` to the attribute".into()),
            );
        }
        if self.kernel.body.iter().any(|s| matches!(s, Statement::Grid(g) if g.stream_k)) {
            self.error(
                pipeline.origin,
                "producers and `.stream_k()` do not combine yet".into(),
                Some("drop one of them".into()),
            );
        }
        // the kernel becomes persistent around the pipeline: per tile, the statements before it
        // (fragments, thread code, and copies into shared buffers of their own, which the
        // producers issue once a tile) and after it (thread code, the fragments' copies out)
        let filled: Vec<String> = pipeline
            .tile_copies()
            .filter_map(|copy| match &copy.dst {
                Operand::Shared(shared) => Some(shared.buffer.clone()),
                _ => None,
            })
            .collect();
        let before_ok = self.kernel.body[..index].iter().all(|s| match s {
            Statement::Grid(g) => g.extents.len() <= 3,
            Statement::Shared(_) | Statement::Fragment(_) | Statement::Thread(_) => true,
            Statement::Copy(copy) => matches!((&copy.src, &copy.dst), (Operand::Global(_), Operand::Shared(dst)) if !filled.contains(&dst.buffer)),
            _ => false,
        });
        let fragments = self.kernel.body.iter().filter(|s| matches!(s, Statement::Fragment(_))).count();
        if !before_ok || fragments == 0 {
            self.error(
                pipeline.origin,
                "a kernel with producers is a grid (1-D to 3-D), shared buffers, fragments, thread code and copies of global tiles into shared buffers the pipeline does not fill, then this pipeline, then thread code and the fragments' copies out".into(),
                Some("producers make the kernel persistent: each block runs that shape once per tile".into()),
            );
        }
        let grid_vars: Vec<String> = self
            .kernel
            .body
            .iter()
            .filter_map(|s| match s {
                Statement::Grid(g) => Some(g.vars.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        if let (Some((name, origin)), Some(groups)) = (tile_index_in_count(pipeline, &grid_vars), pipeline.consumers) {
            self.error(
                origin,
                format!(
                    "the pipeline's count uses the tile index `{name}`: with consumers = {groups} the groups count the ring's k-tiles as if every tile had the same k loop"
                ),
                Some("drop `consumers`, or make the count independent of the tile".into()),
            );
        }
        let own_copies = self.kernel.body[..index].iter().any(|s| matches!(s, Statement::Copy(_)));
        if let (true, Some(groups)) = (own_copies, pipeline.consumers) {
            self.error(
                pipeline.origin,
                format!("copies before a pipeline with consumers = {groups}: the groups take tiles of their own, and one set of the tile's buffers cannot hold several tiles"),
                Some("drop `consumers`, or load those tiles inside the pipeline".into()),
            );
        }
        let after = &self.kernel.body[index + 1..];
        if after.iter().any(|s| {
            !matches!(s, Statement::Thread(_))
                && !matches!(s, Statement::Copy(copy) if matches!(copy.src, Operand::Fragment(_)))
        }) {
            self.error(
                pipeline.origin,
                "only thread code and copies of fragments out may follow a pipeline with producers: the producers are on to the next tile by then, and a barrier would wait for them".into(),
                Some("move the other statements before the pipeline".into()),
            );
        }
        // thread code before and after the pipeline runs with no barrier (the producers never
        // come to one): it may not write shared memory, nor read the stages the producers are
        // refilling for the next tile
        let shared: Vec<String> = self
            .kernel
            .body
            .iter()
            .filter_map(|s| match s {
                Statement::Shared(buffer) => Some(buffer.name.clone()),
                _ => None,
            })
            .collect();
        for (i, statement) in self.kernel.body.iter().enumerate() {
            let Statement::Thread(thread) = statement else { continue };
            let (indexed, writes) = thread.indexed();
            if let Some(buffer) = writes.iter().find(|b| shared.contains(b)) {
                self.error(
                    thread.origin,
                    format!("thread code {} a pipeline with producers writes shared buffer `{buffer}`: nothing there waits for the other threads (a barrier would wait for the producers too)", if i < index { "before" } else { "after" }),
                    Some("keep the values in registers".into()),
                );
            } else if let Some(buffer) = indexed.iter().find(|b| filled.contains(b)) {
                self.error(
                    thread.origin,
                    format!("thread code outside the pipeline reads `{buffer}`, whose stages the producers fill while the compute threads are elsewhere"),
                    Some("read it inside the pipeline".into()),
                );
            }
        }
        // no thread code of the compute threads may wait for the whole block
        let mut threads = Vec::new();
        for statement in self.kernel.statements() {
            if let Statement::Thread(thread) = statement {
                threads.push(thread);
            }
        }
        for thread in threads {
            let mut collective = None;
            for expr in thread.expressions() {
                expr.walk(&mut |e| {
                    if let crate::ThreadExprKind::Call { function, .. } = &e.kind {
                        if function.is_block_collective() {
                            collective.get_or_insert(function.name());
                        }
                    }
                });
            }
            if let Some(name) = collective {
                self.error(
                    thread.origin,
                    format!("`{name}` in a kernel with producers: a block reduction waits at a barrier for every thread of the block, and the producers never come"),
                    Some("reduce across the warp (`warp_sum`, `s.row_sum(i)`) instead".into()),
                );
            }
        }
    }

    /// `consumers = n` splits the compute threads of a pipeline with producers.
    fn consumers_need_producers(&mut self) {
        let found = self.kernel.statements().into_iter().find_map(|s| match s {
            Statement::Pipeline(p) if p.consumers.is_some() && p.producers.is_none() => Some(p),
            _ => None,
        });
        if let Some(pipeline) = found {
            self.error(
                pipeline.origin,
                format!(
                    "consumers = {}: groups of compute threads taking tiles in turn need a producer warpgroup that fills the stages for all of them",
                    pipeline.consumers.unwrap_or(0)
                ),
                Some("add `producers = 128` to the pipeline".into()),
            );
        }
    }

    /// The grid options that order the tiles persistent blocks (producers) take by number:
    /// `.grouped(n)` (groups of n rows of a 2-D grid), `.zigzag()` and `.dynamic()` (from a
    /// counter: one group of compute threads — `consumers = n` counts turns by tile — and no
    /// cluster, whose blocks take tiles together; not in zigzag as well).
    fn tile_order(&mut self) {
        let Some(grid) = self.kernel.grid() else {
            return;
        };
        let options: Vec<String> = [
            grid.grouped.map(|rows| format!(".grouped({rows})")),
            grid.zigzag.then(|| ".zigzag()".to_string()),
            grid.dynamic.then(|| ".dynamic()".to_string()),
        ]
        .into_iter()
        .flatten()
        .collect();
        if self.kernel.producer_threads() == 0 || grid.stream_k {
            for option in &options {
                self.error(
                    grid.origin,
                    format!("`{option}` orders the tiles that persistent blocks take by number, which a pipeline with producers makes; here each block has its own tile (blockIdx)"),
                    Some(format!("add `producers = 128` to the pipeline, or drop `{option}`")),
                );
            }
        }
        if let Some(rows) = grid.grouped {
            if rows == 0 {
                self.error(
                    grid.origin,
                    "`.grouped(0)`: a group holds at least one row of tiles".into(),
                    Some("use `.grouped(8)`".into()),
                );
            }
            if grid.extents.len() != 2 {
                self.error(
                    grid.origin,
                    format!(
                        "`.grouped({rows})` groups the rows of a 2-D grid of tiles; this grid has {} dimension(s)",
                        grid.extents.len()
                    ),
                    None,
                );
            }
        }
        if !grid.dynamic {
            return;
        }
        let consumers = self.kernel.consumer_groups();
        if consumers > 1 {
            self.error(
                grid.origin,
                format!("`.dynamic()` with `consumers = {consumers}`: the groups take the block's tiles in a fixed turn, so each block's tiles must be known in advance"),
                Some("drop `consumers = ..` or `.dynamic()`".into()),
            );
        }
        if self.kernel.config.cluster.is_some() {
            self.error(
                grid.origin,
                "`.dynamic()` in clusters: a cluster's blocks take neighbouring tiles together, in a fixed order"
                    .into(),
                Some("drop `cluster = ..` or `.dynamic()`".into()),
            );
        }
        if grid.zigzag {
            self.error(
                grid.origin,
                "`.zigzag()` and `.dynamic()` both order the tiles; a dynamic grid's blocks take them in the grid's order as they finish".into(),
                Some("keep one of them".into()),
            );
        }
    }

    /// `copies = tma`: producers issue the copies, each a global tile into `.panels()` a TMA
    /// box can write, 16-byte vectors (a launch that narrows them falls back to cp.async),
    /// and a stage's bytes within what an mbarrier's transaction count holds.
    fn tma_copies(&mut self) {
        let Some(pipeline) = self.kernel.statements().into_iter().find_map(|s| match s {
            Statement::Pipeline(p) if p.copies == crate::CopyMechanism::Tma => Some(p),
            _ => None,
        }) else {
            return;
        };
        if pipeline.producers.is_none() {
            self.error(
                pipeline.origin,
                "copies = tma: TMA copies are issued by a producer thread, which this pipeline does not have".into(),
                Some("add `producers = 32` (one warp) or `producers = 128` (a warpgroup, which hands its registers to the compute threads) to the pipeline".into()),
            );
            return;
        }
        let scope = self.kernel.constant_scope();
        let mut stage_bytes: u64 = 0;
        // a tile's own copies (before the pipeline) go by TMA too, on an mbarrier of their own
        let tile_copies = self.kernel.producer_tile_copies();
        let mut tile_bytes: u64 = 0;
        for &copy in &tile_copies {
            let Ok(plan) = crate::CopyPlan::new(self.kernel, copy, &scope) else { continue };
            match self.kernel.copy_tensor_map(copy, &plan) {
                Ok(map) => tile_bytes += u64::from(map.tile_bytes()),
                Err(why) => {
                    self.error(copy.origin, format!("`{copy}` before a pipeline with copies = tma: {why}"), None)
                }
            }
        }
        // one map per tensor: two copies of it must read the same boxes
        let mut maps: Vec<crate::TensorMap> = Vec::new();
        let every_copy = tile_copies.iter().copied().chain(pipeline.tile_copies());
        for copy in every_copy {
            let Ok(plan) = crate::CopyPlan::new(self.kernel, copy, &scope) else { continue };
            let Ok(map) = self.kernel.copy_tensor_map(copy, &plan) else { continue };
            match maps.iter().find(|m| m.tensor == map.tensor) {
                Some(other) if *other != map => self.error(
                    copy.origin,
                    format!(
                        "`{copy}` reads `{}` in boxes of {} × {}, another copy of it in {} × {}: a kernel takes one tensor map per tensor",
                        map.tensor, map.box_rows, map.box_cols, other.box_rows, other.box_cols
                    ),
                    Some("copy it in tiles of one shape".into()),
                ),
                Some(_) => {}
                None => maps.push(map),
            }
        }
        if tile_bytes >= 1 << 20 {
            self.error(
                pipeline.origin,
                format!("copies = tma: a tile's own copies are {tile_bytes} bytes, over the 1 048 575 an mbarrier's transaction count holds"),
                None,
            );
        }
        for copy in pipeline.tile_copies() {
            let Ok(plan) = crate::CopyPlan::new(self.kernel, copy, &scope) else { continue };
            match self.kernel.copy_tensor_map(copy, &plan) {
                Ok(map) => stage_bytes += u64::from(map.tile_bytes()),
                Err(why) => {
                    self.error(copy.origin, format!("`{copy}` with copies = tma: {why}"), None);
                    continue;
                }
            }
            let vector_bytes = i64::from(self.kernel.config.vector.get()) * i64::from(plan.element.size_bytes());
            // a launch that narrowed the width renders this pipeline with cp.async
            if vector_bytes != 16 && !self.kernel.config.narrowed {
                self.error(
                    self.kernel.config.vector_origin,
                    format!(
                        "copies = tma with vector = {} of {}: {vector_bytes}-byte vectors; TMA reads rows 16 bytes at a time, and the launch falls back to cp.async where rows are not 16-byte aligned, which it knows from a 16-byte vector",
                        self.kernel.config.vector, plan.element
                    ),
                    Some(format!("use vector = {}", 16 / plan.element.size_bytes())),
                );
            }
        }
        // mbarrier.expect_tx counts up to 2^20 − 1 bytes per phase
        if stage_bytes >= 1 << 20 {
            self.error(
                pipeline.origin,
                format!("copies = tma: one stage is {stage_bytes} bytes, over the 1 048 575 an mbarrier's transaction count holds"),
                None,
            );
        }
    }

    /// `.stream_k()` splits a kernel's one k loop between blocks and sums the shares of its
    /// one fragment, so the body must be exactly that: the grid, shared buffers, one
    /// fragment, one cp.async pipeline (stages ≥ 3) whose count does not depend on the tile,
    /// and one copy of the fragment out after it.
    fn stream_k(&mut self) {
        let Some(grid) = self.kernel.body.iter().find_map(|s| match s {
            Statement::Grid(grid) if grid.stream_k => Some(grid),
            _ => None,
        }) else {
            return;
        };
        if grid.extents.len() > 2 {
            self.error(
                grid.origin,
                format!("`.stream_k()` on a {}-D grid: it numbers tiles along x, then y", grid.extents.len()),
                Some("use a 1-D or 2-D grid".into()),
            );
        }
        // the workspace and its fix-up address one matrix: a batch of them is not supported yet
        for statement in self.kernel.statements() {
            let operands: Vec<&Operand> = match statement {
                Statement::Copy(copy) => vec![&copy.src, &copy.dst],
                Statement::Mma(mma) => vec![&mma.a, &mma.b],
                _ => vec![],
            };
            for operand in operands {
                if let Operand::Global(tile) = operand {
                    if !tile.at.is_empty() {
                        self.error(
                            tile.origin,
                            format!("`{tile}` in a `.stream_k()` kernel: stream-K splits the k loops of one matrix's tiles, and batched tiles (`.at([..])`) are not supported with it"),
                            Some("drop `.stream_k()` and put the batch on the grid: `grid(cdiv(N, BN), cdiv(M, BM), B)`".into()),
                        );
                    }
                }
            }
        }
        let shape = "a stream-K body is the grid, shared buffers, one fragment, one cp.async `pipeline(..)` (stages ≥ 3) with its copies and `mma`, then one `copy(&acc, c.tile(..))`";
        let (mut fragments, mut pipelines, mut epilogues) = (0, 0, 0);
        for statement in &self.kernel.body {
            let misplaced = match statement {
                Statement::Grid(_) | Statement::Shared(_) => None,
                Statement::Fragment(fragment) => {
                    fragments += 1;
                    (fragments > 1).then(|| (fragment.origin, "a second fragment".to_string()))
                }
                Statement::Pipeline(pipeline) => {
                    pipelines += 1;
                    if pipelines > 1 {
                        Some((pipeline.origin, "a second pipeline".to_string()))
                    } else if pipeline.stages < 3 {
                        Some((
                            pipeline.origin,
                            format!("a pipeline of {} stage(s) (stream-K starts a tile's loop at any k-tile, which only a cp.async ring of 3 or more stages does)", pipeline.stages),
                        ))
                    } else if let Some((name, origin)) = tile_index_in_count(pipeline, &grid.vars) {
                        Some((origin, format!("the pipeline's count uses the tile index `{name}`: every tile must have the same k loop")))
                    } else {
                        None
                    }
                }
                Statement::Copy(copy) if matches!(copy.src, Operand::Fragment(_)) && pipelines == 1 => {
                    epilogues += 1;
                    (epilogues > 1).then(|| (copy.origin, "a second copy of the fragment".to_string()))
                }
                Statement::Copy(copy) => Some((copy.origin, format!("`{copy}`"))),
                Statement::Sync(barrier) => Some((barrier.origin, "`sync()`".to_string())),
                Statement::Mma(mma) => Some((mma.origin, "an `mma` outside the pipeline".to_string())),
                Statement::GridStride(stride) => Some((stride.origin, "a `grid_stride` loop".to_string())),
                Statement::Thread(thread) => Some((thread.origin, "thread code".to_string())),
            };
            if let Some((origin, what)) = misplaced {
                self.error(origin, format!("{what} in a `.stream_k()` kernel"), Some(shape.into()));
            }
        }
        if fragments == 0 || pipelines == 0 || epilogues == 0 {
            let missing = [
                (fragments, "a fragment"),
                (pipelines, "a pipeline"),
                (epilogues, "a copy of the fragment out after the pipeline"),
            ]
            .into_iter()
            .filter(|(n, _)| *n == 0)
            .map(|(_, what)| what)
            .collect::<Vec<_>>()
            .join(", ");
            self.error(grid.origin, format!("`.stream_k()` without {missing}"), Some(shape.into()));
        }
    }

    /// What a pipeline of 2 or more stages may hold: tile copies from global memory into
    /// shared buffers (its stages), `mma`s and thread code, the last two run in source order
    /// once the tile has landed. Its barriers are its own (one per tile, after the wait), so
    /// thread code in it may not write shared memory (another thread could read it before any
    /// barrier); and where a tile's loop is split between blocks (stream-K), it holds no thread
    /// code at all (with producers, no block reduction: see `producers`). (Thread code in
    /// a wgmma pipeline makes each wgmma be waited for: [`Kernel::wgmma_groups_in_flight`].)
    fn pipeline_bodies(&mut self) {
        let stream_k = self.kernel.body.iter().any(|s| matches!(s, Statement::Grid(g) if g.stream_k));
        let shared: Vec<String> = self
            .kernel
            .statements()
            .into_iter()
            .filter_map(|s| match s {
                Statement::Shared(buffer) => Some(buffer.name.clone()),
                _ => None,
            })
            .collect();
        let pipelines: Vec<&PipelineLoop> = self
            .kernel
            .statements()
            .into_iter()
            .filter_map(|s| match s {
                Statement::Pipeline(p) if p.stages >= 2 => Some(p),
                _ => None,
            })
            .collect();
        for pipeline in pipelines {
            let stages = pipeline.stages;
            let holds = "copies of global tiles into shared buffers, `mma` and thread code";
            for statement in &pipeline.body {
                match statement {
                    Statement::Copy(copy) => {
                        if !matches!((&copy.src, &copy.dst), (Operand::Global(_), Operand::Shared(_))) {
                            self.error(
                                copy.origin,
                                format!("`{copy}` in a pipeline of {stages} stages, which holds {holds}"),
                                Some("move it before or after the loop".into()),
                            );
                        }
                    }
                    Statement::Mma(_) => {}
                    Statement::Sync(barrier) => self.error(
                        barrier.origin,
                        format!("`sync()` in a pipeline of {stages} stages: the pipeline places its own barriers (one per tile, after the tile has landed)"),
                        Some("drop it".into()),
                    ),
                    Statement::Shared(buffer) => self.error(
                        buffer.origin,
                        format!("shared buffer `{}` declared in a pipeline of {stages} stages, which holds {holds}", buffer.name),
                        Some("declare it before the loop".into()),
                    ),
                    Statement::Fragment(fragment) => self.error(
                        fragment.origin,
                        format!("fragment `{}` declared in a pipeline of {stages} stages, which holds {holds}", fragment.name),
                        Some("declare it before the loop".into()),
                    ),
                    // reported where loops nest
                    Statement::Grid(_) | Statement::GridStride(_) | Statement::Pipeline(_) => {}
                    Statement::Thread(thread) => {
                        let refused = if stream_k {
                            Some((
                                "a `.stream_k()` kernel, which splits a tile's k loop between blocks and adds their accumulators".to_string(),
                                "drop `.stream_k()`",
                            ))
                        } else {
                            let (_, writes) = thread.indexed();
                            writes.into_iter().find(|b| shared.contains(b)).map(|buffer| {
                                (
                                    format!("a pipeline of {stages} stages, and it writes shared buffer `{buffer}`: the pipeline's only barrier in a tile comes after the wait, so another thread could read `{buffer}` before the write is done"),
                                    "keep the values in registers (a fragment or `let mut v = [..; N]`), or write the buffer after the loop",
                                )
                            })
                        };
                        if let Some((why, hint)) = refused {
                            self.error(thread.origin, format!("thread code in {why}"), Some(hint.into()));
                        }
                    }
                }
            }
        }
    }

    /// Thread code indexes a shared buffer as one tile (`t[r][c]`); a buffer that a pipeline of
    /// 2 or more stages fills holds one tile per stage, which it does not index.
    fn staged_buffers_in_thread_code(&mut self) {
        let threads: Vec<&ThreadStatement> = self
            .kernel
            .statements()
            .into_iter()
            .filter_map(|s| match s {
                Statement::Thread(thread) => Some(thread),
                _ => None,
            })
            .collect();
        for thread in threads {
            let (reads, writes) = thread.indexed();
            let mut named: Vec<String> = reads.into_iter().chain(writes).collect();
            named.sort_unstable();
            named.dedup();
            for buffer in named {
                let is_shared =
                    self.kernel.statements().iter().any(|s| matches!(s, Statement::Shared(b) if b.name == buffer));
                let stages = self.kernel.buffer_stages(&buffer);
                if is_shared && stages > 1 {
                    self.error(
                        thread.origin,
                        format!("thread code indexes `{buffer}`, which a pipeline of {stages} stages fills: it holds {stages} tiles, one per stage, and thread code indexes a buffer of one"),
                        Some(format!("`mma` reads `{buffer}` at the tile's stage; thread code may index buffers no pipeline stages (filled by a copy or thread code outside the loop)")),
                    );
                }
            }
        }
    }

    /// Every `require(..)` must hold with this configuration's constants, `THREADS` and `VECTOR`.
    fn requirements(&mut self) {
        let config = &self.kernel.config;
        let scope = self
            .kernel
            .constant_scope()
            .with("THREADS", config.threads.count() as i64)
            .with("VECTOR", i64::from(config.vector.get()));
        let symbols = self.kernel.shape_symbols();
        for requirement in &config.requirements {
            if requirement.names().iter().any(|name| symbols.contains(name)) {
                // a shape's: checked at launch, once its names other than the symbols are known
                if let Some(unknown) =
                    requirement.names().into_iter().find(|name| !symbols.contains(name) && scope.get(name).is_none())
                {
                    self.error(
                        requirement.origin,
                        format!("require({requirement}): `{unknown}` is neither a constant nor a shape symbol"),
                        Some("a requirement may use integers, constants, THREADS, VECTOR and shape symbols".into()),
                    );
                }
                continue;
            }

            match requirement.holds(&scope) {
                Ok(true) => {}
                Ok(false) => {
                    // the value of each side that is more than a literal
                    let sides: Vec<String> = [&requirement.lhs, &requirement.rhs]
                        .into_iter()
                        .filter(|side| !matches!(side.kind, ExprKind::Int(_) | ExprKind::Name(_)))
                        .filter_map(|side| side.eval(&scope).ok().map(|value| format!("{side} is {value}")))
                        .collect();
                    let sides = if sides.is_empty() { String::new() } else { format!(": {}", sides.join(", ")) };
                    self.error(
                        requirement.origin,
                        format!("require({requirement}) does not hold with {}{sides}", requirement.values(&scope)),
                        Some("the kernel's body relies on it: choose constants that keep it".into()),
                    );
                }
                Err(error) => self.error(
                    requirement.origin,
                    format!("require({requirement}): {error}"),
                    Some("a requirement may use integers, constants, THREADS, VECTOR and shape symbols".into()),
                ),
            }
        }
    }

    /// `cluster = ..`: up to 8 blocks (the size every sm_90 part guarantees), on sm_90 or newer;
    /// and the thread code's cluster intrinsics only in a kernel that has clusters.
    fn clusters(&mut self) {
        let config = &self.kernel.config;
        if let (Some(dims), Some(written)) = (config.cluster, config.cluster_text()) {
            let blocks = config.cluster_blocks();
            if dims.contains(&0) || blocks > 8 {
                self.error(
                    config.cluster_origin,
                    format!("cluster = {written}: a cluster holds 1 to 8 blocks (the portable limit of sm_90); this one holds {blocks}"),
                    Some("use a cluster of at most 8 blocks, e.g. `cluster = 8` or `cluster = (2, 4)`".into()),
                );
            }
            if config.target.is_none_or(|cc| cc < 90) {
                let target = config.target.map_or("no target".to_string(), |cc| format!("target = sm_{cc}"));
                self.error(
                    config.cluster_origin,
                    format!("cluster = {written} with {target}: thread-block clusters need sm_90 or newer"),
                    Some("add `target = sm_90` to the attribute".into()),
                );
            }
            if self.kernel.producer_threads() > 0 {
                self.persistent_clusters(&written);
            }
            return;
        }
        for (function, origin) in self.kernel.thread_calls().into_iter().filter(|(f, _)| f.needs_cluster()) {
            let why = if function.is_cluster_collective() {
                "it reads the other blocks of the block's cluster"
            } else {
                "a block that runs alone has no rank in a cluster"
            };
            self.error(
                origin,
                format!("`{}` in a kernel without clusters: {why}", function.name()),
                Some("run the blocks in clusters: add `cluster = 8, target = sm_90` (or another size up to 8) to the attribute".into()),
            );
        }
    }

    /// `.by_tma()`: the copy out of a wgmma fragment into a tile of a 2-D tensor of f32, f16 or
    /// bf16, in a kernel whose pipeline copies by TMA (its producers and tensor maps); the
    /// values are what `.axpby` makes of them (`.map(..)` is not staged).
    fn tma_stores(&mut self) {
        let copies: Vec<&TileCopy> = self
            .kernel
            .statements()
            .into_iter()
            .filter_map(|s| match s {
                Statement::Copy(copy) if copy.by_tma => Some(copy),
                _ => None,
            })
            .collect();
        let tma_pipeline = self.kernel.asks_for_tma();
        for copy in copies {
            let fragment = match &copy.src {
                Operand::Fragment(f) => self.kernel.fragment(&f.fragment),
                _ => None,
            };
            if fragment.is_none_or(|f| f.warpgroup_tile.is_none()) {
                self.error(
                    copy.origin,
                    format!("`{copy}`: `.by_tma()` stores a `.warpgroup_tile(..)` fragment (wgmma's), each warp its 16 rows"),
                    Some("drop `.by_tma()`, or copy out of a wgmma fragment".into()),
                );
                continue;
            }
            let Operand::Global(tile) = &copy.dst else {
                self.error(copy.origin, format!("`{copy}`: `.by_tma()` stores into a tile of a global tensor"), None);
                continue;
            };
            if tile.transposed {
                self.error(
                    copy.origin,
                    format!("`{copy}`: `.by_tma()` stores the fragment's rows as rows of `{}`; a `.t()` view turns them into columns", tile.tensor),
                    Some("drop `.t()`, or `.by_tma()`".into()),
                );
            }
            if !tma_pipeline {
                self.error(
                    copy.origin,
                    format!("`{copy}`: `.by_tma()` needs a pipeline that copies by TMA (`producers = 128, copies = tma`), whose producers make the tensor maps and whose compute warps store"),
                    Some("add `producers = 128, copies = tma` to the pipeline".into()),
                );
            }
            if copy.map.is_some() {
                self.error(
                    copy.origin,
                    format!("`{copy}`: `.by_tma()` stages α·acc + β·C; a `.map(..)` is not staged"),
                    Some("drop `.by_tma()` for a fused epilogue".into()),
                );
            }
            let element = self.kernel.param(&tile.tensor).and_then(|p| p.tensor()).map(|t| (t.element, t.rank()));
            match element {
                Some((ElementType::F32 | ElementType::F16 | ElementType::BF16, 2)) => {}
                Some((element, rank)) => self.error(
                    copy.origin,
                    format!("`{copy}`: `.by_tma()` stores 2-D tensors of f32, f16 or bf16; `{}` is a rank-{rank} tensor of {element}", tile.tensor),
                    None,
                ),
                None => {}
            }
        }
    }

    /// `cluster = ..` on a pipeline with producers: the cluster's blocks take neighbouring tiles
    /// along one axis of a 2-D tile grid, and the TMA copies they share are multicast, each
    /// block issuing an equal share of their boxes.
    fn persistent_clusters(&mut self, written: &str) {
        let origin = self.kernel.config.cluster_origin;
        let Some(cluster) = self.kernel.cluster_tiles() else {
            self.error(
                origin,
                format!("cluster = {written} on a pipeline with producers: its blocks take neighbouring tiles along one axis of the tile grid, x or y"),
                Some("use `cluster = (2, 1)` (tiles side by side, sharing A's) or `cluster = (1, 2)` (one above the other, sharing B's)".into()),
            );
            return;
        };
        let grid_dims = self.kernel.grid_mapping().map_or(0, |mapping| match mapping {
            crate::GridMapping::Persistent { tiles } => tiles.len(),
            _ => 0,
        });
        if grid_dims != 2 {
            self.error(
                origin,
                format!("cluster = {written} on a pipeline with producers takes a 2-D grid of tiles; this one has {grid_dims} dimension(s)"),
                None,
            );
            return;
        }
        // a launch on rows TMA cannot read renders the kernel with cp.async copies: its clusters
        // then walk the same tiles, each block copying its own
        if self.kernel.config.narrowed {
            return;
        }
        if !self.kernel.copies_by_tma() {
            self.error(
                origin,
                format!(
                    "cluster = {written} on a pipeline with producers multicasts the tiles its blocks share by TMA"
                ),
                Some("add `copies = tma` to the pipeline".into()),
            );
            return;
        }
        let scope = self.kernel.constant_scope();
        let shared: Vec<&TileCopy> = self.kernel.pipeline_tile_copies().filter(|c| self.kernel.multicasts(c)).collect();
        if shared.is_empty() {
            self.error(
                origin,
                format!(
                    "cluster = {written}: every copy of the pipeline reads a tile that moves along grid axis {}, so the cluster's blocks share none to multicast",
                    ['x', 'y'][cluster.axis]
                ),
                Some("cluster along the other axis: blocks one above the other share B's tiles, side by side A's".into()),
            );
        }
        for copy in shared {
            let Ok(plan) = CopyPlan::new(self.kernel, copy, &scope) else { continue };
            let Ok(map) = crate::tensor_map_of(&plan) else { continue };
            if let Err(why) = map.shared_by(cluster.blocks) {
                self.error(
                    copy.origin,
                    format!(
                        "`{copy}` is multicast to the {} blocks of a cluster, each issuing an equal share of it, but {why}",
                        cluster.blocks
                    ),
                    Some(format!(
                        "make the tile a multiple of {} panels wide or of {} rows, or cluster along the other axis",
                        cluster.blocks,
                        8 * cluster.blocks
                    )),
                );
            }
        }
    }

    /// `min_blocks = n` asks for n blocks per SM; the threads and shared memory of n blocks
    /// must fit one SM, or the launch bound cannot be met.
    fn min_blocks(&mut self) {
        let Some(blocks) = self.kernel.config.min_blocks else { return };
        let origin = self.kernel.config.min_blocks_origin;
        let threads = self.kernel.config.threads.count();
        let per_sm = u64::from(self.target.max_threads_per_sm);
        if threads * u64::from(blocks) > per_sm {
            self.error(
                origin,
                format!(
                    "min_blocks = {blocks} with threads = {}: {blocks} × {threads} = {} threads, but an SM holds {per_sm} on {}",
                    self.kernel.config.threads,
                    threads * u64::from(blocks),
                    self.target.label
                ),
                Some(format!("use min_blocks = {} or fewer threads per block", (per_sm / threads.max(1)).max(1))),
            );
            return;
        }
        let occupancy = crate::Occupancy::new(self.target, threads as u32, self.shared_bytes.max(0) as u32, None);
        if occupancy.blocks_by_shared_memory < blocks
            && self.shared_bytes <= i64::from(self.target.opt_in_shared_memory_bytes)
        {
            self.error(
                origin,
                format!(
                    "min_blocks = {blocks}: each block takes {} B of shared memory ({} B + {} B reserved, in {}-byte units), so an SM's {} B hold only {} on {}",
                    occupancy.shared_bytes_allocated,
                    self.shared_bytes,
                    self.target.reserved_shared_memory_per_block_bytes,
                    self.target.shared_memory_allocation_unit,
                    self.target.shared_memory_per_sm_bytes,
                    occupancy.blocks_by_shared_memory,
                    self.target.label
                ),
                Some(format!(
                    "use min_blocks = {} or shrink the shared buffers",
                    occupancy.blocks_by_shared_memory.max(1)
                )),
            );
        }
    }

    fn threads(&mut self) {
        let block = self.kernel.config.threads;
        let origin = self.kernel.config.threads_origin;
        let dims = [block.x, block.y, block.z];
        if dims.contains(&0) {
            self.error(
                origin,
                format!("threads = {block}: a block needs at least one thread in every dimension"),
                Some("use a positive count such as threads = 256".into()),
            );
            return;
        }
        let limit = self.target.max_threads_per_block;
        if block.count() > u64::from(limit) {
            self.error(
                origin,
                format!(
                    "threads = {block}: {} threads per block exceed the limit of {limit} on {}",
                    block.count(),
                    self.target.label
                ),
                Some(format!("use at most {limit} threads and more blocks, e.g. threads = 256")),
            );
        }
        for (axis, (dim, max)) in ["x", "y", "z"].iter().zip(dims.iter().zip(self.target.max_block_dims)) {
            if *dim > max && block.count() <= u64::from(limit) {
                self.error(
                    origin,
                    format!("threads = {block}: {dim} threads along {axis} exceed the limit of {max}"),
                    None,
                );
            }
        }
    }

    /// Parameters, shape symbols and constants share one namespace in the emitted CUDA.
    fn names(&mut self) {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut declared: Vec<(&str, Origin, &str)> = Vec::new();
        for param in &self.kernel.params {
            declared.push((&param.name, param.origin, "parameter"));
        }
        let mut symbols_seen = BTreeSet::new();
        for tensor in self.kernel.params.iter().filter_map(Param::tensor) {
            for (symbol, origin) in &tensor.shape {
                if symbols_seen.insert(symbol.as_str()) {
                    declared.push((symbol, *origin, "shape symbol"));
                }
            }
        }
        for constant in &self.kernel.config.constants {
            declared.push((&constant.name, constant.origin, "constant"));
        }
        for buffer in self.kernel.shared_buffers() {
            declared.push((&buffer.name, buffer.origin, "shared buffer"));
        }
        for statement in self.kernel.statements() {
            if let Statement::Fragment(fragment) = statement {
                declared.push((&fragment.name, fragment.origin, "fragment"));
            }
        }
        let leading_dimensions = self.kernel.leading_dimensions();
        for (name, origin, what) in declared {
            if let Some((tensor, _)) = leading_dimensions.iter().find(|(_, ld)| ld == name) {
                self.error(
                    origin,
                    format!("`{name}` is reserved: the generated CUDA passes `{tensor}`'s leading dimension under that name"),
                    Some(format!("rename the {what}")),
                );
            } else if RESERVED.contains(&name) {
                self.error(
                    origin,
                    format!("`{name}` is reserved: the generated CUDA declares it itself"),
                    Some(format!("rename the {what}")),
                );
            } else if !seen.insert(name) {
                self.error(
                    origin,
                    format!("`{name}` is declared twice (here as a {what})"),
                    Some("parameters, shape symbols, constants and shared buffers need distinct names".into()),
                );
            }
        }
    }

    fn body(&mut self) {
        let grids: Vec<Origin> = self
            .kernel
            .body
            .iter()
            .filter_map(|s| match s {
                Statement::Grid(g) => Some(g.origin),
                Statement::GridStride(g) => Some(g.origin),
                _ => None,
            })
            .collect();
        if grids.is_empty() {
            self.error(
                self.kernel.origin,
                format!("kernel `{}` never says how blocks map to tiles", self.kernel.name),
                Some(
                    "start the body with `let (bx,) = grid(cdiv(N, TILE));` or a `for t in grid_stride(..)` loop"
                        .into(),
                ),
            );
        }
        for extra in grids.iter().skip(1) {
            self.error(
                *extra,
                "a kernel has one grid mapping; this is a second one".into(),
                Some("bind all block indices in one `grid(..)` call".into()),
            );
        }
        let mut scope = self.kernel.constant_scope();
        let mut bound: Vec<String> = self.kernel.shape_symbols().iter().map(|s| s.to_string()).collect();
        bound.extend(self.kernel.config.constants.iter().map(|c| c.name.clone()));
        let body = self.kernel.body.clone();
        self.statements(&body, &mut bound, &mut scope, false);
        let mut found = Vec::new();
        crate::thread_code::check_body(self.kernel, &body, &mut TypeEnv::of_kernel(self.kernel), &mut found);
        for diagnostic in found {
            self.diagnostics.push(diagnostic);
        }
    }

    /// A `let` or loop variable of thread code may not take a name the generated CUDA declares.
    fn reserved_locals(&mut self, thread: &ThreadStatement) {
        let (name, nested): (Option<&String>, Vec<&ThreadStatement>) = match &thread.kind {
            ThreadStatementKind::Let { name, .. } | ThreadStatementKind::LetArray { name, .. } => (Some(name), vec![]),
            ThreadStatementKind::For { var, body, .. } => (Some(var), body.iter().collect()),
            ThreadStatementKind::If { then, otherwise, .. } => (None, then.iter().chain(otherwise).collect()),
            ThreadStatementKind::Assign { .. } | ThreadStatementKind::AtomicAdd { .. } => (None, vec![]),
        };
        if let Some((name, (tensor, _))) = name.and_then(|n| {
            self.kernel.leading_dimensions().into_iter().find(|(_, ld)| ld == n).map(|found| (n.clone(), found))
        }) {
            self.error(
                thread.origin,
                format!(
                    "`{name}` is reserved: the generated CUDA passes `{tensor}`'s leading dimension under that name"
                ),
                Some("rename the variable".into()),
            );
        } else if let Some(name) = name.filter(|n| RESERVED.contains(&n.as_str())) {
            self.error(
                thread.origin,
                format!("`{name}` is reserved: the generated CUDA declares it itself"),
                Some(if name == "tid" {
                    "use `thread_index()` for the thread's index".into()
                } else {
                    "rename it".into()
                }),
            );
        }
        for inner in nested {
            self.reserved_locals(inner);
        }
    }

    fn statements(&mut self, body: &[Statement], bound: &mut Vec<String>, scope: &mut Scope, nested: bool) {
        let mut grid_seen = false;
        for statement in body {
            match statement {
                Statement::Grid(grid) => {
                    if nested {
                        self.error(
                            grid.origin,
                            "`grid(..)` belongs at the top of the kernel body, not inside a loop".into(),
                            None,
                        );
                    }
                    if grid.vars.len() != grid.extents.len() || grid.extents.is_empty() || grid.extents.len() > 3 {
                        self.error(
                            grid.origin,
                            format!(
                                "`grid(..)` binds {} block indices to {} extents; it needs one index per extent, 1 to 3 of them",
                                grid.vars.len(),
                                grid.extents.len()
                            ),
                            None,
                        );
                    }
                    for extent in &grid.extents {
                        self.expression(extent, bound);
                    }
                    bound.extend(grid.vars.iter().cloned());
                    grid_seen = true;
                }
                Statement::GridStride(stride) => {
                    if nested {
                        self.error(stride.origin, "`grid_stride(..)` loops do not nest".into(), None);
                    }
                    self.expression(&stride.count, bound);
                    let mut inner = bound.clone();
                    inner.push(stride.var.clone());
                    self.statements(&stride.body, &mut inner, scope, true);
                    grid_seen = true;
                }
                Statement::Shared(buffer) => {
                    self.shared_buffer(buffer, scope);
                    self.declared.push(buffer.name.clone());
                }
                Statement::Copy(copy) => {
                    if !grid_seen && !nested {
                        self.error(
                            copy.origin,
                            "this copy comes before the grid mapping, so it has no block index".into(),
                            Some("put `let (bx,) = grid(..);` first".into()),
                        );
                    }
                    self.copy(copy, bound, scope);
                }
                Statement::Sync(_) => {}
                Statement::Thread(thread) => self.reserved_locals(thread),
                Statement::Fragment(fragment) => self.fragment(fragment, scope),
                Statement::Pipeline(pipeline) => {
                    if nested {
                        self.error(pipeline.origin, "`pipeline(..)` loops do not nest".into(), None);
                    }
                    if !grid_seen && !nested {
                        self.error(
                            pipeline.origin,
                            "the pipeline comes before the grid mapping".into(),
                            Some("put `let (bx, by) = grid(..);` first".into()),
                        );
                    }
                    match pipeline.stages {
                        0 => self.error(
                            pipeline.origin,
                            "stages = 0: a pipeline needs at least one stage".into(),
                            Some("use stages = 1 (no overlap), 2 (register prefetch) or 3 to 8 (cp.async)".into()),
                        ),
                        1..=MAX_PIPELINE_STAGES => {}
                        n => self.error(
                            pipeline.origin,
                            format!(
                                "stages = {n}: a cp.async pipeline keeps every stage's tiles in shared memory; \
                                 tessera allows at most {MAX_PIPELINE_STAGES}"
                            ),
                            Some(
                                "3 or 4 stages hide global latency on sm_80 and newer; more only cost shared memory"
                                    .into(),
                            ),
                        ),
                    }
                    self.expression(&pipeline.count, bound);
                    let mut inner = bound.clone();
                    inner.push(pipeline.var.clone());
                    self.statements(&pipeline.body, &mut inner, scope, true);
                }
                Statement::Mma(mma) => {
                    for operand in [&mma.a, &mma.b] {
                        if let Operand::Global(tile) = operand {
                            for expr in tile.at.iter().chain(&tile.index).chain(&tile.extent) {
                                self.expression(expr, bound);
                            }
                        }
                    }
                    match MmaPlan::new(self.kernel, mma, scope) {
                        Ok(plan) if plan.instruction != MmaInstruction::Ffma => self.tensor_core_mma(mma, &plan),
                        Ok(plan) => {
                            self.mma_vectors(&plan);
                            self.mma_unroll(mma, &plan);
                        }
                        Err(errors) => {
                            for error in errors {
                                self.diagnostics.push(error);
                            }
                        }
                    }
                }
            }
        }
    }

    /// A thread-tile fragment after the kernel's first: `thread_row` and `thread_col` name one
    /// grid of thread tiles per kernel, so every such fragment must spread over the same one.
    fn same_thread_grid(&mut self, fragment: &Fragment, layout: &FragmentLayout, scope: &Scope) {
        let grid = |l: &FragmentLayout| (l.warp_layout, l.threads_down(), l.threads_across(), l.thread_cols);
        let Some(first) = self.kernel.thread_grid_fragment() else { return };
        let Some(first_layout) = FragmentLayout::with_scope(first, scope) else { return };
        if first.name != fragment.name && grid(&first_layout) != grid(layout) {
            self.error(
                fragment.origin,
                format!(
                    "`{}` spreads {} × {} thread tiles over {} × {} threads, `{}` {} × {} over {} × {}: a kernel's thread-tile fragments share one grid of threads (`thread_row`, `thread_col`)",
                    fragment.name,
                    layout.thread_rows,
                    layout.thread_cols,
                    layout.threads_down(),
                    layout.threads_across(),
                    first.name,
                    first_layout.thread_rows,
                    first_layout.thread_cols,
                    first_layout.threads_down(),
                    first_layout.threads_across()
                ),
                Some(format!("give `{}` the shape and thread tile of `{}`", fragment.name, first.name)),
            );
        }
    }

    fn fragment(&mut self, fragment: &Fragment, scope: &Scope) {
        let tensor_core_tiles = fragment.warp_tile.iter().flatten().chain(fragment.warpgroup_tile.iter().flatten());
        for extent in fragment.shape.iter().chain(&fragment.thread_tile).chain(tensor_core_tiles) {
            match extent.eval(scope) {
                Ok(value) if value > 0 => {}
                Ok(value) => self.error(
                    extent.origin,
                    format!("fragment extent `{extent}` is {value}; it must be positive"),
                    None,
                ),
                Err(_) => self.error(
                    extent.origin,
                    format!("fragment extent `{extent}` is not a compile-time constant"),
                    Some("use a constant from consts(..)".into()),
                ),
            }
        }
        let Some(layout) = FragmentLayout::with_scope(fragment, scope) else { return };
        if let Some(group_tile) = layout.warpgroup_tile {
            return self.warpgroup_fragment(fragment, &layout, group_tile);
        }
        if let Some(warp_tile) = layout.warp_tile {
            return self.warp_fragment(fragment, &layout, warp_tile);
        }
        if layout.rows <= 0 || layout.cols <= 0 || layout.thread_rows <= 0 || layout.thread_cols <= 0 {
            return;
        }
        self.same_thread_grid(fragment, &layout, scope);
        if layout.rows % layout.thread_rows != 0 || layout.cols % layout.thread_cols != 0 {
            let (what, extent, tile) = if layout.rows % layout.thread_rows != 0 {
                ("rows", layout.rows, layout.thread_rows)
            } else {
                ("columns", layout.cols, layout.thread_cols)
            };
            let divisors: Vec<String> =
                (1..=16).filter(|d| extent % d == 0 && (d - tile).abs() <= 4).map(|d| d.to_string()).collect();
            self.error(
                fragment.origin,
                format!(
                    "a {}×{} block tile is not divisible by the {}×{} thread tile: its {extent} {what} are not a multiple of {tile}",
                    layout.rows, layout.cols, layout.thread_rows, layout.thread_cols
                ),
                Some(format!(
                    "make each block-tile extent a multiple of the thread-tile extent (thread tiles of {} divide {extent})",
                    divisors.join(", ")
                )),
            );
            return;
        }
        let [split_rows, split_cols] = layout.split;
        if split_rows < 1
            || split_cols < 1
            || layout.thread_rows % split_rows != 0
            || layout.thread_cols % split_cols != 0
            || layout.rows % split_rows != 0
            || layout.cols % split_cols != 0
        {
            self.error(
                fragment.origin,
                format!(
                    "split([{split_rows}, {split_cols}]) does not divide the {}×{} thread tile and the block tile",
                    layout.thread_rows, layout.thread_cols
                ),
                None,
            );
            return;
        }
        let threads = self.kernel.config.threads.count() as i64;
        if let Some([rows, cols]) = layout.warp_layout {
            let warp = i64::from(self.target.warp_size);
            if threads % warp != 0 {
                self.error(
                    self.kernel.config.threads_origin,
                    format!(
                        "threads = {}: `{}` has `.warp_layout([{rows}, {cols}])`, which arranges whole warps of {warp} threads, but {threads} threads are {} warp{} and {} thread{}",
                        self.kernel.config.threads,
                        fragment.name,
                        threads / warp,
                        if threads / warp == 1 { "" } else { "s" },
                        threads % warp,
                        if threads % warp == 1 { "" } else { "s" }
                    ),
                    Some(format!(
                        "use a multiple of {warp} threads (e.g. threads = {}) with a fragment to match, or drop `.warp_layout(..)`",
                        ((threads + warp - 1) / warp * warp).max(warp)
                    )),
                );
                return;
            }
            if rows * cols != 32 || layout.threads_down() % rows != 0 || layout.threads_across() % cols != 0 {
                self.error(
                    fragment.origin,
                    format!(
                        "warp_layout([{rows}, {cols}]) must hold 32 threads and tile the {} × {} grid of thread tiles",
                        layout.threads_down(),
                        layout.threads_across()
                    ),
                    Some("use [4, 8], [8, 4], [2, 16] or [16, 2] where the grid allows".into()),
                );
            }
        }
        if layout.threads() != threads {
            self.error(
                self.kernel.config.threads_origin,
                format!(
                    "the {}×{} fragment `{}` with {}×{} thread tiles needs {} × {} = {} threads, but threads = {}",
                    layout.rows,
                    layout.cols,
                    fragment.name,
                    layout.thread_rows,
                    layout.thread_cols,
                    layout.threads_down(),
                    layout.threads_across(),
                    layout.threads(),
                    self.kernel.config.threads
                ),
                Some(format!("use threads = {} or change the thread tile", layout.threads())),
            );
        }
        let registers = layout.thread_rows * layout.thread_cols + layout.thread_rows + layout.thread_cols;
        if registers > MAX_FRAGMENT_REGISTERS {
            self.error(
                fragment.origin,
                format!(
                    "a {}×{} thread tile needs {} accumulators + {} + {} operand registers = {registers}, over the {MAX_FRAGMENT_REGISTERS} a thread can spare of its 255",
                    layout.thread_rows,
                    layout.thread_cols,
                    layout.thread_rows * layout.thread_cols,
                    layout.thread_rows,
                    layout.thread_cols
                ),
                Some("use a smaller thread tile, e.g. thread_tile([8, 8])".into()),
            );
        }
    }

    /// A `.warpgroup_tile([64, WN])` fragment: wgmma's m64nNk16 accumulators (N a multiple of
    /// 8 up to 256), tiling the block tile with as many warpgroups as the block has, on sm_90a.
    fn warpgroup_fragment(&mut self, fragment: &Fragment, layout: &FragmentLayout, [group_rows, group_cols]: [i64; 2]) {
        if layout.rows <= 0 || layout.cols <= 0 || group_rows <= 0 || group_cols <= 0 {
            return;
        }
        let config = &self.kernel.config;
        if config.target != Some(90) || !config.arch_specific {
            let written = config.target.map_or("no target".to_string(), |cc| {
                format!("target = sm_{cc}{}", if config.arch_specific { "a" } else { "" })
            });
            let origin = if config.target.is_some() { config.target_origin } else { fragment.origin };
            self.error(
                origin,
                format!("`.warpgroup_tile(..)` multiplies with wgmma, which only sm_90a has ({written})"),
                Some("add `target = sm_90a` to #[tile_kernel(..)], or use `.warp_tile(..)` (mma.sync, every GPU since sm_80)".into()),
            );
        }
        if fragment.element != ElementType::F32 {
            self.error(
                fragment.origin,
                format!(
                    "a `.warpgroup_tile(..)` fragment accumulates in f32 (wgmma's .f32 accumulators); `{}` is {}",
                    fragment.name, fragment.element
                ),
                Some("declare it `fragment::<f32>(..)` and convert when storing it".into()),
            );
            return;
        }
        if group_rows != 64 || group_cols % 8 != 0 || group_cols > 256 {
            let bad = if group_rows != 64 {
                format!("{group_rows} rows, where a warpgroup's wgmma covers 64")
            } else {
                format!("{group_cols} columns, where wgmma takes N = 8, 16, .., 256")
            };
            self.error(
                fragment.origin,
                format!("a {group_rows}×{group_cols} warpgroup tile is not a wgmma m64nNk16 accumulator: {bad}"),
                Some(format!("use warpgroup_tile([64, {}])", (group_cols / 8).clamp(1, 32) * 8)),
            );
            return;
        }
        if layout.rows % group_rows != 0 || layout.cols % group_cols != 0 {
            self.error(
                fragment.origin,
                format!(
                    "the {}×{} block tile is not divisible by the {group_rows}×{group_cols} warpgroup tile",
                    layout.rows, layout.cols
                ),
                Some("make each block-tile extent a multiple of the warpgroup-tile extent".into()),
            );
            return;
        }
        // with `consumers = n` each group of compute threads holds a whole tile's fragment
        let groups = i64::from(self.kernel.consumer_groups());
        if layout.threads() * groups != self.kernel.config.threads.count() as i64 {
            self.error(
                self.kernel.config.threads_origin,
                format!(
                    "the {}×{} fragment `{}` with {group_rows}×{group_cols} warpgroup tiles needs {} warpgroups of 128 threads = {}, but threads = {}",
                    layout.rows,
                    layout.cols,
                    fragment.name,
                    layout.threads() / 128,
                    layout.threads(),
                    self.kernel.config.threads
                ),
                Some(format!("use threads = {} or change the warpgroup tile", layout.threads() * groups)),
            );
        }
    }

    /// A `.warp_tile([WM, WN])` fragment: warp tiles that split into mma.sync's 16 × 8 tiles,
    /// tile the block tile, and take as many warps as the block has.
    fn warp_fragment(&mut self, fragment: &Fragment, layout: &FragmentLayout, [warp_rows, warp_cols]: [i64; 2]) {
        if layout.rows <= 0 || layout.cols <= 0 || warp_rows <= 0 || warp_cols <= 0 {
            return;
        }
        if fragment.element != ElementType::F32 {
            self.error(
                fragment.origin,
                format!(
                    "a `.warp_tile(..)` fragment accumulates in f32 (mma.sync's .f32 accumulators); `{}` is {}",
                    fragment.name, fragment.element
                ),
                Some("declare it `fragment::<f32>(..)` and convert when storing it".into()),
            );
            return;
        }
        if warp_rows % 16 != 0 || warp_cols % 8 != 0 {
            let bad = if warp_rows % 16 != 0 {
                format!("{warp_rows} rows are not a multiple of 16")
            } else {
                format!("{warp_cols} columns are not a multiple of 8")
            };
            self.error(
                fragment.origin,
                format!("a {warp_rows}×{warp_cols} warp tile does not split into mma.sync's m16n8 tiles: {bad}"),
                Some(format!(
                    "use a warp tile of 16·i × 8·j, e.g. warp_tile([{}, {}])",
                    (warp_rows / 16).max(1) * 16,
                    (warp_cols / 8).max(1) * 8
                )),
            );
            return;
        }
        if layout.rows % warp_rows != 0 || layout.cols % warp_cols != 0 {
            self.error(
                fragment.origin,
                format!(
                    "the {}×{} block tile is not divisible by the {warp_rows}×{warp_cols} warp tile",
                    layout.rows, layout.cols
                ),
                Some("make each block-tile extent a multiple of the warp-tile extent".into()),
            );
            return;
        }
        // with `consumers = n` each group of compute threads holds a whole tile's fragment
        let groups = i64::from(self.kernel.consumer_groups());
        if layout.threads() * groups != self.kernel.config.threads.count() as i64 {
            self.error(
                self.kernel.config.threads_origin,
                format!(
                    "the {}×{} fragment `{}` with {warp_rows}×{warp_cols} warp tiles needs {} × {} warps = {} threads, but threads = {}",
                    layout.rows,
                    layout.cols,
                    fragment.name,
                    layout.warps_down(),
                    layout.warps_across(),
                    layout.threads(),
                    self.kernel.config.threads
                ),
                Some(format!("use threads = {} or change the warp tile", layout.threads() * groups)),
            );
        }
        // each lane: WM/16 · WN/8 · 4 accumulators, 4 registers of A per 16 rows, 2 of B per 8 columns
        let accumulators = layout.thread_rows * layout.thread_cols;
        let operands = warp_rows / 16 * 4 + warp_cols / 8 * 2;
        if accumulators + operands > MAX_FRAGMENT_REGISTERS {
            self.error(
                fragment.origin,
                format!(
                    "a {warp_rows}×{warp_cols} warp tile needs {accumulators} accumulators + {operands} operand registers per lane = {}, over the {MAX_FRAGMENT_REGISTERS} a thread can spare of its 255",
                    accumulators + operands
                ),
                Some("use a smaller warp tile, e.g. warp_tile([64, 64])".into()),
            );
        }
    }

    /// A tensor-core `mma`: the k extent splits into k-steps of the instruction, the operands
    /// are 16-bit floats of one type, and shared operands keep every 16-byte row `ldmatrix`
    /// reads aligned; `vector` moves 16 bytes of them per access.
    fn tensor_core_mma(&mut self, mma: &Mma, plan: &MmaPlan) {
        if let MmaInstruction::Wgmma { input, n } = plan.instruction {
            return self.wgmma(mma, plan, input, n);
        }
        let MmaInstruction::MmaSync { input, k: step } = plan.instruction else { return };
        if plan.k % step != 0 {
            self.error(
                mma.origin,
                format!(
                    "`{mma}` multiplies over k = {} but mma.sync on {input} takes k-steps of {step}: {} is not a multiple of {step}",
                    plan.k, plan.k
                ),
                Some(format!("make the k extent (BK) a multiple of {step}, e.g. {}", (plan.k / step).max(1) * step)),
            );
        }
        let declared = self.kernel.config.vector.get();
        let bytes = declared * input.size_bytes();
        // (a launch narrows the width for unaligned rows: cp.async then copies 4 or 8 bytes, or
        // single elements through registers)
        if bytes > 16 || (bytes < 16 && !self.kernel.config.narrowed) {
            self.error(
                self.kernel.config.vector_origin,
                format!(
                    "vector = {declared} with {input} operands of a tensor-core `mma` is {bytes}-byte accesses; their copies and ldmatrix rows move 16 bytes"
                ),
                Some(format!("use vector = {} ({} × {} B = 16 B)", 16 / input.size_bytes(), 16 / input.size_bytes(), input.size_bytes())),
            );
        }
        for (is_a, operand) in [(true, &plan.a), (false, &plan.b)] {
            let OperandPlan::Shared(shared) = operand else { continue };
            if !plan.instruction.ldmatrix_loads(is_a, !shared.transposed) {
                continue;
            }
            let layout = shared.layout;
            let row_bytes = layout.row_bytes();
            let view = if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() };
            let per_row = 16 / i64::from(input.size_bytes());
            if row_bytes % 16 != 0 {
                self.error(
                    mma.origin,
                    format!(
                        "`ldmatrix` reads 16-byte rows of `{view}`, but its rows are {} elements ({row_bytes} B) apart, so every other row starts off a 16-byte boundary",
                        layout.stride()
                    ),
                    Some(format!(
                        "pad `{}` to a multiple of {per_row} elements (`.pad({})`) or use `.swizzle_bytes(128)` instead of padding",
                        shared.buffer,
                        (per_row - layout.cols % per_row) % per_row + if layout.pad > 0 { per_row } else { 0 }
                    )),
                );
            } else if let Some(unit) = layout.swizzle.filter(|unit| unit * i64::from(input.size_bytes()) % 16 != 0) {
                self.error(
                    mma.origin,
                    format!(
                        "`.swizzle({unit})` on `{}` moves groups of {unit} {input} ({} B), which splits the 16-byte rows `ldmatrix` reads",
                        shared.buffer,
                        unit * i64::from(input.size_bytes())
                    ),
                    Some("use `.swizzle_bytes(128)`, which permutes whole 16-byte chunks".into()),
                );
            }
        }
    }

    /// A wgmma `mma`: k-steps of 16, both operands in shared memory in the hardware's swizzled
    /// panels (what a descriptor can address), filled by a cp.async pipeline.
    fn wgmma(&mut self, mma: &Mma, plan: &MmaPlan, input: ElementType, n: i64) {
        let step = plan.instruction.k_step();
        // `.unroll(n)`: k-steps per commit group, where the lanes load A a group at a time
        if let Some(group) = mma.unroll.map(i64::from) {
            let steps = plan.k / step;
            if !plan.lanes_load_a() {
                self.error(
                    mma.unroll_origin,
                    format!("`.unroll({group})` on `{mma}`: wgmma issues a k-tile's {steps} k-steps as one commit group; only a TF32 A the lanes load from shared memory is issued in groups of k-steps"),
                    Some("drop `.unroll(..)`".into()),
                );
            } else if group == 0 || steps % group != 0 {
                let divisors: Vec<String> = (1..=steps).filter(|d| steps % d == 0).map(|d| d.to_string()).collect();
                self.error(
                    mma.unroll_origin,
                    format!("`.unroll({group})`: commit groups of {group} k-steps do not divide the {steps} k-steps of `{mma}`"),
                    Some(format!("group by one of {}", divisors.join(", "))),
                );
            }
        }
        if plan.k % step != 0 {
            self.error(
                mma.origin,
                format!("`{mma}` multiplies over k = {} but wgmma on {input} takes k-steps of {step}", plan.k),
                Some(format!("make the k extent (BK) a multiple of {step}, e.g. {}", (plan.k / step).max(1) * step)),
            );
        }
        let pipelined = self.kernel.statements().iter().any(|s| {
            matches!(s, Statement::Pipeline(p) if p.stages >= 3 && p.body.iter().any(|b| matches!(b, Statement::Mma(m) if m == mma)))
        });
        if !pipelined {
            self.error(
                mma.origin,
                format!("`{mma}` on wgmma reads shared tiles that a cp.async pipeline fills: put it in `for k in pipeline(.., stages = 3)` (or more)"),
                None,
            );
        }
        for (is_a, operand) in [(true, &plan.a), (false, &plan.b)] {
            let name = if is_a { "A" } else { "B" };
            let shared = match operand {
                OperandPlan::Shared(shared) => shared,
                OperandPlan::Global(global) => {
                    self.error(
                        mma.origin,
                        format!(
                            "wgmma reads operand {name} from shared memory through a descriptor; `{}` is a global tile",
                            global.tensor
                        ),
                        Some(
                            "copy the tile into a `shared::<T>([..]).swizzle_bytes(128).panels()` buffer first".into(),
                        ),
                    );
                    continue;
                }
                OperandPlan::Fragment(fragment) if input == ElementType::F32 => {
                    self.error(
                        mma.origin,
                        format!(
                            "TF32 wgmma takes A from shared memory here: `{}` in registers would need its f32 values in wgmma's TF32 register layout, which tessera does not pack",
                            fragment.fragment
                        ),
                        Some("stage the fragment through a shared buffer, or multiply it on 16-bit operands".into()),
                    );
                    continue;
                }
                OperandPlan::Fragment(_) => continue,
            };
            let layout = shared.layout;
            let view = if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() };
            let operand_origin = if is_a { mma.a.origin() } else { mma.b.origin() };
            let Some(panel_cols) = layout.panel_cols() else {
                self.error(
                    operand_origin,
                    format!("wgmma reads `{view}` through a descriptor, which addresses the hardware's swizzled panels only"),
                    Some(format!(
                        "declare `{}` with `.swizzle_bytes(128).panels()` (a [{}, {}] {} tile: {} panel(s) of 128 B rows)",
                        shared.buffer,
                        layout.rows,
                        layout.cols,
                        layout.element,
                        (layout.cols * i64::from(layout.element.size_bytes()) / 128).max(1)
                    )),
                );
                continue;
            };
            // stored with k along the rows' contiguous columns (K-major), or with M / N there
            // (MN-major): then each instruction's 64 rows of A or n columns of B are whole panels
            let k_major = shared.transposed != is_a;
            // the PTX ISA lets only 16-bit operands be transposed (MN-major) by wgmma; an MN-major
            // TF32 A is loaded into wgmma's A registers by the lanes instead
            if !k_major && input == ElementType::F32 {
                if is_a {
                    continue;
                }
                self.error(
                    operand_origin,
                    format!(
                        "TF32 wgmma reads operand B only K-major (k along its rows' contiguous columns); `{view}` holds N along them"
                    ),
                    Some(format!(
                        "store B as [N, K] (`shared::<f32>([BN, BK])`, copied from an [N, K] tensor: Bᵀ) and multiply `{0}.t()`, or compute Cᵀ = Bᵀ·Aᵀ: `mma(&{0}.t(), &a_s.t(), &mut acc_t)` (an MN-major A is loaded into wgmma's registers) and `copy(&acc_t.t(), c.tile(..))`",
                        shared.buffer
                    )),
                );
                continue;
            }
            let extent = if is_a { 64 } else { n };
            if !k_major && extent % panel_cols != 0 {
                self.error(
                    mma.origin,
                    format!(
                        "wgmma reads {extent} {} of `{view}` per instruction, stored along its rows in panels of {panel_cols} {input}: not whole panels",
                        if is_a { "rows" } else { "columns" }
                    ),
                    Some(format!("use a smaller swizzle span, or a warpgroup tile N that is a multiple of {panel_cols}")),
                );
            }
        }
    }

    /// `.unroll(n)`: n k-steps per loop trip must tile the k extent, and with double-buffered
    /// fragments n must be even, so every trip starts on the same register set.
    fn mma_unroll(&mut self, mma: &Mma, plan: &MmaPlan) {
        let Some(steps) = mma.unroll.map(i64::from) else { return };
        let k = plan.k;
        if steps == 0 || k % steps != 0 {
            let divisors: Vec<String> = (1..=k).filter(|d| k % d == 0).map(|d| d.to_string()).collect();
            self.error(
                mma.unroll_origin,
                format!("`.unroll({steps})` does not divide the {k} k-steps of `{mma}`"),
                Some(format!("unroll by one of {}", divisors.join(", "))),
            );
        } else if mma.double_buffered_fragments && steps % 2 == 1 && steps != k {
            self.error(
                mma.unroll_origin,
                format!(
                    "`.unroll({steps})` with `.double_buffer_fragments()`: an odd number of k-steps per trip would start every other trip on the wrong register set"
                ),
                Some(format!("unroll by an even number, e.g. `.unroll({})`", if k % (steps * 2) == 0 { steps * 2 } else { k })),
            );
        }
    }

    /// With `vector = w > 1` the kernel asks for w-wide accesses; an mma operand read along
    /// its rows gets them unless the buffer's padding or swizzle misaligns the rows. That
    /// would silently fall back to narrower loads, so it is an error here. (Copies into such
    /// buffers keep their documented fallback to scalar shared accesses, shown in REPORT:
    /// the padded transposes rely on it.)
    fn mma_vectors(&mut self, plan: &MmaPlan) {
        let declared = i64::from(self.kernel.config.vector.get());
        if declared == 1 {
            return;
        }
        for (is_a, operand) in [(true, &plan.a), (false, &plan.b)] {
            let (natural, actual) = plan.load_widths(is_a);
            let wanted = natural.min(declared);
            let OperandPlan::Shared(shared) = operand else { continue };
            if actual >= wanted {
                continue;
            }
            let Some(buffer) = self.kernel.shared(&shared.buffer) else { continue };
            let layout = shared.layout;
            let element = layout.element;
            let bits = wanted * i64::from(element.size_bytes()) * 8;
            let view = if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() };
            let (cause, fix) = match layout.swizzle {
                Some(unit) if unit % wanted != 0 => (
                    format!(
                        "`.swizzle({unit})` moves groups of {unit} {element} within each row of `{}`",
                        shared.buffer
                    ),
                    format!("use a swizzle unit that is a multiple of {wanted}"),
                ),
                _ => (
                    format!(
                        "`.pad({})` makes each row of `{}` {} elements ({} B) long",
                        layout.pad,
                        shared.buffer,
                        layout.stride(),
                        layout.stride() * i64::from(element.size_bytes())
                    ),
                    format!(
                        "pad by a multiple of {wanted} (`.pad({})`) to keep rows {}-byte aligned",
                        (layout.pad + wanted - 1) / wanted * wanted,
                        wanted * i64::from(element.size_bytes())
                    ),
                ),
            };
            self.error(
                buffer.origin,
                format!(
                    "{cause}, so `mma` cannot read a thread's {wanted} values of `{view}` with one {bits}-bit load: vector = {declared} asks for {bits}-bit access, and these reads would fall back to {}-bit ones",
                    actual * i64::from(element.size_bytes()) * 8
                ),
                Some(format!("{fix}, or declare vector = 1 to accept narrower reads")),
            );
        }
    }

    fn expression(&mut self, expr: &Expr, bound: &[String]) {
        for (name, origin) in expr.names() {
            if !bound.iter().any(|b| b == name) {
                let known = bound.join(", ");
                self.error(origin, format!("unknown name `{name}`"), Some(format!("names in scope here: {known}")));
            }
        }
    }

    /// `.panels()`: a byte swizzle to cut the rows by, no padding, whole panels of whole
    /// 8-row atoms (each panel then starts on the 1024-byte boundary the hardware swizzle needs).
    fn panels(&mut self, buffer: &SharedBuffer, layout: &SharedLayout) {
        let Some(span) = layout.swizzle_bytes else {
            self.error(
                buffer.origin,
                format!("`.panels()` on `{}` needs a swizzle span to cut the rows into", buffer.name),
                Some("write `.swizzle_bytes(128).panels()` (or 64, 32)".into()),
            );
            return;
        };
        let element = i64::from(layout.element.size_bytes());
        let row_bytes = layout.cols * element;
        if layout.pad != 0 || row_bytes % span != 0 || layout.rows % 8 != 0 {
            self.error(
                buffer.origin,
                format!(
                    "`.panels()` on `{}` [{}, {}] {}: rows of {row_bytes} B{} must split into {span}-byte panels of whole 8-row atoms ({} rows)",
                    buffer.name,
                    layout.rows,
                    layout.cols,
                    layout.element,
                    if layout.pad != 0 { format!(" padded by {}", layout.pad) } else { String::new() },
                    layout.rows
                ),
                Some(format!(
                    "use a multiple of {} columns and of 8 rows, without `.pad(..)`",
                    span / element
                )),
            );
        }
    }

    fn shared_buffer(&mut self, buffer: &SharedBuffer, scope: &Scope) {
        if buffer.shape.len() != 2 {
            self.error(
                buffer.origin,
                format!("shared buffers are 2-D; `{}` has {} dimensions", buffer.name, buffer.shape.len()),
                Some("write shared::<f32>([ROWS, COLS])".into()),
            );
            return;
        }
        for extent in &buffer.shape {
            match extent.eval(scope) {
                Ok(value) if value > 0 => {}
                Ok(value) => {
                    self.error(extent.origin, format!("shared extent `{extent}` is {value}; it must be positive"), None)
                }
                Err(_) => self.error(
                    extent.origin,
                    format!("shared extent `{extent}` is not a compile-time constant"),
                    Some("use a constant from consts(..)".into()),
                ),
            }
        }
        let Some(layout) = SharedLayout::with_scope(buffer, scope) else { return };
        if layout.rows <= 0 || layout.cols <= 0 {
            return;
        }
        if let Some(unit) = layout.swizzle {
            let groups = if unit > 0 { layout.cols / unit } else { 0 };
            if unit <= 0 || layout.cols % unit != 0 || groups & (groups - 1) != 0 {
                self.error(
                    buffer.origin,
                    format!(
                        "swizzle({unit}) on rows of {} elements: a row must split into a power-of-two number of {unit}-element groups",
                        layout.cols
                    ),
                    Some("use a unit that splits the columns into 2, 4, 8, 16 or 32 groups".into()),
                );
            }
        }
        if let Some(span) = layout.swizzle_bytes {
            let row_bytes = layout.row_bytes();
            if layout.swizzle.is_some() || row_bytes % span != 0 {
                let cause = if layout.swizzle.is_some() {
                    "it cannot be combined with `.swizzle(unit)`".to_string()
                } else {
                    format!(
                        "each row is {} elements × {} B = {row_bytes} B, not a multiple of {span} B, so chunks would move between rows",
                        layout.stride(),
                        layout.element.size_bytes()
                    )
                };
                self.error(
                    buffer.origin,
                    format!("`.swizzle_bytes({span})` on `{}`: {cause}", buffer.name),
                    Some(format!(
                        "use rows of a multiple of {span} B (e.g. {} {} elements) or a smaller span (`.swizzle_bytes({})`)",
                        span / i64::from(layout.element.size_bytes()),
                        layout.element,
                        (span / 2).max(32)
                    )),
                );
            }
        }
        if buffer.panels {
            self.panels(buffer, &layout);
        }
        let stages = i64::from(self.kernel.buffer_stages(&buffer.name));
        // Buffers start 16-byte aligned (panels 1024), as SharedMemoryPlan lays them out.
        let alignment = layout.alignment();
        self.shared_bytes = (self.shared_bytes + alignment - 1) / alignment * alignment + layout.bytes() * stages;
        let limit = i64::from(self.target.opt_in_shared_memory_bytes);
        if self.shared_bytes > limit && !self.shared_reported {
            self.shared_reported = true;
            let this = if stages > 1 {
                format!("{stages} stages × {} × {} × {} B", layout.rows, layout.stride(), layout.element.size_bytes())
            } else {
                format!("{} × {} × {} B", layout.rows, layout.stride(), layout.element.size_bytes())
            };
            let bigger: Vec<String> = Target::KNOWN
                .iter()
                .filter(|t| i64::from(t.opt_in_shared_memory_bytes) >= self.shared_bytes)
                .map(|t| format!("target = {} allows {} B", t.name(), t.opt_in_shared_memory_bytes))
                .collect();
            let hint = if bigger.is_empty() || self.kernel.config.target.is_some() {
                "shrink the tile, its padding or its pipeline stages".to_string()
            } else {
                format!(
                    "shrink the tile, its padding or its pipeline stages; or validate for one GPU ({})",
                    bigger.join(", ")
                )
            };
            self.error(
                buffer.origin,
                format!(
                    "shared memory {} B ({:.1} KiB; `{}`: {this}) exceeds the {limit} B ({} KiB) a block may use on {}, even with dynamic shared memory",
                    self.shared_bytes,
                    self.shared_bytes as f64 / 1024.0,
                    buffer.name,
                    limit / 1024,
                    self.target.label
                ),
                Some(hint),
            );
        }
    }

    fn copy(&mut self, copy: &TileCopy, bound: &[String], scope: &Scope) {
        for operand in [&copy.src, &copy.dst] {
            match operand {
                Operand::Global(tile) => {
                    for expr in tile.at.iter().chain(&tile.index).chain(&tile.extent) {
                        self.expression(expr, bound);
                    }
                }
                Operand::Shared(shared) => {
                    if self.kernel.shared(&shared.buffer).is_some() && !self.declared.contains(&shared.buffer) {
                        self.error(
                            shared.origin,
                            format!("shared buffer `{}` is used before its `let`", shared.buffer),
                            None,
                        );
                    }
                }
                Operand::Fragment(_) => {}
            }
        }
        if matches!(copy.src, Operand::Fragment(_)) {
            if let Err(errors) = EpiloguePlan::new(self.kernel, copy, scope) {
                for error in errors {
                    self.diagnostics.push(error);
                }
            }
            return;
        }
        if copy.axpby.is_some() {
            self.error(copy.origin, "`.axpby(..)` applies to copies of a fragment into a global tile".into(), None);
        }
        if copy.map.is_some() {
            self.error(copy.origin, "`.map(..)` applies to copies of a fragment into a global tile".into(), None);
        }
        match CopyPlan::new(self.kernel, copy, scope) {
            Ok(plan) => self.buffer_symbols(copy, &plan),
            Err(errors) => {
                for error in errors {
                    self.diagnostics.push(error);
                }
            }
        }
    }

    /// A buffer filled from one tensor and emptied into another carries the first one's
    /// shape symbols: the second must be bounded by the same ones, or its guards are wrong.
    fn buffer_symbols(&mut self, copy: &TileCopy, plan: &CopyPlan) {
        match (&plan.src, &plan.dst) {
            (OperandPlan::Global(global), OperandPlan::Shared(shared)) => {
                if let Some((row, col)) = plan.src.logical_symbols() {
                    let (row, col) = (row.unwrap_or_default().to_string(), col.to_string());
                    let physical = if shared.transposed { (col, row) } else { (row, col) };
                    self.buffers.insert(shared.buffer.clone(), (physical, global.tensor.clone()));
                }
            }
            (OperandPlan::Shared(shared), OperandPlan::Global(global)) => {
                let (Some((known, from)), Some((row, col))) =
                    (self.buffers.get(&shared.buffer), plan.dst.logical_symbols())
                else {
                    return;
                };
                let (row, col) = (row.unwrap_or_default().to_string(), col.to_string());
                let wanted = if shared.transposed { (known.1.clone(), known.0.clone()) } else { known.clone() };
                if wanted != (row.clone(), col.clone()) {
                    let message = format!(
                        "`{}` holds a tile of `{from}` bounded by ({}, {}), but this copy writes it to `{}` bounded by ({row}, {col})",
                        shared.buffer, wanted.0, wanted.1, global.tensor
                    );
                    self.error(
                        copy.origin,
                        message,
                        Some(
                            "use the same shape symbols on both tensors (a transpose swaps them: x: (R, C), y: (C, R))"
                                .into(),
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Access, Config, Constant, ElementType, GlobalTensor, GridBinding, ItemOrder, ParamKind, ThreadBlock,
        TileOperand, VectorWidth,
    };

    fn copy_kernel(threads: u32, vector: VectorWidth, tile: i64) -> Kernel {
        let tensor = |name: &str, access| Param {
            name: name.into(),
            origin: Origin::default(),
            kind: ParamKind::Global(GlobalTensor {
                element: ElementType::F32,
                access,
                shape: vec![("N".into(), Origin::default())],
            }),
        };
        let operand = |tensor: &str| {
            Operand::Global(TileOperand {
                tensor: tensor.into(),
                at: vec![],
                index: vec![Expr::name("bx")],
                extent: vec![Expr::name("TILE")],
                transposed: false,
                origin: Origin::default(),
            })
        };
        Kernel {
            name: "copy".into(),
            doc: None,
            origin: Origin::default(),
            params: vec![tensor("x", Access::ReadOnly), tensor("y", Access::Writable)],
            config: Config {
                threads: ThreadBlock::linear(threads),
                vector,
                constants: vec![Constant::new("TILE", tile)],
                ..Config::default()
            },
            body: vec![
                Statement::Grid(GridBinding {
                    vars: vec!["bx".into()],
                    extents: vec![Expr::ceil_div(Expr::name("N"), Expr::name("TILE"))],
                    stream_k: false,
                    grouped: None,
                    zigzag: false,
                    dynamic: false,
                    origin: Origin::default(),
                }),
                Statement::Copy(TileCopy {
                    src: operand("x"),
                    dst: operand("y"),
                    order: ItemOrder::RowMajor,
                    axpby: None,
                    map: None,
                    by_tma: false,
                    origin: Origin::default(),
                }),
            ],
        }
    }

    fn messages(kernel: &Kernel) -> Vec<String> {
        match validate(kernel, &Target::PORTABLE) {
            Ok(()) => vec![],
            Err(d) => d.iter().map(|d| d.message.clone()).collect(),
        }
    }

    #[test]
    fn a_valid_copy_has_no_diagnostics() {
        assert_eq!(messages(&copy_kernel(256, VectorWidth::W4, 1024)), Vec::<String>::new());
    }

    #[test]
    fn zero_threads_is_one_diagnostic_not_a_division_by_zero() {
        let found = messages(&copy_kernel(0, VectorWidth::W4, 1024));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("at least one thread"));
    }

    #[test]
    fn a_tile_that_would_spill_its_staging_registers_is_refused() {
        let found = messages(&copy_kernel(32, VectorWidth::W4, 4096));
        assert!(found.iter().any(|m| m.contains("stages 128 elements per thread")), "{found:?}");
        assert_eq!(messages(&copy_kernel(32, VectorWidth::W4, 2048)), Vec::<String>::new());
    }

    #[test]
    fn a_reserved_name_is_refused() {
        let mut kernel = copy_kernel(256, VectorWidth::W4, 1024);
        kernel.config.constants.push(Constant::new("THREADS", 3));
        assert!(messages(&kernel).iter().any(|m| m.contains("`THREADS` is reserved")));
    }

    #[test]
    fn the_name_of_a_matrix_leading_dimension_is_reserved() {
        let mut kernel = copy_kernel(256, VectorWidth::W4, 1024);
        // 1-D tensors get no leading dimension: the name is free
        kernel.config.constants.push(Constant::new("x_ld", 3));
        assert_eq!(messages(&kernel), Vec::<String>::new());
        if let ParamKind::Global(tensor) = &mut kernel.params[0].kind {
            tensor.shape.insert(0, ("R".into(), Origin::default()));
        }
        let found = messages(&kernel);
        assert!(
            found.iter().any(|m| m.contains("`x_ld` is reserved: the generated CUDA passes `x`'s leading dimension")),
            "{found:?}"
        );
    }
}
