//! The body's statements in order: what each may name, where thread code may reach, the
//! expressions of tile indices.

use super::*;

impl Checker<'_> {
    pub(super) fn body(&mut self) {
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
        bound.extend(["THREADS".to_string(), "VECTOR".to_string()]);
        let body = self.kernel.body.clone();
        self.statements(&body, &mut bound, &mut scope, false);
        let mut found = Vec::new();
        crate::thread_code::check_body(self.kernel, &body, &mut TypeEnv::of_kernel(self.kernel), &mut found);
        for diagnostic in found {
            self.diagnostics.push(diagnostic);
        }
    }

    /// A `let` or loop variable of thread code may not take a name the generated CUDA declares.
    pub(super) fn reserved_locals(&mut self, thread: &ThreadStatement) {
        let (name, nested): (Option<&String>, Vec<&ThreadStatement>) = match &thread.kind {
            ThreadStatementKind::Let { name, .. }
            | ThreadStatementKind::LetArray { name, .. }
            | ThreadStatementKind::BlockReductions { name, .. } => (Some(name), vec![]),
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

    pub(super) fn statements(&mut self, body: &[Statement], bound: &mut Vec<String>, scope: &mut Scope, nested: bool) {
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

    pub(super) fn expression(&mut self, expr: &Expr, bound: &[String]) {
        for (name, origin) in expr.names() {
            if !bound.iter().any(|b| b == name) {
                let known = bound.join(", ");
                self.error(origin, format!("unknown name `{name}`"), Some(format!("names in scope here: {known}")));
            }
        }
    }
}
