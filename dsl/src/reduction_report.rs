//! The reductions thread code calls, for the static analysis: what crosses lanes, warps or the
//! blocks of a cluster, in shuffle rounds and barriers — the part of a row kernel's time that
//! its memory accesses do not show.

use serde::Serialize;

use crate::{
    with_block_reduction_rounds, Intrinsic, Kernel, Statement, ThreadExprKind, ThreadStatement, ThreadStatementKind,
    TypeEnv,
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
        let report = ReductionReport::new(statement.to_string(), function.name(), ReductionScope::Block { threads });
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
