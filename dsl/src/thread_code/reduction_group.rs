//! Block reductions that share one round through shared memory.
//!
//! A block reduction (`block_sum`, `block_max`) takes each warp's butterfly, then a round
//! through shared memory with a barrier on each side, then a butterfly over the warps' results.
//! Where consecutive `let`s each reduce one value the same way and none reads another's result
//!
//! ```text
//! let mean = block_sum(s) / C as f32;
//! let mean_square = block_sum(q) / C as f32;
//! ```
//!
//! the values are reduced together: both butterflies, then one round for all of them — one pair
//! of barriers for the group where each reduction alone takes its own. A row kernel's barriers
//! are time its loads do not hide, so a norm that needs Σx and Σx² pays for one round, not two.

use super::*;

/// The most values one shared round reduces: each takes 32 slots of shared memory.
pub const MAX_REDUCED_TOGETHER: usize = 4;

/// Consecutive `let`s whose block reductions are made in one round (see the module).
///
/// ```
/// use tessera_dsl::{BlockReductionGroup, ElementType, Intrinsic, ThreadExpr, ThreadExprKind, ThreadStatement, ThreadStatementKind, TypeEnv, ThreadType};
/// let reduce = |name: &str, value: &str| ThreadStatement::new(ThreadStatementKind::Let {
///     name: name.into(), mutable: false, ty: None,
///     init: ThreadExpr::new(ThreadExprKind::Call { function: Intrinsic::BlockSum, args: vec![ThreadExpr::name(value)] }),
/// });
/// let (total, squares) = (reduce("total", "s"), reduce("squares", "q"));
/// let mut env = TypeEnv::default();
/// env.bind_value("s", ThreadType::F32, false);
/// env.bind_value("q", ThreadType::F32, false);
/// let group = BlockReductionGroup::starting(&[&total, &squares], &env).unwrap();
/// assert_eq!((group.function, group.element, group.calls.len()), (Intrinsic::BlockSum, ElementType::F32, 2));
/// assert_eq!(group.array_name(), "tessera_sums_of_total_squares");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockReductionGroup<'a> {
    /// `BlockSum` or `BlockMax`.
    pub function: Intrinsic,
    /// The reduced values' type (all the same).
    pub element: ElementType,
    /// The `let`s, in order; the round is made before the first.
    pub statements: Vec<&'a ThreadStatement>,
    /// Each statement's reduction, in the same order.
    pub calls: Vec<&'a ThreadExpr>,
}

impl<'a> BlockReductionGroup<'a> {
    /// The group that starts at `statements[0]`, if at least two of the statements from there on
    /// reduce together; `env` holds the names bound before the first.
    pub fn starting(statements: &[&'a ThreadStatement], env: &TypeEnv) -> Option<Self> {
        let mut env = env.clone();
        let first = *statements.first()?;
        let (function, element, call) = reduction_of(first, &env)?;
        let mut group = Self { function, element, statements: vec![first], calls: vec![call] };
        bind_let(first, &mut env);
        for statement in &statements[1..] {
            if group.calls.len() == MAX_REDUCED_TOGETHER {
                break;
            }
            let Some((function, element, call)) = reduction_of(statement, &env) else { break };
            // the round is made before the group's first `let`: a value that reads an earlier
            // member's result is not known then
            if function != group.function || element != group.element || group.is_read_by(call) {
                break;
            }
            group.statements.push(statement);
            group.calls.push(call);
            bind_let(statement, &mut env);
        }
        (group.calls.len() >= 2).then_some(group)
    }

    /// Whether `call`'s value reads a name one of the group's `let`s binds.
    fn is_read_by(&self, call: &ThreadExpr) -> bool {
        let mut reads = false;
        call.walk(&mut |e| {
            if let ThreadExprKind::Name(name) = &e.kind {
                reads |= self.statements.iter().any(|s| let_name(s) == Some(name.as_str()));
            }
        });
        reads
    }

    /// The register array the round reduces in place: `tessera_sums_of_mean_variance`.
    pub fn array_name(&self) -> String {
        let kind = if self.function == Intrinsic::BlockMax { "maxima" } else { "sums" };
        let names: Vec<&str> = self.statements.iter().filter_map(|s| let_name(s)).collect();
        format!("tessera_{kind}_of_{}", names.join("_"))
    }

    /// The values reduced, in order (each call's argument).
    pub fn values(&self) -> Vec<&'a ThreadExpr> {
        self.calls.iter().filter_map(|call| call_argument(call)).collect()
    }
}

/// `kernel` with each [`BlockReductionGroup`] of its thread code made in one round: the
/// group's values reduced by one [`ThreadStatementKind::BlockReductions`] before its first
/// `let`, and each `let` reading its element. Lists of statements are searched as they run one
/// after another — the top level's between tile statements (a barrier or a copy ends a run), the
/// bodies of loops and branches — so no reduction moves past anything but the `let`s before it
/// in its group. Rendering and the report both take the kernel through this, so they count the
/// same barriers; a kernel taken through it again is unchanged.
///
/// ```
/// use tessera_dsl::{with_block_reduction_rounds, ElementType, Intrinsic, Kernel, Origin, Statement, ThreadExpr, ThreadExprKind, ThreadStatement, ThreadStatementKind, ThreadType};
/// let reduce = |name: &str, value: &str| Statement::Thread(ThreadStatement::new(ThreadStatementKind::Let {
///     name: name.into(), mutable: false, ty: None,
///     init: ThreadExpr::new(ThreadExprKind::Call { function: Intrinsic::BlockSum, args: vec![ThreadExpr::name(value)] }),
/// }));
/// let s = Statement::Thread(ThreadStatement::new(ThreadStatementKind::Let {
///     name: "s".into(), mutable: false, ty: Some(ThreadType::F32), init: ThreadExpr::name("eps"),
/// }));
/// let mut kernel = Kernel { name: "k".into(), doc: None, params: vec![], body: vec![s, reduce("a", "s"), reduce("b", "s")], origin: Origin::default(), config: Default::default() };
/// kernel.params.push(tessera_dsl::Param { name: "eps".into(), kind: tessera_dsl::ParamKind::Scalar(ElementType::F32), origin: Origin::default() });
/// let lowered = with_block_reduction_rounds(&kernel);
/// let lines: Vec<String> = lowered.body.iter().map(|s| match s { Statement::Thread(t) => t.to_string(), _ => String::new() }).collect();
/// assert_eq!(lines[1..], ["let tessera_sums_of_a_b = [block_sum(s), block_sum(s)];", "let a = tessera_sums_of_a_b[0];", "let b = tessera_sums_of_a_b[1];"]);
/// assert_eq!(with_block_reduction_rounds(&lowered), lowered);
/// ```
pub fn with_block_reduction_rounds(kernel: &Kernel) -> Kernel {
    Kernel { body: lower_body(&kernel.body, &TypeEnv::of_kernel_body(kernel)), ..kernel.clone() }
}

/// `body` with its runs of thread statements lowered, and those of the loops in it.
fn lower_body(body: &[Statement], env: &TypeEnv) -> Vec<Statement> {
    let mut env = env.clone();
    let mut out = Vec::new();
    let mut index = 0;
    while index < body.len() {
        let statement = match &body[index] {
            Statement::Thread(_) => {
                // a run of thread statements: one list
                let end = body[index..]
                    .iter()
                    .position(|s| !matches!(s, Statement::Thread(_)))
                    .map_or(body.len(), |n| index + n);
                let run: Vec<&ThreadStatement> = body[index..end]
                    .iter()
                    .filter_map(|s| if let Statement::Thread(t) = s { Some(t) } else { None })
                    .collect();
                out.extend(lower_run(&run, &mut env).into_iter().map(Statement::Thread));
                index = end;
                continue;
            }
            Statement::GridStride(stride) => {
                Statement::GridStride(crate::GridStrideLoop { body: lower_body(&stride.body, &env), ..stride.clone() })
            }
            Statement::Pipeline(pipeline) => {
                Statement::Pipeline(crate::PipelineLoop { body: lower_body(&pipeline.body, &env), ..pipeline.clone() })
            }
            other => other.clone(),
        };
        out.push(statement);
        index += 1;
    }
    out
}

/// A list of statements that run one after another, its groups made in one round each.
fn lower_run(run: &[&ThreadStatement], env: &mut TypeEnv) -> Vec<ThreadStatement> {
    let mut out = Vec::new();
    let mut index = 0;
    while index < run.len() {
        let Some(group) = BlockReductionGroup::starting(&run[index..], env) else {
            out.push(lower_inner(run[index], env));
            bind_let(run[index], env);
            index += 1;
            continue;
        };
        let array = group.array_name();
        out.push(ThreadStatement {
            kind: ThreadStatementKind::BlockReductions {
                name: array.clone(),
                function: group.function,
                values: group.values().into_iter().cloned().collect(),
            },
            origin: group.statements[0].origin,
        });
        let binding =
            Binding::Registers { element: group.element, len: Some(group.calls.len() as i64), mutable: false };
        env.bind(&array, binding);
        for (position, (statement, call)) in group.statements.iter().zip(&group.calls).enumerate() {
            let ThreadStatementKind::Let { name, mutable, ty, init } = &statement.kind else { continue };
            let element = ThreadExpr {
                kind: ThreadExprKind::Index { base: array.clone(), indices: vec![ThreadExpr::int(position as i64)] },
                origin: call.origin,
            };
            let init = init.replaced(&|e| std::ptr::eq(e, *call).then(|| element.clone()));
            out.push(ThreadStatement {
                kind: ThreadStatementKind::Let { name: name.clone(), mutable: *mutable, ty: *ty, init },
                origin: statement.origin,
            });
            bind_let(statement, env);
        }
        index += group.statements.len();
    }
    out
}

/// `statement` with the lists inside it (an `if`'s branches, a loop's body) lowered.
fn lower_inner(statement: &ThreadStatement, env: &TypeEnv) -> ThreadStatement {
    let lowered = |body: &[ThreadStatement], env: &TypeEnv| {
        let run: Vec<&ThreadStatement> = body.iter().collect();
        lower_run(&run, &mut env.clone())
    };
    let kind = match &statement.kind {
        ThreadStatementKind::If { condition, then, otherwise } => ThreadStatementKind::If {
            condition: condition.clone(),
            then: lowered(then, env),
            otherwise: lowered(otherwise, env),
        },
        ThreadStatementKind::For { var, start, end, step, body } => {
            let mut inner = env.clone();
            inner.bind_value(var, ThreadType::I32, false);
            ThreadStatementKind::For {
                var: var.clone(),
                start: start.clone(),
                end: end.clone(),
                step: step.clone(),
                body: lowered(body, &inner),
            }
        }
        other => other.clone(),
    };
    ThreadStatement { kind, origin: statement.origin }
}

/// The block reduction `statement` makes, if it is a `let` whose value holds exactly one
/// collective, a `block_sum` or `block_max` of a number: (function, its type, the call).
fn reduction_of<'a>(statement: &'a ThreadStatement, env: &TypeEnv) -> Option<(Intrinsic, ElementType, &'a ThreadExpr)> {
    let ThreadStatementKind::Let { init, .. } = &statement.kind else { return None };
    let mut collectives = Vec::new();
    init.walk(&mut |e| {
        if e.warp_collective().is_some() {
            collectives.push(e);
        }
    });
    let [call] = collectives[..] else { return None };
    let ThreadExprKind::Call { function: function @ (Intrinsic::BlockSum | Intrinsic::BlockMax), args } = &call.kind
    else {
        return None;
    };
    match env.type_of(args.first()?) {
        Ok(ThreadType::Scalar(element)) => Some((*function, element, call)),
        _ => None,
    }
}

fn call_argument(call: &ThreadExpr) -> Option<&ThreadExpr> {
    match &call.kind {
        ThreadExprKind::Call { args, .. } => args.first(),
        _ => None,
    }
}

fn let_name(statement: &ThreadStatement) -> Option<&str> {
    match &statement.kind {
        ThreadStatementKind::Let { name, .. } | ThreadStatementKind::LetArray { name, .. } => Some(name),
        _ => None,
    }
}

/// Binds what `statement` declares, as the checks do.
fn bind_let(statement: &ThreadStatement, env: &mut TypeEnv) {
    match &statement.kind {
        ThreadStatementKind::Let { name, mutable, ty, init } => {
            let ty = ty.or_else(|| env.type_of(init).ok()).unwrap_or(ThreadType::F32);
            env.bind_value(name, ty, *mutable);
        }
        ThreadStatementKind::LetArray { name, mutable, len, init } => {
            if let Ok(ThreadType::Scalar(element)) = env.type_of(init) {
                let len = env.array_length(len).ok();
                env.bind(name, Binding::Registers { element, len, mutable: *mutable });
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Barrier, Origin, Param};

    fn call(function: Intrinsic, value: ThreadExpr) -> ThreadExpr {
        ThreadExpr::new(ThreadExprKind::Call { function, args: vec![value] })
    }

    fn let_(name: &str, init: ThreadExpr) -> ThreadStatement {
        ThreadStatement::new(ThreadStatementKind::Let { name: name.into(), mutable: false, ty: None, init })
    }

    fn sum_of(name: &str, value: &str) -> ThreadStatement {
        let_(name, call(Intrinsic::BlockSum, ThreadExpr::name(value)))
    }

    /// A kernel with f32 scalars `a`, `b`, `c`, `d`, `e` and `body`.
    fn kernel(body: Vec<Statement>) -> Kernel {
        let params = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|name| Param {
                name: (*name).into(),
                kind: crate::ParamKind::Scalar(ElementType::F32),
                origin: Origin::default(),
            })
            .collect();
        Kernel { name: "k".into(), doc: None, params, body, origin: Origin::default(), config: Default::default() }
    }

    fn lines(kernel: &Kernel) -> Vec<String> {
        let mut out = Vec::new();
        for statement in &with_block_reduction_rounds(kernel).body {
            match statement {
                Statement::Thread(thread) => thread.walk_statements(&mut |s| out.push(s.to_string())),
                _ => out.push("<tile statement>".into()),
            }
        }
        out
    }

    #[test]
    fn independent_block_sums_in_consecutive_lets_share_one_round() {
        let body = vec![Statement::Thread(sum_of("x", "a")), Statement::Thread(sum_of("y", "b"))];
        assert_eq!(
            lines(&kernel(body)),
            [
                "let tessera_sums_of_x_y = [block_sum(a), block_sum(b)];",
                "let x = tessera_sums_of_x_y[0];",
                "let y = tessera_sums_of_x_y[1];"
            ]
        );
    }

    #[test]
    fn a_reduction_of_an_earlier_result_keeps_its_own_round() {
        let centred = ThreadExpr::new(ThreadExprKind::Binary {
            op: ThreadOp::Sub,
            lhs: Box::new(ThreadExpr::name("b")),
            rhs: Box::new(ThreadExpr::name("x")),
        });
        let body =
            vec![Statement::Thread(sum_of("x", "a")), Statement::Thread(let_("y", call(Intrinsic::BlockSum, centred)))];
        assert_eq!(lines(&kernel(body)), ["let x = block_sum(a);", "let y = block_sum(b - x);"]);
    }

    #[test]
    fn sums_and_maxima_and_barriers_end_a_group() {
        let max = let_("m", call(Intrinsic::BlockMax, ThreadExpr::name("b")));
        let barrier = Statement::Sync(Barrier { reason: None, origin: Origin::default() });
        let body = vec![
            Statement::Thread(sum_of("x", "a")),
            Statement::Thread(max),
            barrier,
            Statement::Thread(sum_of("y", "c")),
        ];
        assert_eq!(
            lines(&kernel(body)),
            ["let x = block_sum(a);", "let m = block_max(b);", "<tile statement>", "let y = block_sum(c);"]
        );
    }

    #[test]
    fn a_round_takes_at_most_four_values() {
        let body: Vec<Statement> = [("v", "a"), ("w", "b"), ("x", "c"), ("y", "d"), ("z", "e"), ("u", "a")]
            .iter()
            .map(|(name, value)| Statement::Thread(sum_of(name, value)))
            .collect();
        let lines = lines(&kernel(body));
        assert_eq!(lines[0], "let tessera_sums_of_v_w_x_y = [block_sum(a), block_sum(b), block_sum(c), block_sum(d)];");
        assert_eq!(lines[5], "let tessera_sums_of_z_u = [block_sum(e), block_sum(a)];");
        assert_eq!(lines.len(), 8);
    }

    #[test]
    fn lets_inside_a_branch_share_a_round_too() {
        let branch = ThreadStatement::new(ThreadStatementKind::If {
            condition: ThreadExpr::new(ThreadExprKind::Bool(true)),
            then: vec![sum_of("x", "a"), sum_of("y", "b")],
            otherwise: vec![],
        });
        assert_eq!(
            lines(&kernel(vec![Statement::Thread(branch)])),
            [
                "if true { .. }",
                "let tessera_sums_of_x_y = [block_sum(a), block_sum(b)];",
                "let x = tessera_sums_of_x_y[0];",
                "let y = tessera_sums_of_x_y[1];"
            ]
        );
    }

    #[test]
    fn the_report_counts_one_pair_of_barriers_for_a_round() {
        let body = vec![Statement::Thread(sum_of("x", "a")), Statement::Thread(sum_of("y", "b"))];
        let mut kernel = kernel(body);
        kernel.config.threads = crate::ThreadBlock::linear(256);
        let reports = crate::reduction_report::reductions(&kernel);
        assert_eq!(reports.iter().map(|r| (r.reduced_together, r.barriers)).collect::<Vec<_>>(), [(2, 2)]);
    }
}
