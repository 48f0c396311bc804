//! Pipelines and how blocks take tiles: producers and consumers, the order of the tiles, TMA
//! copies and stores, stream-K, what a pipeline's body may hold.

use super::*;

impl Checker<'_> {
    /// `producers = n`: a warpgroup-aligned set of copying threads beside a 1-D block, a
    /// cp.async ring, sm_90's `setmaxnreg`, and nothing after the loop but the fragment's
    /// copies out (the producers are gone by then: a barrier there would wait for them).
    pub(super) fn producers(&mut self) {
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
    pub(super) fn consumers_need_producers(&mut self) {
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
    pub(super) fn tile_order(&mut self) {
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
    pub(super) fn tma_copies(&mut self) {
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
    pub(super) fn stream_k(&mut self) {
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
    pub(super) fn pipeline_bodies(&mut self) {
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
    pub(super) fn staged_buffers_in_thread_code(&mut self) {
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

    /// `.by_tma()`: the copy out of a wgmma fragment into a tile of a 2-D tensor of f32, f16 or
    /// bf16, in a kernel whose pipeline copies by TMA (its producers and tensor maps); the
    /// values are what `.axpby` makes of them (`.map(..)` is not staged).
    pub(super) fn tma_stores(&mut self) {
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
            let group_rows = fragment
                .and_then(|f| FragmentLayout::of(f, self.kernel))
                .and_then(|layout| layout.warpgroup_tile)
                .map_or(64, |[rows, _]| rows);
            if group_rows > 64 {
                self.error(
                    copy.origin,
                    format!("`{copy}`: `.by_tma()` stages one m64 tile a warpgroup (each warp its 16 rows); this fragment's warpgroups hold {group_rows} rows"),
                    Some("drop `.by_tma()`, or use a `.warpgroup_tile([64, WN])` fragment".into()),
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
    pub(super) fn persistent_clusters(&mut self, written: &str) {
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
}
