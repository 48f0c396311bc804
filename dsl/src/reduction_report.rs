//! The reductions thread code calls, for the static analysis: what crosses lanes, warps or the
//! blocks of a cluster, in shuffle rounds and barriers — the part of a row kernel's time that
//! its memory accesses do not show.

use serde::Serialize;

use crate::{
    check_thread_statement, with_block_reduction_rounds, ElementType, Intrinsic, Kernel, Statement, ThreadExpr,
    ThreadExprKind, ThreadStatement, ThreadStatementKind, ThreadType, TypeEnv, Varying,
};

/// One reduction of thread code: `warp_sum(v, 8)`, `block_max(m)`, `cluster_sum(s)`, ..
///
/// ```
/// # use tessera_dsl::{ReductionReport, ReductionScope};
/// let group = ReductionReport::new("let row_max = warp_max(m, LANES);", "warp_max", ReductionScope::Lanes(8));
/// assert_eq!(group.to_string(), "reduce   warp_max over groups of 8 lanes (4 a warp): 3 shuffle rounds");
/// let block = ReductionReport::new("let mean = block_sum(s) / C as f32;", "block_sum", ReductionScope::Block { threads: 256 });
/// assert_eq!((block.shuffle_rounds, block.barriers), (10, 2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReductionReport {
    /// The innermost statement holding it, as written.
    pub statement: String,
    /// The intrinsic: `warp_sum`, `block_max`, `cluster_softmax_scale`, ..
    pub function: String,
    pub scope: ReductionScope,
    /// Shuffle rounds one thread takes: log2 of the lanes; a block's warp butterfly, and a
    /// second one over the warps' results when it has several (a cluster's block reduction too).
    pub shuffle_rounds: u32,
    /// `__syncthreads` one thread passes: two for a block of several warps (the warps' results
    /// written, then read before the buffer is reused), and a cluster's block reduction.
    pub barriers: u32,
    /// How many values this round reduces: 1, or up to four block reductions made together
    /// (see [`crate::BlockReductionGroup`]), their barriers shared.
    pub reduced_together: u32,
}

/// Which threads a reduction spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReductionScope {
    /// Each aligned group of this many lanes (32: the warp): a shuffle-xor butterfly.
    Lanes(u32),
    /// The block's threads: each warp's butterfly, the warps' results through shared memory,
    /// a second butterfly.
    Block { threads: u32 },
    /// Every thread of the cluster: block reductions, then the blocks' results across
    /// distributed shared memory.
    Cluster,
}

impl ReductionReport {
    /// The reduction `function` over `scope` in `statement`, with its rounds and barriers.
    pub fn new(statement: impl Into<String>, function: impl Into<String>, scope: ReductionScope) -> Self {
        let (shuffle_rounds, barriers) = match scope {
            ReductionScope::Lanes(lanes) => (lanes.max(1).ilog2(), 0),
            ReductionScope::Block { threads } if threads <= 32 => (5, 0),
            ReductionScope::Block { .. } | ReductionScope::Cluster => (10, 2),
        };
        Self {
            statement: statement.into(),
            function: function.into(),
            scope,
            shuffle_rounds,
            barriers,
            reduced_together: 1,
        }
    }

    /// `together` block reductions made in one round, its barriers shared.
    ///
    /// ```
    /// # use tessera_dsl::{ReductionReport, ReductionScope};
    /// let block = ReductionScope::Block { threads: 256 };
    /// let round = ReductionReport::new("let sums = [block_sum(s), block_sum(q)];", "block_sum", block).together(2);
    /// assert_eq!((round.shuffle_rounds, round.barriers), (10, 2));
    /// assert!(round.to_string().starts_with("reduce   2 × block_sum over the block's 256 threads in one round"));
    /// ```
    pub fn together(mut self, values: u32) -> Self {
        self.reduced_together = values;
        self
    }
}

impl std::fmt::Display for ReductionReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rounds = self.shuffle_rounds;
        match self.scope {
            ReductionScope::Lanes(32) => write!(f, "reduce   {} over the warp: {rounds} shuffle rounds", self.function),
            ReductionScope::Lanes(lanes) => write!(
                f,
                "reduce   {} over groups of {lanes} lanes ({} a warp): {rounds} shuffle rounds",
                self.function,
                32 / lanes.max(1)
            ),
            ReductionScope::Block { threads } if threads <= 32 => {
                write!(f, "reduce   {} over the block's {threads} threads, one warp: {rounds} shuffle rounds", self.function)
            }
            ReductionScope::Block { threads } if self.reduced_together > 1 => write!(
                f,
                "reduce   {} × {} over the block's {threads} threads in one round: 5 shuffle rounds each, the {} warps' results through shared memory, 5 more, 2 barriers",
                self.reduced_together,
                self.function,
                threads.div_ceil(32),
            ),
            ReductionScope::Block { threads } => write!(
                f,
                "reduce   {} over the block's {threads} threads: 5 shuffle rounds, the {} warps' results through shared memory, 5 more, 2 barriers",
                self.function,
                threads.div_ceil(32)
            ),
            ReductionScope::Cluster => write!(
                f,
                "reduce   {} over the cluster: a block reduction (2 barriers), then the blocks' results across distributed shared memory",
                self.function
            ),
        }
    }
}

/// Every reduction of the kernel's thread code, in the order written.
pub(crate) fn reductions(kernel: &Kernel) -> Vec<ReductionReport> {
    let threads = kernel.launch_threads() as u32;
    let env = TypeEnv::of_kernel(kernel);
    let mut out = Vec::new();
    // as rendered: groups of block reductions in one round each
    for statement in with_block_reduction_rounds(kernel).statements() {
        if let Statement::Thread(thread) = statement {
            collect(thread, threads, &env, &mut out);
        }
    }
    out
}

fn collect(statement: &ThreadStatement, threads: u32, env: &TypeEnv, out: &mut Vec<ReductionReport>) {
    if let ThreadStatementKind::BlockReductions { function, values, .. } = &statement.kind {
        // the calls as written, not the register array the lowering reduces them in
        let calls: Vec<String> = values.iter().map(|value| format!("{}({value})", function.name())).collect();
        let report = ReductionReport::new(calls.join(", "), function.name(), ReductionScope::Block { threads });
        out.push(report.together(values.len() as u32));
        return;
    }
    // the statement's own expressions; the statements inside an `if` or a loop report themselves
    let (own, inner): (Vec<_>, Vec<&ThreadStatement>) = match &statement.kind {
        ThreadStatementKind::If { condition, then, otherwise } => {
            (vec![condition], then.iter().chain(otherwise).collect())
        }
        ThreadStatementKind::For { start, end, step, body, .. } => {
            (std::iter::once(start).chain(Some(end)).chain(step).collect(), body.iter().collect())
        }
        _ => (statement.expressions(), Vec::new()),
    };
    for expr in own {
        expr.walk(&mut |e| {
            let ThreadExprKind::Call { function, args } = &e.kind else { return };
            let reduction_scope = match function {
                // a valid kernel's lane count (validation rejected any other): the warp without one
                Intrinsic::WarpSum | Intrinsic::WarpMax => {
                    let lanes = args.get(1).map_or(Ok(32), |lanes| env.lane_count(*function, lanes));
                    ReductionScope::Lanes(lanes.unwrap_or(32) as u32)
                }
                Intrinsic::BlockSum | Intrinsic::BlockMax => ReductionScope::Block { threads },
                Intrinsic::ClusterSum | Intrinsic::ClusterMax | Intrinsic::ClusterSoftmaxScale => {
                    ReductionScope::Cluster
                }
                _ => return,
            };
            out.push(ReductionReport::new(statement.to_string(), function.name(), reduction_scope));
        });
    }
    for statement in inner {
        collect(statement, threads, env, out);
    }
}

/// Bytes of static shared memory a kernel's block reductions declare beside its buffers: each
/// reduction helper a kernel instantiates keeps 32 warp slots a value it reduces together, one
/// array for each type and count (so repeated `block_sum`s of f32 share 128 bytes, and a round
/// of two f64 sums takes 512). Cluster reductions make a block reduction first.
///
/// ```
/// use tessera_dsl::*;
/// let call = |function, value| ThreadExpr::new(ThreadExprKind::Call { function, args: vec![ThreadExpr::int(value)] });
/// let let_ = |name: &str, init| {
///     Statement::Thread(ThreadStatement::new(ThreadStatementKind::Let { name: name.into(), mutable: false, ty: None, init }))
/// };
/// // two i32 block sums, apart (one reads the other), then a block maximum
/// let a = let_("a", call(Intrinsic::BlockSum, 1));
/// let b = let_("b", ThreadExpr::new(ThreadExprKind::Call { function: Intrinsic::BlockSum, args: vec![ThreadExpr::name("a")] }));
/// let m = let_("m", call(Intrinsic::BlockMax, 3));
/// let kernel = Kernel { name: "k".into(), doc: None, origin: Origin::default(), params: vec![],
///     config: Config::default(), body: vec![a, b, m] };
/// assert_eq!(reduction_shared_bytes(&kernel), 32 * 4 + 32 * 4);  // one array each: block_sum's, block_max's
/// ```
pub fn reduction_shared_bytes(kernel: &Kernel) -> i64 {
    let lowered = with_block_reduction_rounds(kernel);
    let mut env = TypeEnv::of_kernel_body(&lowered);
    let mut arrays: Vec<ReductionArray> = Vec::new();
    for statement in lowered.statements() {
        if let Statement::Thread(thread) = statement {
            reduction_arrays(thread, &mut env, &mut arrays);
        }
    }
    arrays.iter().map(|(_, element, values)| 32 * values.unwrap_or(1) as i64 * i64::from(element.size_bytes())).sum()
}

/// One static array of a reduction helper: the helper (`block_sum` or `block_max`), the type
/// it reduces, and how many values a round reduces together (`None`: the one-value helper).
type ReductionArray = (Intrinsic, ElementType, Option<usize>);

/// The reduction helpers' arrays `statement` instantiates, added to `arrays` once each, `env`
/// binding its locals as they are declared.
fn reduction_arrays(statement: &ThreadStatement, env: &mut TypeEnv, arrays: &mut Vec<ReductionArray>) {
    let mut found: Vec<ReductionArray> = Vec::new();
    match &statement.kind {
        ThreadStatementKind::BlockReductions { function, values, .. } => {
            if let Some(element) = values.first().and_then(|value| element_of(env, value)) {
                found.push((*function, element, Some(values.len())));
            }
            check_thread_statement(statement, env, &mut Varying::default(), None, &mut Vec::new());
        }
        ThreadStatementKind::If { condition, then, otherwise } => {
            found.extend(arrays_of_calls(condition, env));
            for branch in [then, otherwise] {
                let mut inner = env.clone();
                for s in branch {
                    reduction_arrays(s, &mut inner, arrays);
                }
            }
        }
        ThreadStatementKind::For { var, start, end, step, body } => {
            for bound in [Some(start), Some(end), step.as_ref()].into_iter().flatten() {
                found.extend(arrays_of_calls(bound, env));
            }
            let mut inner = env.clone();
            inner.bind_value(var, ThreadType::I32, false);
            for s in body {
                reduction_arrays(s, &mut inner, arrays);
            }
        }
        _ => {
            for expr in statement.expressions() {
                found.extend(arrays_of_calls(expr, env));
            }
            // bind what it declares (its diagnostics are validation's)
            check_thread_statement(statement, env, &mut Varying::default(), None, &mut Vec::new());
        }
    }
    for array in found {
        if !arrays.contains(&array) {
            arrays.push(array);
        }
    }
}

/// The arrays of the block (and cluster) reductions called in `expr`.
fn arrays_of_calls(expr: &ThreadExpr, env: &TypeEnv) -> Vec<ReductionArray> {
    let mut found = Vec::new();
    expr.walk(&mut |e| {
        let ThreadExprKind::Call { function, args } = &e.kind else { return };
        let Some(element) = args.first().and_then(|value| element_of(env, value)) else { return };
        match function {
            Intrinsic::BlockSum | Intrinsic::ClusterSum => found.push((Intrinsic::BlockSum, element, None)),
            Intrinsic::BlockMax | Intrinsic::ClusterMax => found.push((Intrinsic::BlockMax, element, None)),
            Intrinsic::ClusterSoftmaxScale => {
                found.push((Intrinsic::BlockMax, element, None));
                found.push((Intrinsic::BlockSum, element, None));
            }
            _ => {}
        }
    });
    found
}

fn element_of(env: &TypeEnv, value: &ThreadExpr) -> Option<ElementType> {
    match env.type_of(value) {
        Ok(ThreadType::Scalar(element)) => Some(element),
        _ => None,
    }
}
